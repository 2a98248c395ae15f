package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

var flakyCalls atomic.Int32

// FlakyOnce fails its first try.
func FlakyOnce(ctx context.Context) (string, error) {
	if flakyCalls.Add(1) == 1 {
		return "", errors.New("transient")
	}
	return "ok", nil
}

// Permanent always fails, and says it is not worth retrying.
func Permanent(ctx context.Context) error {
	return workflow.NewApplicationError("card declined", "Declined", true)
}

func Retrier(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 50 * time.Millisecond, MaximumAttempts: 3}})
	var s string
	if err := workflow.ExecuteActivity(ctx, FlakyOnce).Get(ctx, &s); err != nil {
		return "", err
	}
	err := workflow.ExecuteActivity(ctx, Permanent).Get(ctx, nil)
	var ae *workflow.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() {
		return "", errors.New("Permanent did not fail for good")
	}
	return s + " " + ae.Message(), nil
}

// A retry delay longer than the inline threshold becomes a durable timer:
// the job waits instead of holding its lease, then the next try runs. A
// non-retryable failure is not retried.
func TestDurableRetryAndNonRetryable(t *testing.T) { forEachCache(t, testDurableRetryAndNonRetryable) }

func testDurableRetryAndNonRetryable(t *testing.T, cache int) {
	flakyCalls.Store(0)
	e := open(t)
	w := startWorker(t, e, "retry", worker.Options{CacheSize: cache, RetryInlineThreshold: time.Millisecond})
	w.RegisterWorkflow(Retrier)
	w.RegisterActivity(FlakyOnce)
	w.RegisterActivity(Permanent)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "retrier", TaskQueue: "retry"}, Retrier)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		dumpJobs(t, e)
		t.Fatal(err)
	}
	if got != "ok card declined" || flakyCalls.Load() != 2 {
		t.Fatalf("result %q after %d calls of FlakyOnce", got, flakyCalls.Load())
	}
	hist, err := c.GetWorkflowHistory(ctx, "retrier", "")
	if err != nil {
		t.Fatal(err)
	}
	var trace []string
	for _, ev := range hist {
		trace = append(trace, string(ev.Type))
	}
	joined := strings.Join(trace, " ")
	for _, want := range []string{"activity_attempt_failed job_waiting timer_fired wait_completed", "activity_completed", "activity_failed"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("history %q lacks %q", joined, want)
		}
	}
	if strings.Count(joined, "activity_attempt_failed") != 1 {
		t.Fatalf("history %q: the non-retryable failure was retried", joined)
	}
	verify(t, e)
}
