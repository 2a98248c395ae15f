package worker_test

// The workflow stays live while its activities run: timers fire, contexts
// cancel activities, children and timers with Temporal's semantics. Every
// test here runs with the workflow cache on and off, and in CI again over
// HTTP and against a three-node cluster (HEDDLE_SDK_BACKEND).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// probe is how a test hears from its activities: each is told a key (the
// test's own), and reports on that key's channels.
type probe struct {
	started   chan struct{}
	cancelled chan struct{}
	release   chan struct{} // closed by the test to let a Blocker return
}

var probes sync.Map // key -> *probe

func newProbe(t *testing.T) string {
	key := strings.ReplaceAll(t.Name(), "/", "-")
	probes.Store(key, &probe{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), release: make(chan struct{})})
	t.Cleanup(func() { probes.Delete(key) })
	return key
}

func probeOf(key string) *probe {
	p, _ := probes.Load(key)
	return p.(*probe)
}

// await fails the test unless ch delivers before ctx ends.
func await(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("%s: did not happen", what)
	}
}

// Blocker runs until its context is cancelled (reporting it) or the test
// releases it.
func Blocker(ctx context.Context, key string) (string, error) {
	p := probeOf(key)
	p.started <- struct{}{}
	select {
	case <-ctx.Done():
		p.cancelled <- struct{}{}
		return "", ctx.Err()
	case <-p.release:
		return "released", nil
	}
}

// Quick returns at once.
func Quick(_ context.Context, key string) (string, error) { return "quick", nil }

// Heartbeater heartbeats every 20 ms until its context is cancelled.
func Heartbeater(ctx context.Context, key string) error {
	p := probeOf(key)
	p.started <- struct{}{}
	for {
		activity.RecordHeartbeat(ctx)
		select {
		case <-ctx.Done():
			p.cancelled <- struct{}{}
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func liveOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}}
}

// RaceTimer selects over a blocked activity and a 100 ms timer: the timer
// wins, and the losing activity is cancelled.
func RaceTimer(ctx workflow.Context, key string) (string, error) {
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, liveOptions()))
	act := workflow.ExecuteActivity(actCtx, Blocker, key)
	winner := ""
	s := workflow.NewSelector(ctx)
	s.AddFuture(workflow.NewTimer(ctx, 100*time.Millisecond), func(workflow.Future) { winner = "timer" })
	s.AddFuture(act, func(workflow.Future) { winner = "activity" })
	s.Select(ctx)
	cancel()
	return winner, nil
}

func TestTimerFiresWhileActivityRuns(t *testing.T) { forEachCache(t, testTimerFiresWhileActivityRuns) }

func testTimerFiresWhileActivityRuns(t *testing.T, cache int) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(RaceTimer)
		w.RegisterActivity(Blocker)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, RaceTimer, key)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "timer" {
		t.Fatalf("the selector chose %q, want the timer", got)
	}
	await(t, ctx, probeOf(key).cancelled, "the losing activity's cancellation")
	// The timer fired while the job was running its activity: no wait
	// came between the activity's start and the timer.
	hist, err := c.GetWorkflowHistory(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if types := eventTypes(hist); !strings.Contains(types, "timer_scheduled timer_fired") || strings.Contains(types, "job_waiting") {
		t.Fatalf("history %s: want the timer set and fired within the running turn", types)
	}
	verify(t, e)
}

// CancelSoon starts an activity, sleeps 1 ms and cancels it (Temporal's
// activity/cancel_try_cancel): the future fails as cancelled at once, and
// the activity sees its context cancelled.
func CancelSoon(ctx workflow.Context, key string) (string, error) {
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, liveOptions()))
	act := workflow.ExecuteActivity(actCtx, Blocker, key)
	if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
		return "", err
	}
	cancel()
	err := act.Get(ctx, nil)
	if !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("the cancelled activity's future gave %v, want ErrCanceled", err)
	}
	// The test signals once the activity saw its cancellation, so the
	// workflow is still running when that happens.
	workflow.GetSignalChannel(ctx, "seen").Receive(ctx, nil)
	return "cancelled", nil
}

func TestShortSleepAfterActivityFires(t *testing.T) {
	forEachCache(t, testShortSleepAfterActivityFires)
}

