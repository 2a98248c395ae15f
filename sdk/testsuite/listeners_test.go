package testsuite_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// trace collects what listeners report, from whichever goroutine.
type trace struct {
	mu    sync.Mutex
	lines []string
}

func (tr *trace) add(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.lines = append(tr.lines, fmt.Sprintf(format, args...))
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.lines)
}

// The activity listeners see each call's type and arguments before it
// runs and its result or error after, for real and mocked activities
// alike.
func TestActivityStartedAndCompletedListeners(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterActivity(Greet)
	env.RegisterActivity(Farewell)
	env.OnActivity(Farewell, mock.Anything, "ann").Return("", errors.New("gone"))
	var tr trace
	env.SetOnActivityStartedListener(func(info *activity.Info, ctx context.Context, args converter.EncodedValues) {
		var name string
		err := args.Get(&name)
		tr.add("started %s(%s) %v ctx=%t", info.ActivityType.Name, name, err, activity.IsActivity(ctx))
	}).SetOnActivityCompletedListener(func(info *activity.Info, result converter.EncodedValue, err error) {
		var out string
		if result.HasValue() {
			_ = result.Get(&out)
		}
		tr.add("completed %s %q %v", info.ActivityType.Name, out, err)
	})
	env.ExecuteWorkflow(func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
			RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}})
		if err := workflow.ExecuteActivity(ctx, Greet, "ann").Get(ctx, nil); err != nil {
			return err
		}
		return workflow.ExecuteActivity(ctx, Farewell, "ann").Get(ctx, nil)
	})
	if env.GetWorkflowError() == nil {
		t.Fatal("the workflow should fail with the mocked Farewell's error")
	}
	want := []string{
		"started Greet(ann) <nil> ctx=true",
		`completed Greet "hello ann" <nil>`,
		"started Farewell(ann) <nil> ctx=true",
		`completed Farewell "" gone`,
	}
	if got := tr.get(); !slices.Equal(got, want) {
		t.Fatalf("listeners saw\n%q\nwant\n%q", got, want)
	}
}

// Wait waits until its context ends.
func Wait(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// An activity the workflow cancels goes to the canceled listener, not the
// completed one.
func TestActivityCanceledListener(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(Wait)
	env.RegisterActivity(Notify)
	var tr trace
	env.SetOnActivityCanceledListener(func(info *activity.Info) { tr.add("canceled %s", info.ActivityType.Name) }).
		SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
			tr.add("completed %s %v", info.ActivityType.Name, err)
		})
	env.ExecuteWorkflow(func(ctx workflow.Context) error {
		actx, cancel := workflow.WithCancel(ctx)
		actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour,
			WaitForCancellation: true})
		f := workflow.ExecuteActivity(actx, Wait)
		// The clock stands still while an activity runs: another activity
		// ending is what moves the workflow on to cancel the first.
		if err := workflow.ExecuteActivity(actx, Notify, "go").Get(ctx, nil); err != nil {
			return err
		}
		cancel()
		err := f.Get(ctx, nil)
		if !temporalCanceled(err) {
			return fmt.Errorf("the activity's error is %v, want a cancellation", err)
		}
		return nil
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := tr.get(), []string{"completed Notify <nil>", "canceled Wait"}; !slices.Equal(got, want) {
		t.Fatalf("listeners saw %q, want %q", got, want)
	}
}

func temporalCanceled(err error) bool {
	var ce *temporal.CanceledError
	return errors.As(err, &ce) || errors.Is(err, workflow.ErrCanceled)
}

// Beat heartbeats "beat 1" to "beat n" and then fails when told to.
func Beat(ctx context.Context, n int, fail bool) error {
	for i := 1; i <= n; i++ {
		activity.RecordHeartbeat(ctx, fmt.Sprintf("beat %d", i))
	}
	if fail {
		return workflow.NewApplicationError("broken", "Broken", true)
	}
	return nil
}

// The heartbeat listener sees what Temporal's worker would send: the
// first heartbeat, none of those within its throttle interval, and the
// last held back when the activity fails.
func TestActivityHeartbeatListener(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
		want []string
	}{
		{"succeeds", false, []string{"Beat: beat 1"}},
		{"fails", true, []string{"Beat: beat 1", "Beat: beat 3"}},
	} {
		t.Run("activity env "+tc.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestActivityEnvironment()
			env.RegisterActivity(Beat)
			var tr trace
			env.SetOnActivityHeartbeatListener(func(info *activity.Info, details converter.EncodedValues) {
				var d string
				_ = details.Get(&d)
				tr.add("%s: %s", info.ActivityType.Name, d)
			})
			_, err := env.ExecuteActivity(Beat, 3, tc.fail)
			if (err != nil) != tc.fail {
				t.Fatalf("ExecuteActivity: %v", err)
			}
			if got := tr.get(); !slices.Equal(got, tc.want) {
				t.Fatalf("heartbeats %q, want %q", got, tc.want)
			}
		})
		t.Run("workflow env "+tc.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.RegisterActivity(Beat)
			var tr trace
			env.SetOnActivityHeartbeatListener(func(info *activity.Info, details converter.EncodedValues) {
				var d string
				_ = details.Get(&d)
				tr.add("%s: %s", info.ActivityType.Name, d)
			})
			env.ExecuteWorkflow(func(ctx workflow.Context) error {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
					HeartbeatTimeout: time.Minute, RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}})
				return workflow.ExecuteActivity(ctx, Beat, 3, tc.fail).Get(ctx, nil)
			})
			if err := env.GetWorkflowError(); (err != nil) != tc.fail {
				t.Fatalf("workflow error: %v", err)
			}
			if got := tr.get(); !slices.Equal(got, tc.want) {
				t.Fatalf("heartbeats %q, want %q", got, tc.want)
			}
		})
	}
}

// The timer listeners report each timer's duration when it is scheduled,
// and its firing or cancellation under the same id, once each although
// the workflow replays.
func TestTimerListeners(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	var tr trace
	scheduled := map[string]time.Duration{}
	env.SetOnTimerScheduledListener(func(id string, d time.Duration) {
		tr.add("scheduled %v", d)
		scheduled[id] = d
	}).SetOnTimerFiredListener(func(id string) {
		tr.add("fired %v", scheduled[id])
	}).SetOnTimerCanceledListener(func(id string) {
		tr.add("canceled %v", scheduled[id])
	})
	env.ExecuteWorkflow(func(ctx workflow.Context) error {
		if err := workflow.Sleep(ctx, time.Hour); err != nil {
			return err
		}
		tctx, cancel := workflow.WithCancel(ctx)
		long := workflow.NewTimer(tctx, 3*time.Hour)
		if err := workflow.Sleep(ctx, 90*time.Minute); err != nil {
			return err
		}
		cancel()
		if err := long.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
			return fmt.Errorf("the cancelled timer's error is %v", err)
		}
		return nil
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{"scheduled 1h0m0s", "fired 1h0m0s", "scheduled 3h0m0s", "scheduled 1h30m0s",
		"fired 1h30m0s", "canceled 3h0m0s"}
	if got := tr.get(); !slices.Equal(got, want) {
		t.Fatalf("timer listeners saw\n%q\nwant\n%q", got, want)
	}
	if len(scheduled) != 3 {
		t.Fatalf("timer ids %v: want three distinct ids", scheduled)
	}
	if got, want := env.Now(), start.Add(150*time.Minute); !got.Equal(want) {
		t.Fatalf("the clock reads %v, want %v", got, want)
	}
}
