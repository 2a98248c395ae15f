package testsuite_test

// heddle's worker suite (sdk/worker/*_test.go) ported to the test
// environment: the same workflows and the same expectations, with signals
// and cancellations sent from delayed callbacks instead of by a client,
// and blocking activities replaced by mocks that wait on the clock where
// the original test held them with a channel. Each runs with the workflow
// cache and without it (every turn replays the history).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// forEachCache runs a test with the workflow cache and without it.
func forEachCache(t *testing.T, test func(t *testing.T, env *testsuite.TestWorkflowEnvironment)) {
	for _, cache := range []int{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.SetStartTime(start)
			env.SetWorkerOptions(worker.Options{CacheSize: cache})
			test(t, env)
			env.AssertExpectations(t)
		})
	}
}

// result runs the checks every port makes of a completed run.
func result[T any](t *testing.T, env *testsuite.TestWorkflowEnvironment) T {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	var v T
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// calls counts activity executions within one test.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
	return c.n[name]
}

func (c *calls) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// --- worker_test.go: TestOrderWorkflowWithAndWithoutCache

// orderActivities are Reserve, Charge and Ship, counting their executions.
type orderActivities struct{ calls *calls }

func (a *orderActivities) Reserve(_ context.Context, item string) (string, error) {
	a.calls.add("Reserve")
	return "R-" + item, nil
}

func (a *orderActivities) Charge(ctx context.Context, amount int) (string, error) {
	if n := a.calls.add("Charge"); amount < 0 && n < 3 {
		return "", fmt.Errorf("card network timeout (try %d)", activity.GetInfo(ctx).Attempt)
	}
	return fmt.Sprintf("C-%d", amount), nil
}

func (a *orderActivities) Ship(_ context.Context, reservation string) (string, error) {
	a.calls.add("Ship")
	return "S-" + reservation, nil
}

// OrderWorkflow: three sequential activities, a side effect, a durable
// timer and a signal.
func OrderWorkflow(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 5 * time.Millisecond, MaximumAttempts: 5}})
	var a *orderActivities
	var r, c, s string
	if err := workflow.ExecuteActivity(ctx, a.Reserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	var token string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return "tok-" + item }).Get(&token); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 20*time.Millisecond); err != nil {
		return "", err
	}
	var approval string
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approval)
	if err := workflow.ExecuteActivity(ctx, a.Charge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, a.Ship, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %s %s %s", r, token, approval, c, s), nil
}

func TestPortOrderWorkflow(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		var n calls
		env.RegisterActivity(&orderActivities{calls: &n})
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("approve", "alice") }, time.Hour)
		env.ExecuteWorkflow(OrderWorkflow, "loom", -7)
		if got, want := result[string](t, env), "R-loom tok-loom alice C--7 S-R-loom"; got != want {
			t.Fatalf("result %q, want %q", got, want)
		}
		// Reserve and Ship once each; Charge failed twice then succeeded.
		if n.get("Reserve") != 1 || n.get("Charge") != 3 || n.get("Ship") != 1 {
			t.Fatalf("executions %v, want Reserve 1, Charge 3, Ship 1", n.n)
		}
		// The signal came an hour in; the retries took 5 ms each (in a
		// test environment MaximumInterval defaults to InitialInterval).
		if got, want := env.Now(), start.Add(time.Hour+10*time.Millisecond); !got.Equal(want) {
			t.Fatalf("the run ended at %v, want %v", got, want)
		}
	})
}

// --- worker_test.go: TestCancelRequestReachesWorkflow

func CancellableWorkflow(ctx workflow.Context) (string, error) {
	var v string
	s := workflow.NewSelector(ctx)
	s.AddReceive(workflow.GetSignalChannel(ctx, "never"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &v) })
	s.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	s.Select(ctx)
	if ctx.Err() != nil {
		return "", workflow.ErrCanceled
	}
	return v, nil
}

func TestPortCancelRequestReachesWorkflow(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(env.CancelWorkflow, 10*time.Minute)
		env.ExecuteWorkflow(CancellableWorkflow)
		if err := env.GetWorkflowError(); !errors.Is(err, workflow.ErrCanceled) {
			t.Fatalf("error %v, want ErrCanceled", err)
		}
	})
}