func testShortSleepAfterActivityFires(t *testing.T, cache int) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(CancelSoon)
		w.RegisterActivity(Blocker)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, CancelSoon, key)
	if err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).cancelled, "the activity's cancellation")
	if err := c.SignalWorkflow(ctx, key, "", "seen", nil); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "cancelled" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	verify(t, e)
}

// WaitCancel cancels an activity with WaitForCancellation: the future waits
// for the activity to return and reports its cancellation.
func WaitCancel(ctx workflow.Context, key string) (string, error) {
	opts := liveOptions()
	opts.WaitForCancellation = true
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
	act := workflow.ExecuteActivity(actCtx, Blocker, key)
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	cancel()
	err := act.Get(ctx, nil)
	var ae *workflow.ActivityError
	if !errors.As(err, &ae) || !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("the cancelled activity's future gave %v, want its cancellation", err)
	}
	return failureType(err), nil
}

func TestWaitForCancellation(t *testing.T) { forEachCache(t, testWaitForCancellation) }

func testWaitForCancellation(t *testing.T, cache int) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(WaitCancel)
		w.RegisterActivity(Blocker)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, WaitCancel, key)
	if err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).started, "the activity's start")
	if err := c.SignalWorkflow(ctx, key, "", "go", nil); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "CanceledError" {
		t.Fatalf("Get = %q, %v; want CanceledError", got, err)
	}
	// The activity's cancellation is its step's one committed result.
	hist, err := c.GetWorkflowHistory(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if types := eventTypes(hist); !strings.Contains(types, "signal_received activity_failed") {
		t.Fatalf("history %s: want the activity's cancellation committed after the signal", types)
	}
	verify(t, e)
}

// PickFirst runs two activities under one cancellable context, takes the
// first result and cancels the other (Temporal's pickfirst sample).
func PickFirst(ctx workflow.Context, key string) (string, error) {
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, liveOptions()))
	var first string
	s := workflow.NewSelector(ctx)
	for _, act := range []any{Blocker, Quick} {
		f := workflow.ExecuteActivity(actCtx, act, key)
		s.AddFuture(f, func(f workflow.Future) { _ = f.Get(ctx, &first) })
	}
	s.Select(ctx)
	cancel()
	// The loser reports its cancellation through the test, which signals.
	workflow.GetSignalChannel(ctx, "loser-cancelled").Receive(ctx, nil)
	return first, nil
}

func TestPickFirstCancelsTheLoser(t *testing.T) { forEachCache(t, testPickFirstCancelsTheLoser) }

func testPickFirstCancelsTheLoser(t *testing.T, cache int) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(PickFirst)
		w.RegisterActivity(Blocker)
		w.RegisterActivity(Quick)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, PickFirst, key)
	if err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).cancelled, "the losing activity's cancellation")
	if err := c.SignalWorkflow(ctx, key, "", "loser-cancelled", nil); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "quick" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	verify(t, e)
}

// RemoteHeartbeater runs a heartbeating activity on another task queue
// until the workflow is cancelled.
func RemoteHeartbeater(ctx workflow.Context, key string) error {
	opts := liveOptions()
	opts.TaskQueue = "live-remote"
	opts.WaitForCancellation = true
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), Heartbeater, key).Get(ctx, nil)
}

// A workflow's cancel request reaches an activity running in another
// worker at its next heartbeat, not at the next renewal of the job's lease
// (a minute away here).
func TestCancelReachesRemoteActivityByHeartbeat(t *testing.T) {
	forEachCache(t, testCancelReachesRemoteActivityByHeartbeat)
}

func testCancelReachesRemoteActivityByHeartbeat(t *testing.T, cache int) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(RemoteHeartbeater)
	})
	startWorker(t, e, "live-remote", worker.Options{CacheSize: cache, LeaseTTL: 3 * time.Minute}, func(w worker.Worker) {
		w.RegisterActivity(Heartbeater)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, RemoteHeartbeater, key)
	if err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).started, "the remote activity's start")
	if err := c.CancelWorkflow(ctx, key, ""); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).cancelled, "the remote activity's cancellation")
	if err := run.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		t.Fatalf("Get = %v, want ErrCanceled", err)
	}
	verify(t, e)
}

// eventTypes lists a history's event types, space-separated.
func eventTypes(hist []engine.Event) string {
	var b strings.Builder
	for i, ev := range hist {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(ev.Type))
	}
	return b.String()
}

// WaitForSignal waits for the signal "go" and returns its value.
func WaitForSignal(ctx workflow.Context) (string, error) {
	var v string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	return v, nil
}

