package worker_test

// How activity failures are retried and reported: an application error's
// NextRetryDelay, and the benign category's quieter logging and metrics.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

var soonCalls, quietCalls, loudCalls atomic.Int32

// RetrySoon fails its first try asking for a retry in 50 ms; its policy
// alone would wait an hour.
func RetrySoon(ctx context.Context) (int32, error) {
	n := soonCalls.Add(1)
	if n == 1 {
		return 0, temporal.NewApplicationErrorWithOptions("busy", "Busy", temporal.ApplicationErrorOptions{NextRetryDelay: 50 * time.Millisecond})
	}
	return n, nil
}

// Quiet fails once with a benign error; Loud once with an ordinary one.
func Quiet(ctx context.Context) error {
	if quietCalls.Add(1) == 1 {
		return temporal.NewApplicationErrorWithOptions("nothing yet", "Empty", temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
	}
	return nil
}

func Loud(ctx context.Context) error {
	if loudCalls.Add(1) == 1 {
		return temporal.NewApplicationError("broken", "Broken")
	}
	return nil
}

func RetryFlow(ctx workflow.Context) (int32, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Hour, MaximumInterval: time.Hour}})
	var n int32
	if err := workflow.ExecuteActivity(ctx, RetrySoon).Get(ctx, &n); err != nil {
		return 0, err
	}
	quick := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond}})
	if err := workflow.ExecuteActivity(quick, Quiet).Get(ctx, nil); err != nil {
		return 0, err
	}
	return n, workflow.ExecuteActivity(quick, Loud).Get(ctx, nil)
}

// records keeps the worker's log records.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// failures returns the level and outcome of each "activity try failed"
// record of an activity type.
func (r *records) failures(activityType string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if rec.Message != "activity try failed" {
			continue
		}
		var typ, outcome string
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "activity_type":
				typ = a.Value.String()
			case "outcome":
				outcome = a.Value.String()
			}
			return true
		})
		if typ == activityType {
			out = append(out, rec.Level.String()+" "+outcome)
		}
	}
	return out
}

// NextRetryDelay replaces the policy's delay before the next try; a
// benign failure is logged at Debug, an ordinary one at Warn, as in
// Temporal.
func TestNextRetryDelayAndBenignFailures(t *testing.T) {
	soonCalls.Store(0)
	quietCalls.Store(0)
	loudCalls.Store(0)
	e := open(t)
	log := &records{}
	startWorker(t, e, "fail", worker.Options{Logger: slog.New(log)}, func(w worker.Worker) {
		w.RegisterWorkflow(RetryFlow)
		w.RegisterActivity(RetrySoon)
		w.RegisterActivity(Quiet)
		w.RegisterActivity(Loud)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "fail"}, RetryFlow)
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	if err := run.Get(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("RetrySoon succeeded on call %d, want 2", n)
	}
	for typ, want := range map[string][]string{"Quiet": {"DEBUG benign"}, "Loud": {"WARN failed"}, "RetrySoon": {"WARN failed"}} {
		if got := log.failures(typ); !slices.Equal(got, want) {
			t.Errorf("%s: logged %v, want %v", typ, got, want)
		}
	}
}

var hangToDeadlineCalls atomic.Int32

// HangToDeadline runs until its start-to-close timeout ends it.
func HangToDeadline(ctx context.Context) error {
	hangToDeadlineCalls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// FatalTimeoutFlow reports how a try that ran out of time under
// TimeoutFatal reached it.
func FatalTimeoutFlow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 100 * time.Millisecond, TimeoutFatal: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 5}})
	err := workflow.ExecuteActivity(ctx, HangToDeadline).Get(ctx, nil)
	var timeout *temporal.TimeoutError
	if !errors.As(err, &timeout) {
		return fmt.Sprintf("not a timeout: %v", err), nil
	}
	return fmt.Sprintf("timeout %s, timeout error %v", timeout.TimeoutType(), temporal.IsTimeoutError(err)), nil
}

// A step that TimeoutFatal failed for good reached
// workflow code as an ApplicationError, so temporal.IsTimeoutError was
// false for it. It is a timeout now, of the type that ran out, and still
// ends the step at its first try.
func TestTimeoutFatalIsATimeoutError(t *testing.T) {
	hangToDeadlineCalls.Store(0)
	e := open(t)
	startWorker(t, e, "fatal-timeout", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(FatalTimeoutFlow)
		w.RegisterActivity(HangToDeadline)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "fatal-timeout"}, FatalTimeoutFlow)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "timeout StartToClose, timeout error true"; got != want {
		t.Fatalf("the workflow saw %q, want %q", got, want)
	}
	if n := hangToDeadlineCalls.Load(); n != 1 {
		t.Fatalf("the activity ran %d times; a fatal timeout ends the step at once", n)
	}
}