// --- query_test.go: TestQueryWorkflow

// Tally counts signals and answers queries about the count.
func Tally(ctx workflow.Context) (int, error) {
	count := 0
	if err := workflow.SetQueryHandler(ctx, "count", func(plus int) (int, error) { return count + plus, nil }); err != nil {
		return 0, err
	}
	ch := workflow.GetSignalChannel(ctx, "add")
	for count < 3 {
		var n int
		ch.Receive(ctx, &n)
		count += n
	}
	return count, nil
}

func TestPortQueryWorkflow(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		query := func(plus int) int {
			t.Helper()
			v, err := env.QueryWorkflow("count", plus)
			if err != nil {
				t.Fatal(err)
			}
			var got int
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			return got
		}
		var during int
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("add", 2) }, time.Second)
		env.RegisterDelayedCallback(func() {
			// The query replays the history: it sees the signal.
			during = query(10)
			if _, err := env.QueryWorkflow("nope"); !errors.Is(err, workflow.ErrUnknownQuery) {
				t.Errorf("unknown query: %v", err)
			}
			env.SignalWorkflow("add", 1)
		}, 2*time.Second)
		env.ExecuteWorkflow(Tally)
		if got := result[int](t, env); got != 3 || during != 12 {
			t.Fatalf("result %d, query during the run %d; want 3 and 12", got, during)
		}
		if got := query(0); got != 3 {
			t.Fatalf("query after the run = %d, want 3", got)
		}
	})
}

// --- signal_test.go: TestSignalsInEveryStatusDeliveredOnceInOrder

// Hold is held by the test (here: mocked to take an hour).
func Hold(context.Context) error { return nil }

// Collect receives six signals, holding an activity in between so that some
// arrive while the job is Running.
func Collect(ctx workflow.Context) (string, error) {
	ch := workflow.GetSignalChannel(ctx, "s")
	var got []string
	recv := func() {
		var v string
		ch.Receive(ctx, &v)
		got = append(got, v)
	}
	recv()
	recv()
	if err := workflow.ExecuteActivity(actCtx(ctx), Hold).Get(ctx, nil); err != nil {
		return "", err
	}
	for len(got) < 6 {
		recv()
	}
	return strings.Join(got, ","), nil
}

func TestPortSignalsInEveryStatusDeliveredOnceInOrder(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		// Queued: before the first turn.
		env.SignalWorkflow("s", "q1")
		env.SignalWorkflow("s", "q2")
		// Running: the turn holds the job while Hold takes its hour.
		env.OnActivity(Hold, mock.Anything).Return(nil).After(time.Hour).Once()
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow("s", "r1")
			env.SignalWorkflow("s", "r2")
		}, 30*time.Minute)
		// Waiting: after the activity, for the rest.
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow("s", "w1")
			env.SignalWorkflow("s", "w2")
		}, 2*time.Hour)
		env.ExecuteWorkflow(Collect)
		if got, want := result[string](t, env), "q1,q2,r1,r2,w1,w2"; got != want {
			t.Fatalf("received %q, want %q", got, want)
		}
	})
}

// --- child_test.go: TestChildWorkflowsRemoteActivitiesAndContinueAsNew

func Double(_ context.Context, n int) (int, error) { return 2 * n, nil }

// ChildDoubler doubles n on the "remote" queue.
func ChildDoubler(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "remote"})
	var out int
	err := workflow.ExecuteActivity(ctx, Double, n).Get(ctx, &out)
	return out, err
}

// Counter continues as new until it reaches limit.
func Counter(ctx workflow.Context, n, limit int) (int, error) {
	if n < limit {
		return 0, workflow.NewContinueAsNewError(ctx, Counter, n+1, limit)
	}
	return n, nil
}

func Failing(workflow.Context) error { return errors.New("child gives up") }