// ChildOfID starts a child under a given workflow id and reports how it
// ended; with twins it starts two at once under the same id.
func ChildOfID(ctx workflow.Context, id string, twins bool) (string, error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: id, ParentClosePolicy: workflow.ParentCloseAbandon})
	f := workflow.ExecuteChildWorkflow(cctx, WaitForSignal)
	if twins {
		g := workflow.ExecuteChildWorkflow(cctx, WaitForSignal)
		if err := g.Get(ctx, nil); err != nil {
			return failureType(err), nil
		}
		return "second twin started", nil
	}
	if err := f.Get(ctx, nil); err != nil {
		return failureType(err), nil
	}
	return "started", nil
}

// failureType names the failure an error carries: the temporal error type,
// or an application error's own type.
func failureType(err error) string {
	var app *temporal.ApplicationError
	switch {
	case temporal.IsCanceledError(err):
		return "CanceledError"
	case errors.As(err, new(*temporal.ChildWorkflowExecutionAlreadyStartedError)):
		if n := strings.Count(err.Error(), "child workflow execution error"); n != 1 {
			// Its message said the child's ids twice (found by a probe).
			return fmt.Sprintf("an already-started error naming the child %d times: %v", n, err)
		}
		return "ChildWorkflowExecutionAlreadyStartedError"
	case temporal.IsTimeoutError(err):
		return "TimeoutError"
	case errors.As(err, &app):
		return app.Type()
	}
	return err.Error()
}

// A child whose workflow id an unrelated open run holds fails at once with
// an "already started" error, as does the second of two siblings started
// under one id; neither hangs its parent.
func TestChildWorkflowIDInUse(t *testing.T) { forEachCache(t, testChildWorkflowIDInUse) }

func testChildWorkflowIDInUse(t *testing.T, cache int) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(ChildOfID)
		w.RegisterWorkflow(WaitForSignal)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	taken := key + "-x"
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: taken, TaskQueue: "live"}, WaitForSignal); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id    string
		twins bool
	}{{taken, false}, {key + "-twin", true}} {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key + fmt.Sprint(tc.twins), TaskQueue: "live"}, ChildOfID, tc.id, tc.twins)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := run.Get(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if got != "ChildWorkflowExecutionAlreadyStartedError" {
			t.Fatalf("child under id %q (twins %v): %q, want an already-started error", tc.id, tc.twins, got)
		}
	}
	// The run holding the id is untouched: it goes on waiting for its
	// signal (its first turn may still be under way on a loaded machine).
	waitStatus(t, ctx, c, taken, engine.StatusWaiting)
	verify(t, e)
}

// CleanupChild waits for a signal; when cancelled it runs a clean-up
// activity on a disconnected context, then ends cancelled.
func CleanupChild(ctx workflow.Context, key string) error {
	var v string
	s := workflow.NewSelector(ctx)
	s.AddReceive(workflow.GetSignalChannel(ctx, "go"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &v) })
	s.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	s.Select(ctx)
	if ctx.Err() == nil {
		return nil
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, liveOptions()), Cleanup, key).Get(dctx, nil); err != nil {
		return err
	}
	return workflow.ErrCanceled
}

// Cleanup reports that a cancelled child cleaned up.
func Cleanup(_ context.Context, key string) error {
	probeOf(key).cancelled <- struct{}{}
	return nil
}

// CancelChild starts a child and, how depending on mode, cancels it:
// "context" cancels the child's context; "before-start" cancels it in the
// same turn that started it; "parent-close" ends the parent with the
// request-cancel policy.
func CancelChild(ctx workflow.Context, key, mode string) (string, error) {
	policy := workflow.ParentCloseTerminate
	if mode == "parent-close" {
		policy = workflow.ParentCloseRequestCancel
	}
	cctx, cancel := workflow.WithCancel(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: key + "-child", ParentClosePolicy: policy}))
	f := workflow.ExecuteChildWorkflow(cctx, CleanupChild, key)
	switch mode {
	case "before-start":
		cancel()
		return failureType(f.Get(ctx, nil)), nil
	case "parent-close":
		workflow.GetSignalChannel(ctx, "child-started").Receive(ctx, nil)
		return "closing", nil
	}
	workflow.GetSignalChannel(ctx, "child-started").Receive(ctx, nil)
	cancel()
	err := f.Get(ctx, nil)
	if !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("the cancelled child's future: %v, want ErrCanceled", err)
	}
	// Wait for the child to finish its clean-up before ending (the test
	// signals once it has).
	workflow.GetSignalChannel(ctx, "child-done").Receive(ctx, nil)
	return "cancelled", nil
}

