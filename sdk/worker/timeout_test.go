package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// AlwaysTransient fails every try with a retryable error.
func AlwaysTransient(ctx context.Context) error { return errors.New("still down") }

// Silent runs until cancelled and never heartbeats.
func Silent(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// Chatty heartbeats while it works past several heartbeat timeouts.
func Chatty(ctx context.Context) (string, error) {
	for i := 0; i < 8; i++ {
		time.Sleep(time.Millisecond)
		activity.RecordHeartbeat(ctx, i)
	}
	return "done", nil
}

func Timeouts(ctx workflow.Context) (string, error) {
	var out []string
	sched := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ScheduleToCloseTimeout: 150 * time.Millisecond,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1}})
	var te *temporal.TimeoutError
	if err := workflow.ExecuteActivity(sched, AlwaysTransient).Get(ctx, nil); errors.As(err, &te) {
		out = append(out, string(te.TimeoutType()))
	}
	hb := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{HeartbeatTimeout: time.Second, // a thousand times the gap between Chatty's beats
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2}})
	if err := workflow.ExecuteActivity(hb, Silent).Get(ctx, nil); errors.As(err, &te) && strings.Contains(te.Message(), "no heartbeat within") {
		out = append(out, string(te.TimeoutType()))
	}
	var s string
	if err := workflow.ExecuteActivity(hb, Chatty).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join(append(out, s), " "), nil
}

// ScheduleToCloseTimeout ends the retries of an activity for good, and
// HeartbeatTimeout cancels a try that stops heartbeating but not one that
// keeps heartbeating.
func TestActivityTimeouts(t *testing.T) { forEachCache(t, testActivityTimeouts) }

func testActivityTimeouts(t *testing.T, cache int) {
	e := open(t)
	w := startWorker(t, e, "to", worker.Options{CacheSize: cache})
	w.RegisterWorkflow(Timeouts)
	w.RegisterActivity(AlwaysTransient)
	w.RegisterActivity(Silent)
	w.RegisterActivity(Chatty)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "to"}, Timeouts)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "ScheduleToClose Heartbeat done"; got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
	verify(t, e)
}