// Family runs two children in parallel, a continue-as-new chain and a
// failing child.
func Family(ctx workflow.Context) (string, error) {
	a := workflow.ExecuteChildWorkflow(ctx, ChildDoubler, 20)
	b := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "counter"}), Counter, 0, 3)
	var x, y int
	if err := a.Get(ctx, &x); err != nil {
		return "", err
	}
	if err := b.Get(ctx, &y); err != nil {
		return "", err
	}
	var cwe *workflow.ChildWorkflowError
	err := workflow.ExecuteChildWorkflow(ctx, Failing).Get(ctx, nil)
	if !errors.As(err, &cwe) {
		return "", fmt.Errorf("failing child returned %v", err)
	}
	var app *workflow.ApplicationError
	if !errors.As(err, &app) {
		return "", fmt.Errorf("failing child's cause is %T", errors.Unwrap(cwe))
	}
	return fmt.Sprintf("%d %d %s", x, y, app.Message()), nil
}

func TestPortChildWorkflowsRemoteActivitiesAndContinueAsNew(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		env.RegisterWorkflow(ChildDoubler)
		env.RegisterWorkflow(Counter)
		env.RegisterWorkflow(Failing)
		env.RegisterActivity(Double)
		env.ExecuteWorkflow(Family)
		if got, want := result[string](t, env), "40 3 child gives up"; got != want {
			t.Fatalf("result %q, want %q", got, want)
		}
		// A child's continue-as-new chain is followed to its last run.
		var last int
		if err := env.GetWorkflowResultByID("counter", &last); err != nil || last != 3 {
			t.Fatalf("the counter chain ended with %d, %v; want 3", last, err)
		}
	})
}

// --- cancel_test.go: TestCancellationReachesActivitiesAndChildren

// Sleeper is a child that waits for a signal that never comes.
func Sleeper(ctx workflow.Context) error {
	workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
	return nil
}

// Supervisor starts a child, then runs a long activity; a cancel request
// reaches both.
func Supervisor(ctx workflow.Context) error {
	_ = workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "sleeper"}), Sleeper)
	err := workflow.ExecuteActivity(actCtx(ctx), "LongRunning").Get(ctx, nil)
	if ctx.Err() != nil {
		return workflow.ErrCanceled
	}
	return err
}

func TestPortCancellationReachesActivitiesAndChildren(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
		env.RegisterWorkflow(Sleeper)
		env.RegisterActivityWithOptions(func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			cancelled <- struct{}{}
			return ctx.Err()
		}, activity.RegisterOptions{Name: "LongRunning"})
		// The activity runs real code, so the callback falls due in real
		// time.
		env.RegisterDelayedCallback(func() {
			<-started
			env.CancelWorkflow()
		}, 20*time.Millisecond)
		env.ExecuteWorkflow(Supervisor)
		if err := env.GetWorkflowError(); !errors.Is(err, workflow.ErrCanceled) {
			t.Fatalf("error %v, want ErrCanceled", err)
		}
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the running activity's context was not cancelled")
		}
		// The child ended by the parent-close policy Terminate.
		if err := env.GetWorkflowErrorByID("sleeper"); err == nil || !strings.Contains(err.Error(), "terminated") {
			t.Fatalf("the child ended with %v, want terminated", err)
		}
	})
}

// --- retry_test.go: TestDurableRetryAndNonRetryable

// Retrier runs an activity that fails once, then one that fails for good.
func Retrier(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 50 * time.Millisecond, MaximumAttempts: 3}})
	var s string
	if err := workflow.ExecuteActivity(ctx, "FlakyOnce").Get(ctx, &s); err != nil {
		return "", err
	}
	err := workflow.ExecuteActivity(ctx, "Permanent").Get(ctx, nil)
	var ae *workflow.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() {
		return "", errors.New("Permanent did not fail for good")
	}
	return s + " " + ae.Message(), nil
}

func TestPortDurableRetryAndNonRetryable(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		var n calls
		env.RegisterActivityWithOptions(func(context.Context) (string, error) {
			if n.add("FlakyOnce") == 1 {
				return "", errors.New("transient")
			}
			return "ok", nil
		}, activity.RegisterOptions{Name: "FlakyOnce"})
		env.RegisterActivityWithOptions(func(context.Context) error {
			n.add("Permanent")
			return workflow.NewApplicationError("card declined", "Declined", true)
		}, activity.RegisterOptions{Name: "Permanent"})
		env.ExecuteWorkflow(Retrier)
		if got := result[string](t, env); got != "ok card declined" || n.get("FlakyOnce") != 2 || n.get("Permanent") != 1 {
			t.Fatalf("result %q after %v calls", got, n.n)
		}
		// The retry waited its 50 ms on the durable timer.
		if got := env.Now(); !got.Equal(start.Add(50 * time.Millisecond)) {
			t.Fatalf("the run ended at %v, want 50 ms in", got)
		}
	})
}