// Cancelling a child is a cancel request the child's code sees and acts
// on, whether it comes from the child's context or from its parent closing
// under the request-cancel policy; a child cancelled before it started is
// never created.
func TestChildCancellation(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		for _, mode := range []string{"context", "parent-close", "before-start"} {
			t.Run(mode, func(t *testing.T) { testChildCancellation(t, cache, mode) })
		}
	})
}

func testChildCancellation(t *testing.T, cache int, mode string) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(CancelChild)
		w.RegisterWorkflow(CleanupChild)
		w.RegisterActivity(Cleanup)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, CancelChild, key, mode)
	if err != nil {
		t.Fatal(err)
	}
	if mode == "before-start" {
		var got string
		if err := run.Get(ctx, &got); err != nil || got != "CanceledError" {
			t.Fatalf("Get = %q, %v; want the child's future to fail as cancelled", got, err)
		}
		if _, err := c.DescribeWorkflow(ctx, key+"-child", ""); !errors.Is(err, engine.ErrUnknownJob) {
			t.Fatalf("the child cancelled before it started exists: %v", err)
		}
		verify(t, e)
		return
	}
	waitStatus(t, ctx, c, key+"-child", engine.StatusWaiting)
	if err := c.SignalWorkflow(ctx, key, "", "child-started", nil); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).cancelled, "the child's clean-up")
	childRun := c.GetWorkflow(ctx, key+"-child", "")
	if err := childRun.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		t.Fatalf("the child ended with %v, want cancelled by its own code", err)
	}
	hist, err := c.GetWorkflowHistory(ctx, key+"-child", "")
	if err != nil {
		t.Fatal(err)
	}
	if types := eventTypes(hist); !strings.Contains(types, "cancel_requested") || !strings.Contains(types, "activity_completed") {
		t.Fatalf("child history %s: want a cancel request, then the clean-up", types)
	}
	if mode == "context" {
		if err := c.SignalWorkflow(ctx, key, "", "child-done", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	verify(t, e)
}

// waitStatus waits until the run of workflow id has status want.
func waitStatus(t *testing.T, ctx context.Context, c client.Client, id string, want engine.Status) {
	t.Helper()
	for {
		j, err := c.DescribeWorkflow(ctx, id, "")
		if err == nil && j.Status == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("workflow %s never reached %s (last: %v, %v)", id, want, j, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
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

// A cancelled timer is recorded as timer_canceled and never fires; one the
// job was waiting on when it was cancelled leaves the engine's timers too.
func TestTimerCanceledIsRecorded(t *testing.T) { forEachCache(t, testTimerCanceledIsRecorded) }

func testTimerCanceledIsRecorded(t *testing.T, cache int) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) { w.RegisterWorkflow(CancelTimer) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, CancelTimer)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ctx, c, key, engine.StatusWaiting)
	if err := c.SignalWorkflow(ctx, key, "", "go", nil); err != nil {
		t.Fatal(err)
	}
	// Once the job waits for "end", no timer of its is pending.
	for {
		j, err := c.DescribeWorkflow(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == engine.StatusWaiting && j.LastSeq > 5 && len(j.Timers) == 0 {
			break
		}
		if len(j.Timers) > 0 && j.Wait != nil && !j.Wait.AnySignal {
			t.Fatalf("job waits with timers %v", j.Timers)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the job still has timers %v (status %s)", j.Timers, j.Status)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := c.SignalWorkflow(ctx, key, "", "end", nil); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	hist, err := c.GetWorkflowHistory(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if types := eventTypes(hist); strings.Count(types, "timer_canceled") != 2 || strings.Contains(types, "timer_fired") {
		t.Fatalf("history %s: want both timers cancelled and none fired", types)
	}
	verify(t, e)
}

// A workflow whose type no worker of its queue registers is not claimed:
// the engine passes it over with a growing delay, writes nothing to its
// history, and says why on its record; once a worker registers the type,
// the run goes on.
func TestUnregisteredTypeWaitsWithoutGrowingItsHistory(t *testing.T) {
	key := newProbe(t)
	e := open(t)
	w := startWorker(t, e, "live", worker.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, "LateType")
	if err != nil {
		t.Fatal(err)
	}
	var j *engine.Job
	for {
		if j, err = c.DescribeWorkflow(ctx, key, ""); err != nil {
			t.Fatal(err)
		}
		if j.Deferrals >= 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the job was never passed over: %+v", j)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if j.Status != engine.StatusQueued || j.LastSeq != 1 || !strings.Contains(j.DeferredReason, `"LateType"`) {
		t.Fatalf("after %d deferrals: status %s, %d events, reason %q; want Queued, job_created alone, the type named",
			j.Deferrals, j.Status, j.LastSeq, j.DeferredReason)
	}
	w.RegisterWorkflowWithName(func(workflow.Context) (string, error) { return "late", nil }, "LateType")
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "late" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	verify(t, e)
}

// UnservedActivity runs an activity on a task queue nobody polls, under a
// schedule-to-close or schedule-to-start timeout, and reports how it ended.
func UnservedActivity(ctx workflow.Context, startTimeout bool) (string, error) {
	opts := workflow.ActivityOptions{TaskQueue: "nobody", StartToCloseTimeout: time.Minute}
	if startTimeout {
		opts.ScheduleToStartTimeout = 300 * time.Millisecond
	} else {
		opts.ScheduleToCloseTimeout = 300 * time.Millisecond
	}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), "Nobody").Get(ctx, nil)
	var te *temporal.TimeoutError
	if !errors.As(err, &te) {
		return "", fmt.Errorf("the unserved activity gave %v", err)
	}
	return fmt.Sprintf("TimeoutError(%s): %s", te.TimeoutType(), te.Message()), nil
}

// The engine enforces an activity's schedule-to-close and schedule-to-start
// timeouts when no worker ever takes it, and reports either as a
// schedule-to-start timeout, as Temporal does.
func TestUnservedActivityTimesOut(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		for _, start := range []bool{false, true} {
			t.Run(fmt.Sprintf("schedule-to-start=%v", start), func(t *testing.T) {
				key := newProbe(t)
				e := open(t)
				startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) { w.RegisterWorkflow(UnservedActivity) })
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				c := client.New(service(t, e))
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, UnservedActivity, start)
				if err != nil {
					t.Fatal(err)
				}
				var got string
				if err := run.Get(ctx, &got); err != nil {
					t.Fatal(err)
				}
				// Without a ScheduleToStartTimeout, Temporal's server
				// takes the ScheduleToCloseTimeout for it, and of two
				// timers due together reports schedule-to-start.
				want, typ := "schedule-to-start", "ScheduleToStart"
				if !strings.HasPrefix(got, "TimeoutError("+typ+"): ") || !strings.Contains(got, "its "+want+" timeout passed") {
					t.Fatalf("the activity ended with %q, want a %s TimeoutError", got, want)
				}
				verify(t, e)
			})
		}
	})
}

