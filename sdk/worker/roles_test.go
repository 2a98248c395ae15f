package worker_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ChildThenEnd starts a child under the terminate policy, then ends when
// told to: its worker terminates the child still running.
func ChildThenEnd(ctx workflow.Context, key string) error {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: key + "-child", ParentClosePolicy: workflow.ParentCloseTerminate})
	workflow.ExecuteChildWorkflow(cctx, CleanupChild, key)
	workflow.GetSignalChannel(ctx, "end").Receive(ctx, nil)
	return nil
}

// A worker whose token has the worker role does all a workflow needs,
// starting children and, when the parent ends, terminating them as their
// policy says: the terminate carries the parent's lease, which is what
// lets a worker's token terminate at all. The application's client token
// cannot terminate.
func TestWorkerTokenClosesItsChildren(t *testing.T) {
	key := newProbe(t)
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	tokens := &httpapi.Tokens{}
	if err := errors.Join(tokens.Add("w1", httpapi.RoleWorker, "worker-token"), tokens.Add("app", httpapi.RoleClient, "client-token")); err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.ServerConfig{Service: e, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	as := func(token string) *httpapi.Client {
		c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{hs.URL}, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	startWorkerOn(t, as("worker-token"), "roles", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(ChildThenEnd)
		w.RegisterWorkflow(CleanupChild)
		w.RegisterActivity(Cleanup)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(as("client-token"))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "roles"}, ChildThenEnd, key)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ctx, c, key+"-child", engine.StatusWaiting)
	if err := c.TerminateWorkflow(ctx, key+"-child", "", "by the app"); !errors.Is(err, httpapi.ErrForbidden) {
		t.Fatalf("the client token's terminate: %v, want ErrForbidden", err)
	}
	if err := c.SignalWorkflow(ctx, key, "", "end", nil); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("the parent ended with %v", err)
	}
	waitStatus(t, ctx, c, key+"-child", engine.StatusTerminated)
	j, err := e.Describe(ctx, engine.Target{WorkflowID: key + "-child"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.History(ctx, j.ID, j.LastSeq-1, 1)
	if err != nil || len(h.Events) != 1 || h.Events[0].Type != engine.EventJobTerminated || h.Events[0].By != "w1" {
		t.Fatalf("the child's last event: %+v, %v; want job_terminated by w1", h.Events, err)
	}
	verify(t, e)
}