// --- workflowretry_test.go: TestWorkflowRetryPolicyAndExecutionTimeout,
// TestWorkflowRetryPolicyNonRetryableTypes

func TestPortWorkflowRetryPolicy(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		var runs atomic.Int32
		env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in string) (string, error) {
			if runs.Add(1) <= 2 {
				return "", errors.New("flaky dependency")
			}
			return "done with " + in, nil
		}, workflow.RegisterOptions{Name: "FailsTwice"})
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{
			RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 5}})
		env.ExecuteWorkflow("FailsTwice", "input")
		if got := result[string](t, env); got != "done with input" || runs.Load() != 3 {
			t.Fatalf("result %q after %d runs, want the third run's result", got, runs.Load())
		}
	})
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{WorkflowExecutionTimeout: 100 * time.Millisecond})
		env.ExecuteWorkflow(func(ctx workflow.Context) error { return workflow.Sleep(ctx, time.Hour) })
		if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "execution timeout") {
			t.Fatalf("error %v, want an execution timeout", err)
		}
	})
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		var runs atomic.Int32
		env.RegisterWorkflowWithOptions(func(workflow.Context) error {
			runs.Add(1)
			return workflow.NewApplicationError("the card was declined", "CardDeclined", false)
		}, workflow.RegisterOptions{Name: "Refuses"})
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond,
			MaximumAttempts: 5, NonRetryableErrorTypes: []string{"CardDeclined"}}})
		env.ExecuteWorkflow("Refuses")
		var ae *workflow.ApplicationError
		if err := env.GetWorkflowError(); !errors.As(err, &ae) || ae.Type() != "CardDeclined" || runs.Load() != 1 {
			t.Fatalf("error %v after %d runs, want the CardDeclined failure of one run", err, runs.Load())
		}
	})
}

// --- heartbeat_test.go: TestHeartbeatDetailsCarryToTheNextTry

// Resumable processes items 0..4 and fails once at item 3; the retry picks
// up from the progress its first try recorded with RecordHeartbeat.
func Resumable(ctx context.Context) (string, error) {
	first := 0
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &first); err != nil {
			return "", err
		}
	}
	done := ""
	for i := first; i < 5; i++ {
		if i == 3 && first == 0 {
			return "", errors.New("interrupted at item 3")
		}
		done += string(rune('0' + i))
		activity.RecordHeartbeat(ctx, i+1)
	}
	return done, nil
}

func TestPortHeartbeatDetailsCarryToTheNextTry(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		env.RegisterActivity(Resumable)
		env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
			ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2}})
			var s string
			err := workflow.ExecuteActivity(ctx, Resumable).Get(ctx, &s)
			return s, err
		})
		if got := result[string](t, env); got != "34" {
			t.Fatalf("the retry processed %q, want only items 3 and 4", got)
		}
	})
}

// --- timeout_test.go: TestActivityTimeouts

func Timeouts(ctx workflow.Context) (string, error) {
	var out []string
	sched := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ScheduleToCloseTimeout: 150 * time.Millisecond,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 100}})
	var te *temporal.TimeoutError
	if err := workflow.ExecuteActivity(sched, "AlwaysTransient").Get(ctx, nil); errors.As(err, &te) {
		out = append(out, temporal.ErrorType(te))
	}
	hb := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{HeartbeatTimeout: 200 * time.Millisecond,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2}})
	if err := workflow.ExecuteActivity(hb, "Silent").Get(ctx, nil); errors.As(err, &te) && strings.Contains(te.Message(), "no heartbeat within") {
		out = append(out, "heartbeat-timeout")
	}
	var s string
	if err := workflow.ExecuteActivity(hb, "Chatty").Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join(append(out, s), " "), nil
}