// The engine enforces a workflow's execution timeout on a run no worker
// takes, and its run timeout on a run a worker holds: both end TimedOut,
// and Get returns when they do.
func TestWorkflowTimeoutsEnforcedByTheEngine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queue  string
		opts   client.StartWorkflowOptions
		reason string
	}{
		{"execution timeout, no worker", "nobody", client.StartWorkflowOptions{WorkflowExecutionTimeout: 300 * time.Millisecond}, engine.ReasonExecutionTimeout},
		{"run timeout, waiting", "live", client.StartWorkflowOptions{WorkflowRunTimeout: 300 * time.Millisecond}, engine.ReasonRunTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := newProbe(t)
			e := open(t)
			startWorker(t, e, "live", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(WaitForSignal) })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := client.New(service(t, e))
			tc.opts.ID, tc.opts.TaskQueue = key, tc.queue
			run, err := c.ExecuteWorkflow(ctx, tc.opts, WaitForSignal)
			if err != nil {
				t.Fatal(err)
			}
			if err := run.Get(ctx, nil); err == nil || !strings.Contains(err.Error(), "timed out") {
				t.Fatalf("Get = %v, want a timeout", err)
			}
			j, err := c.DescribeWorkflow(ctx, key, "")
			if err != nil || j.Status != engine.StatusTimedOut {
				t.Fatalf("the run is %v (%v), want TimedOut", j, err)
			}
			hist, err := c.GetWorkflowHistory(ctx, key, "")
			if err != nil {
				t.Fatal(err)
			}
			if last := hist[len(hist)-1]; last.Type != engine.EventJobTimedOut || last.Reason != tc.reason {
				t.Fatalf("the run ended with %s (%s), want job_timed_out (%s)", last.Type, last.Reason, tc.reason)
			}
			verify(t, e)
		})
	}
}

