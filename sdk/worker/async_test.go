package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// tokens receives the task token of each AwaitApproval attempt.
var tokens = make(chan []byte, 8)

// AwaitApproval hands its token to someone else and leaves the result to them.
func AwaitApproval(ctx context.Context, what string) (string, error) {
	tokens <- activity.GetInfo(ctx).TaskToken
	return "", activity.ErrResultPending
}

// Approval runs AwaitApproval on queue; "" runs it inside the workflow's worker.
func Approval(ctx workflow.Context, queue, what string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: queue, StartToCloseTimeout: time.Minute})
	var got string
	err := workflow.ExecuteActivity(ctx, AwaitApproval, what).Get(ctx, &got)
	return "approval of " + what + ": " + got, err
}

// ApprovalBeating is Approval with a heartbeat timeout, which gives the
// activity a step lease of its own (the engine's step path).
func ApprovalBeating(ctx workflow.Context, what string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 20 * time.Second})
	var got string
	err := workflow.ExecuteActivity(ctx, AwaitApproval, what).Get(ctx, &got)
	return "approval of " + what + ": " + got, err
}

// TestAsyncActivityCompletionLikeTemporal: an activity returns
// ErrResultPending, and a client completes it by its task token, or by id,
// or fails it; a stale token is refused.
func TestAsyncActivityCompletionLikeTemporal(t *testing.T) {
	tokens = make(chan []byte, 8)
	e := open(t)
	startWorker(t, e, "async-wf", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(Approval)
		w.RegisterWorkflow(ApprovalBeating)
		w.RegisterActivity(AwaitApproval)
	})
	startWorker(t, e, "async-acts", worker.Options{}, func(w worker.Worker) { w.RegisterActivity(AwaitApproval) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := func() []byte {
		t.Helper()
		select {
		case tok := <-tokens:
			if len(tok) == 0 {
				t.Fatal("the activity task has no token")
			}
			return tok
		case <-ctx.Done():
			t.Fatal("no activity ran")
			return nil
		}
	}

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approve-1", TaskQueue: "async-wf"}, Approval, "async-acts", "leave")
	if err != nil {
		t.Fatal(err)
	}
	tok := next()
	// A token made from the task's attempt, which anyone may read, is
	// refused: the real one carries the lease's token.
	var fields map[string]any
	if err := json.Unmarshal(tok, &fields); err != nil || fields["lease_token"] == nil {
		t.Fatalf("task token %s (%v) carries no lease token", tok, err)
	}
	delete(fields, "lease_token")
	forged, _ := json.Marshal(fields)
	if err := c.CompleteActivity(ctx, forged, "forged", nil); !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("a task token without the lease token: %v, want ErrStaleAttempt", err)
	}
	// The task waits with no lease until completed.
	if err := c.CompleteActivity(ctx, tok, "granted", nil); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "approval of leave: granted" {
		t.Fatalf("result %q, %v", got, err)
	}
	if err := c.CompleteActivity(ctx, tok, "again", nil); !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("a second completion with the same token: %v", err)
	}
	if err := c.CompleteActivity(ctx, []byte("nonsense"), nil, nil); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a malformed token: %v", err)
	}

	// By id, as a failure: the workflow sees the activity's error.
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approve-2", TaskQueue: "async-wf"}, Approval, "async-acts", "budget")
	if err != nil {
		t.Fatal(err)
	}
	next()
	var tail []engine.Event
	for len(tail) == 0 || tail[len(tail)-1].Type != engine.EventJobWaiting {
		time.Sleep(20 * time.Millisecond)
		if tail, err = c.GetWorkflowHistory(ctx, "approve-2/"+run.GetRunID()+"/1", ""); err != nil && !errors.Is(err, engine.ErrUnknownJob) {
			t.Fatal(err)
		}
	}
	if err := c.CompleteActivityByID(ctx, "", "approve-2", "", "1", nil, errors.New("over budget")); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &got); err == nil || !strings.Contains(err.Error(), "over budget") {
		t.Fatalf("a failed completion: %v", err)
	}

	// Inside the workflow's worker nobody could complete it: it fails, saying so.
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approve-3", TaskQueue: "async-wf"}, Approval, "", "inline")
	if err != nil {
		t.Fatal(err)
	}
	if tok := <-tokens; tok != nil {
		t.Fatalf("an inline activity got a task token %q", tok)
	}
	if err := run.Get(ctx, &got); err == nil || !strings.Contains(err.Error(), "ErrResultPending") {
		t.Fatalf("an inline pending activity: %v", err)
	}
	// So it does, at its first try, with a heartbeat timeout, which gives
	// it a step lease (found by a probe: it was retried for as long as its
	// policy allowed, for ever by default).
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approve-4", TaskQueue: "async-wf"}, ApprovalBeating, "beating")
	if err != nil {
		t.Fatal(err)
	}
	if tok := <-tokens; tok != nil {
		t.Fatalf("an inline activity with a step lease got a task token %q", tok)
	}
	if err := run.Get(ctx, &got); err == nil || !strings.Contains(err.Error(), "ErrResultPending") {
		t.Fatalf("an inline pending activity with a heartbeat timeout: %v", err)
	}
	select {
	case tok := <-tokens:
		t.Fatalf("the activity was tried again (token %q)", tok)
	default:
	}
}