// The schedule-to-close timeout runs out in workflow time, over retries
// whose delays the clock skips; the heartbeat timeout of a try that runs
// code passes in real time.
func TestPortActivityTimeouts(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		var n calls
		env.RegisterActivityWithOptions(func(context.Context) error { n.add("AlwaysTransient"); return errors.New("still down") },
			activity.RegisterOptions{Name: "AlwaysTransient"})
		env.RegisterActivityWithOptions(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			activity.RegisterOptions{Name: "Silent"})
		env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
			for range 8 {
				time.Sleep(time.Millisecond)
				activity.RecordHeartbeat(ctx)
				if err := ctx.Err(); err != nil {
					return "", err
				}
			}
			return "done", nil
		}, activity.RegisterOptions{Name: "Chatty"})
		env.ExecuteWorkflow(Timeouts)
		if got, want := result[string](t, env), "TimeoutError heartbeat-timeout done"; got != want {
			t.Fatalf("result %q, want %q", got, want)
		}
		// Tries every 10 ms until 150 ms had passed: fifteen of them.
		if got := n.get("AlwaysTransient"); got != 15 {
			t.Fatalf("AlwaysTransient ran %d times, want 15", got)
		}
	})
}

// --- live_test.go: the workflow stays live while its activities run

// blocker is Blocker of the live tests: it runs until its context is
// cancelled or it is released, and tells the test which.
type blocker struct {
	started, cancelled chan struct{}
	release            chan struct{}
	// onCancel, if set, runs when the activity sees its cancellation
	// (the original tests signal the workflow from there).
	onCancel func()
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), release: make(chan struct{})}
}

func (b *blocker) Blocker(ctx context.Context) (string, error) {
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.cancelled <- struct{}{}
		if b.onCancel != nil {
			b.onCancel()
		}
		return "", ctx.Err()
	case <-b.release:
		return "released", nil
	}
}

func (b *blocker) Quick(context.Context) (string, error) { return "quick", nil }

func liveOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}}
}

// RaceTimer selects over a blocked activity and a 100 ms timer: the timer
// wins, and the losing activity is cancelled.
func RaceTimer(ctx workflow.Context) (string, error) {
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, liveOptions()))
	var b *blocker
	act := workflow.ExecuteActivity(actCtx, b.Blocker)
	winner := ""
	s := workflow.NewSelector(ctx)
	s.AddFuture(workflow.NewTimer(ctx, 100*time.Millisecond), func(workflow.Future) { winner = "timer" })
	s.AddFuture(act, func(workflow.Future) { winner = "activity" })
	s.Select(ctx)
	cancel()
	return winner, nil
}

func TestPortTimerFiresWhileActivityRuns(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		b := newBlocker()
		env.RegisterActivity(b)
		env.ExecuteWorkflow(RaceTimer)
		if got := result[string](t, env); got != "timer" {
			t.Fatalf("the selector chose %q, want the timer", got)
		}
		<-b.cancelled // the losing activity was cancelled (at the latest when the run closed)
		// The timer fell due in real time while the activity ran: 100 ms.
		if got := env.Now(); !got.Equal(start.Add(100 * time.Millisecond)) {
			t.Fatalf("the run ended at %v, want 100 ms in", got)
		}
	})
}

// The same race against a mocked activity that takes two hours: the clock
// skips to the timer.
func TestPortTimerFiresWhileMockedActivityWaits(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		var b *blocker
		env.OnActivity(b.Blocker, mock.Anything).Return("late", nil).After(2 * time.Hour)
		began := time.Now()
		env.ExecuteWorkflow(RaceTimer)
		if got := result[string](t, env); got != "timer" {
			t.Fatalf("the selector chose %q, want the timer", got)
		}
		if wall := time.Since(began); wall > 2*time.Second {
			t.Fatalf("took %v of real time", wall)
		}
	})
}

// CancelSoon starts an activity, sleeps 1 ms and cancels it: the future
// fails as cancelled at once, and the activity sees its context cancelled.
func CancelSoon(ctx workflow.Context) (string, error) {
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, liveOptions()))
	var b *blocker
	act := workflow.ExecuteActivity(actCtx, b.Blocker)
	if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
		return "", err
	}
	cancel()
	if err := act.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("the cancelled activity's future gave %v, want ErrCanceled", err)
	}
	// Signalled once the activity saw its cancellation.
	workflow.GetSignalChannel(ctx, "seen").Receive(ctx, nil)
	return "cancelled", nil
}