var remoteFlakyTries sync.Map // key -> *atomic.Int32

// RemoteFlaky fails its first two tries.
func RemoteFlaky(ctx context.Context, key string) (int, error) {
	v, _ := remoteFlakyTries.LoadOrStore(key, new(atomic.Int32))
	n := int(v.(*atomic.Int32).Add(1))
	if n < 3 {
		return 0, errors.New("not yet")
	}
	return n, nil
}

// RemoteRetries runs RemoteFlaky on another task queue with retry delays
// longer than that worker sleeps between tries.
func RemoteRetries(ctx workflow.Context, key string) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "live-remote", StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 50 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 5}})
	var tries int
	err := workflow.ExecuteActivity(ctx, RemoteFlaky, key).Get(ctx, &tries)
	return tries, err
}

// An activity on another task queue whose retry delay is longer than its
// worker sleeps between tries is retried as a delayed job, not failed at
// its first failure.
func TestRemoteActivityDurableRetries(t *testing.T) {
	key := newProbe(t)
	e := open(t)
	startWorker(t, e, "live", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(RemoteRetries) })
	startWorker(t, e, "live-remote", worker.Options{RetryInlineThreshold: time.Millisecond}, func(w worker.Worker) { w.RegisterActivity(RemoteFlaky) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, RemoteRetries, key)
	if err != nil {
		t.Fatal(err)
	}
	var tries int
	if err := run.Get(ctx, &tries); err != nil || tries != 3 {
		t.Fatalf("Get = %d, %v; want success on the third try", tries, err)
	}
	verify(t, e)
}

// ThreeChildren starts a child under each parent-close policy, then waits
// for a signal that never comes.
func ThreeChildren(ctx workflow.Context, key string) error {
	for _, c := range []struct {
		suffix string
		policy workflow.ParentClosePolicy
	}{{"-terminate", workflow.ParentCloseTerminate}, {"-cancel", workflow.ParentCloseRequestCancel}, {"-abandon", workflow.ParentCloseAbandon}} {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: key + c.suffix, ParentClosePolicy: c.policy})
		workflow.ExecuteChildWorkflow(cctx, CleanupChild, key)
	}
	workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
	return nil
}

// A parent ended by Terminate, which no worker code sees, still applies its
// children's parent-close policies: the engine terminates one, asks one to
// cancel (its code cleans up and ends cancelled) and leaves the abandoned
// one running.
func TestTerminatedParentClosesItsChildren(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		key := newProbe(t)
		e := open(t)
		startWorker(t, e, "live", worker.Options{CacheSize: cache}, func(w worker.Worker) {
			w.RegisterWorkflow(ThreeChildren)
			w.RegisterWorkflow(CleanupChild)
			w.RegisterActivity(Cleanup)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := client.New(service(t, e))
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "live"}, ThreeChildren, key); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"-terminate", "-cancel", "-abandon"} {
			waitStatus(t, ctx, c, key+s, engine.StatusWaiting)
		}
		if err := c.TerminateWorkflow(ctx, key, "", "operator"); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, ctx, c, key+"-terminate", engine.StatusTerminated)
		await(t, ctx, probeOf(key).cancelled, "the request-cancel child's clean-up")
		run := c.GetWorkflow(ctx, key+"-cancel", "")
		if err := run.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
			t.Fatalf("the request-cancel child ended with %v, want cancelled by its own code", err)
		}
		if j, err := c.DescribeWorkflow(ctx, key+"-abandon", ""); err != nil || j.Status != engine.StatusWaiting {
			t.Fatalf("the abandoned child is %v (%v), want still waiting", j, err)
		}
		if err := c.SignalWorkflow(ctx, key+"-abandon", "", "go", "x"); err != nil {
			t.Fatal(err)
		}
		run = c.GetWorkflow(ctx, key+"-abandon", "")
		if err := run.Get(ctx, nil); err != nil {
			t.Fatalf("the abandoned child ended with %v, want success", err)
		}
		verify(t, e)
	})
}
