package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

var runsOfFailsTwice atomic.Int32

// FailsTwice fails its first two runs.
func FailsTwice(ctx workflow.Context, in string) (string, error) {
	if runsOfFailsTwice.Add(1) <= 2 {
		return "", errors.New("flaky dependency")
	}
	return "done with " + in, nil
}

// Forever sleeps far longer than any test.
func Forever(ctx workflow.Context) error { return workflow.Sleep(ctx, time.Hour) }

func TestWorkflowRetryPolicyAndExecutionTimeout(t *testing.T) { forEachCache(t, testWorkflowRetry) }

func testWorkflowRetry(t *testing.T, cache int) {
	runsOfFailsTwice.Store(0)
	e := open(t)
	w := startWorker(t, e, "wr", worker.Options{CacheSize: cache})
	w.RegisterWorkflow(FailsTwice)
	w.RegisterWorkflow(Forever)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "fails-twice", TaskQueue: "wr",
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 5}}, FailsTwice, "input")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "done with input" {
		t.Fatalf("Get = %q, %v; want the third run's result", got, err)
	}
	page, err := c.ListWorkflows(ctx, engine.ListQuery{Type: "FailsTwice", Order: engine.ListStartAsc})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, j := range page.Jobs {
		statuses = append(statuses, j.Status.String())
	}
	if strings.Join(statuses, " ") != "Failed Failed Completed" {
		t.Fatalf("runs %v, want two failed runs and a completed one", statuses)
	}
	// The execution timeout ends a run that would sleep for an hour.
	slow, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "forever", TaskQueue: "wr",
		WorkflowExecutionTimeout: 100 * time.Millisecond}, Forever)
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.Get(ctx, nil); err == nil || !strings.Contains(err.Error(), "execution timeout") {
		t.Fatalf("Get = %v, want an execution timeout", err)
	}
	verify(t, e)
}

var runsOfRefuses atomic.Int32

// Refuses fails with an error type its retry policy names as not
// retryable.
func Refuses(ctx workflow.Context) error {
	runsOfRefuses.Add(1)
	return workflow.NewApplicationError("the card was declined", "CardDeclined", false)
}

// A workflow retry policy keeps its non-retryable error types: a failure of
// such a type ends the workflow after one run.
func TestWorkflowRetryPolicyNonRetryableTypes(t *testing.T) {
	runsOfRefuses.Store(0)
	e := open(t)
	startWorker(t, e, "wr", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(Refuses) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "refuses", TaskQueue: "wr",
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{"CardDeclined"}}}, Refuses)
	if err != nil {
		t.Fatal(err)
	}
	var ae *workflow.ApplicationError
	if err := run.Get(ctx, nil); !errors.As(err, &ae) || ae.Type() != "CardDeclined" {
		t.Fatalf("Get = %v, want the CardDeclined failure", err)
	}
	if n := runsOfRefuses.Load(); n != 1 {
		t.Fatalf("%d runs, want 1: the failure type is not retryable", n)
	}
	verify(t, e)
}