func TestPortShortSleepAfterActivityFires(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		b := newBlocker()
		b.onCancel = func() { env.SignalWorkflow("seen", nil) }
		env.RegisterActivity(b)
		env.ExecuteWorkflow(CancelSoon)
		if got := result[string](t, env); got != "cancelled" {
			t.Fatalf("result %q", got)
		}
	})
}

// WaitCancel cancels an activity with WaitForCancellation: the future waits
// for the activity to return and reports its cancellation.
func WaitCancel(ctx workflow.Context) (string, error) {
	opts := liveOptions()
	opts.WaitForCancellation = true
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
	var b *blocker
	act := workflow.ExecuteActivity(actCtx, b.Blocker)
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	cancel()
	err := act.Get(ctx, nil)
	var ce *temporal.CanceledError
	if !errors.As(err, new(*workflow.ActivityError)) || !errors.As(err, &ce) || !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("the cancelled activity's future gave %v, want its cancellation", err)
	}
	return temporal.ErrorType(ce), nil
}

func TestPortWaitForCancellation(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		b := newBlocker()
		env.RegisterActivity(b)
		env.RegisterDelayedCallback(func() {
			<-b.started
			env.SignalWorkflow("go", nil)
		}, time.Millisecond)
		env.ExecuteWorkflow(WaitCancel)
		if got := result[string](t, env); got != "CanceledError" {
			t.Fatalf("result %q, want CanceledError", got)
		}
	})
}

// PickFirst runs two activities under one cancellable context, takes the
// first result and cancels the other.
func PickFirst(ctx workflow.Context) (string, error) {
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, liveOptions()))
	var b *blocker
	var first string
	s := workflow.NewSelector(ctx)
	for _, act := range []any{b.Blocker, b.Quick} {
		f := workflow.ExecuteActivity(actCtx, act)
		s.AddFuture(f, func(f workflow.Future) { _ = f.Get(ctx, &first) })
	}
	s.Select(ctx)
	cancel()
	workflow.GetSignalChannel(ctx, "loser-cancelled").Receive(ctx, nil)
	return first, nil
}

func TestPortPickFirstCancelsTheLoser(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		b := newBlocker()
		b.onCancel = func() { env.SignalWorkflow("loser-cancelled", nil) }
		env.RegisterActivity(b)
		env.ExecuteWorkflow(PickFirst)
		if got := result[string](t, env); got != "quick" {
			t.Fatalf("result %q, want quick", got)
		}
	})
}

// CancelTimer starts a long timer, cancels it, then waits for a signal
// while a second timer runs, and cancels that one when the signal comes.
func CancelTimer(ctx workflow.Context) (string, error) {
	tctx, cancel := workflow.WithCancel(ctx)
	t1 := workflow.NewTimer(tctx, time.Hour)
	cancel()
	if err := t1.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("the cancelled timer's future: %v", err)
	}
	got := false
	ok, err := workflow.AwaitWithTimeout(ctx, time.Hour, func() bool {
		got = got || workflow.GetSignalChannel(ctx, "go").ReceiveAsync(nil)
		return got
	})
	if err != nil || !ok {
		return "", fmt.Errorf("AwaitWithTimeout = %v, %v", ok, err)
	}
	workflow.GetSignalChannel(ctx, "end").Receive(ctx, nil)
	return "done", nil
}

// Cancelled timers never fire: the clock never skips to them.
func TestPortTimerCanceledIsRecorded(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("go", nil) }, time.Minute)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("end", nil) }, 2*time.Hour)
		env.ExecuteWorkflow(CancelTimer)
		if got := result[string](t, env); got != "done" {
			t.Fatalf("result %q", got)
		}
		// Had the second timer been left pending, the clock would have
		// skipped to it (61 minutes in) on the way to the "end" signal;
		// the workflow would not tell, but the run's end would.
		if got := env.Now(); !got.Equal(start.Add(2 * time.Hour)) {
			t.Fatalf("the run ended at %v, want 2 h in", got)
		}
	})
}

