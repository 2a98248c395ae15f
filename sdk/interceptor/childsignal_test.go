package interceptor_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Waiter returns the first "hey" signal it gets.
func Waiter(ctx workflow.Context) (string, error) {
	var s string
	workflow.GetSignalChannel(ctx, "hey").Receive(ctx, &s)
	return s, nil
}

// Signaller starts Waiter and signals it through its future.
func Signaller(ctx workflow.Context) (string, error) {
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "waiter-1"})
	child := workflow.ExecuteChildWorkflow(ctx, Waiter)
	if err := child.SignalChildWorkflow(ctx, "hey", "there").Get(ctx, nil); err != nil {
		return "", err
	}
	var s string
	err := child.Get(ctx, &s)
	return s, err
}

// TestSignalChildWorkflow: a signal sent through a child's future passes
// the outbound chain as SignalChildWorkflow, with the child's id.
func TestSignalChildWorkflow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	c := client.New(e)
	tr := newTracer()
	w := worker.New(c, "signaller", worker.Options{Interceptors: []interceptor.WorkerInterceptor{tr}})
	w.RegisterWorkflow(Signaller)
	w.RegisterWorkflow(Waiter)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "signaller"}, Signaller)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "there" {
		t.Fatalf("Signaller: %q, %v", got, err)
	}
	want := []string{
		"InterceptWorkflow",
		"in ExecuteWorkflow []",
		"out ExecuteChildWorkflow Waiter []",
		"out SignalChildWorkflow waiter-1 hey there",
		"in ExecuteWorkflow returned there <nil>",
	}
	if trace := tr.trace("Signaller", true); !slices.Equal(trace, want) {
		t.Errorf("Signaller's calls:\n%q\nwant:\n%q", trace, want)
	}
}