// CleanupChild waits for a signal; when cancelled it runs a clean-up
// activity on a disconnected context, then ends cancelled.
func CleanupChild(ctx workflow.Context) error {
	s := workflow.NewSelector(ctx)
	s.AddReceive(workflow.GetSignalChannel(ctx, "go"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	s.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	s.Select(ctx)
	if ctx.Err() == nil {
		return nil
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, liveOptions()), "Cleanup").Get(dctx, nil); err != nil {
		return err
	}
	return workflow.ErrCanceled
}

// CancelChild starts a child and cancels it by its context, before it
// started, or by ending under the request-cancel policy.
func CancelChild(ctx workflow.Context, mode string) (string, error) {
	policy := workflow.ParentCloseTerminate
	if mode == "parent-close" {
		policy = workflow.ParentCloseRequestCancel
	}
	cctx, cancel := workflow.WithCancel(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: "child", ParentClosePolicy: policy}))
	f := workflow.ExecuteChildWorkflow(cctx, CleanupChild)
	switch mode {
	case "before-start":
		cancel()
		err := f.Get(ctx, nil)
		var ae *workflow.ApplicationError
		switch {
		case errors.As(err, &ae):
			return ae.Type(), nil
		case errors.Is(err, workflow.ErrCanceled):
			return "CanceledError", nil
		}
		return "", fmt.Errorf("the child cancelled before it started gave %v", err)
	case "parent-close":
		workflow.GetSignalChannel(ctx, "child-started").Receive(ctx, nil)
		return "closing", nil
	}
	workflow.GetSignalChannel(ctx, "child-started").Receive(ctx, nil)
	cancel()
	if err := f.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("the cancelled child's future: %v, want ErrCanceled", err)
	}
	workflow.GetSignalChannel(ctx, "child-done").Receive(ctx, nil)
	return "cancelled", nil
}

func TestPortChildCancellation(t *testing.T) {
	for _, mode := range []string{"context", "before-start"} {
		t.Run(mode, func(t *testing.T) {
			forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
				cleaned := make(chan struct{}, 1)
				env.RegisterWorkflow(CleanupChild)
				env.RegisterActivityWithOptions(func(context.Context) error { cleaned <- struct{}{}; return nil },
					activity.RegisterOptions{Name: "Cleanup"})
				env.RegisterDelayedCallback(func() { env.SignalWorkflow("child-started", nil) }, time.Minute)
				env.RegisterDelayedCallback(func() { env.SignalWorkflow("child-done", nil) }, time.Hour)
				env.ExecuteWorkflow(CancelChild, mode)
				if mode == "before-start" {
					if got := result[string](t, env); got != "CanceledError" {
						t.Fatalf("result %q, want the child's future to fail as cancelled", got)
					}
					if err := env.GetWorkflowErrorByID("child"); !errors.Is(err, testsuite.ErrUnknownWorkflow) {
						t.Fatalf("the child cancelled before it started exists: %v", err)
					}
					return
				}
				if got := result[string](t, env); got != "cancelled" {
					t.Fatalf("result %q", got)
				}
				<-cleaned
				if err := env.GetWorkflowErrorByID("child"); !errors.Is(err, workflow.ErrCanceled) {
					t.Fatalf("the child ended with %v, want cancelled by its own code", err)
				}
			})
		})
	}
}

// RemoteRetries runs a flaky activity on another task queue with durable
// retry delays.
func RemoteRetries(ctx workflow.Context) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "live-remote", StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 50 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 5}})
	var tries int
	err := workflow.ExecuteActivity(ctx, "RemoteFlaky").Get(ctx, &tries)
	return tries, err
}

func TestPortRemoteActivityDurableRetries(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		var n calls
		env.RegisterActivityWithOptions(func(context.Context) (int, error) {
			if k := n.add("RemoteFlaky"); k < 3 {
				return 0, errors.New("not yet")
			} else {
				return k, nil
			}
		}, activity.RegisterOptions{Name: "RemoteFlaky"})
		env.ExecuteWorkflow(RemoteRetries)
		if got := result[int](t, env); got != 3 {
			t.Fatalf("result %d, want success on the third try", got)
		}
		if got := env.Now(); !got.Equal(start.Add(100 * time.Millisecond)) {
			t.Fatalf("the run ended at %v, want two 50 ms delays in", got)
		}
	})
}
