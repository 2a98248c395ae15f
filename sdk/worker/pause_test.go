package worker_test

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
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The pause of a run and the operations on its activities
// (docs/state-machines.md §6), end to end through a worker: embedded, and
// with HEDDLE_SDK_BACKEND=http or cluster over the wire and a three-node
// cluster.

// waitRun waits until the run of wf satisfies ok, woken by each commit
// rather than by a clock, and returns its record.
func waitRunIs(t *testing.T, ctx context.Context, e *embedded.Engine, c client.Client, wf, what string, ok func(*engine.Job) bool) *engine.Job {
	t.Helper()
	for {
		changed := e.Committed() // before the read, or a commit in between is missed
		j, err := c.DescribeWorkflow(ctx, wf, "")
		if err == nil && ok(j) {
			return j
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("run %s never became %s (last: %+v, %v)", wf, what, j, err)
		}
	}
}

// historyTypes returns the types of a run's events, in order.
func historyTypes(t *testing.T, ctx context.Context, c client.Client, wf string) []string {
	t.Helper()
	hist, err := c.GetWorkflowHistory(ctx, wf, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range hist {
		out = append(out, string(ev.Type))
	}
	return out
}

// get reads how many times key ran.
func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[key]
}

func countOf(types []string, t engine.EventType) int {
	n := 0
	for _, s := range types {
		if s == string(t) {
			n++
		}
	}
	return n
}

// gates hold activities until a test lets them go, by workflow id.
type gateSet struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// fresh gives key a new, closed-over gate, and forgets its calls, so that
// a test may run again (go test -count).
func (g *gateSet) fresh(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	g.m[key] = make(chan struct{})
	pauseCalls.mu.Lock()
	delete(pauseCalls.runs, key+"/gated")
	delete(pauseCalls.runs, key+"/after")
	pauseCalls.mu.Unlock()
}

func (g *gateSet) of(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	if g.m[key] == nil {
		g.m[key] = make(chan struct{})
	}
	return g.m[key]
}

var (
	pauseGates   gateSet
	pauseStarted sync.Map // workflow id → chan struct{} closed when HeldOpen starts
	pauseCalls   counter
)

// HeldOpen runs until the test opens its gate.
func HeldOpen(ctx context.Context) (string, error) {
	wf := activity.GetInfo(ctx).WorkflowExecution.ID
	pauseCalls.add(wf + "/gated")
	if ch, ok := pauseStarted.LoadAndDelete(wf); ok {
		close(ch.(chan struct{}))
	}
	select {
	case <-pauseGates.of(wf):
		return "gated", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// After counts its calls.
func After(ctx context.Context) (string, error) {
	pauseCalls.add(activity.GetInfo(ctx).WorkflowExecution.ID + "/after")
	return "after", nil
}

// TwoSteps runs HeldOpen, then After.
func TwoSteps(ctx workflow.Context) (string, error) {
	var a, b string
	if err := workflow.ExecuteActivity(ctx, HeldOpen).Get(ctx, &a); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, After).Get(ctx, &b); err != nil {
		return "", err
	}
	return a + " " + b, nil
}

// SleepThenAct sleeps, then runs After.
func SleepThenAct(ctx workflow.Context, d time.Duration) (string, error) {
	if err := workflow.Sleep(ctx, d); err != nil {
		return "", err
	}
	var s string
	err := workflow.ExecuteActivity(ctx, After).Get(ctx, &s)
	return s, err
}

// Just runs After.
func Just(ctx workflow.Context) (string, error) {
	var s string
	err := workflow.ExecuteActivity(ctx, After).Get(ctx, &s)
	return s, err
}

func registerPause(w worker.Worker) {
	w.RegisterWorkflow(TwoSteps)
	w.RegisterWorkflow(SleepThenAct)
	w.RegisterWorkflow(Just)
	w.RegisterActivity(HeldOpen)
	w.RegisterActivity(After)
}

func pauseRun(t *testing.T, ctx context.Context, c client.Client, wf string) {
	t.Helper()
	if err := c.PauseWorkflowExecution(ctx, client.PauseWorkflowExecutionOptions{WorkflowID: wf, Reason: "investigating", RequestID: "pause-" + wf}); err != nil {
		t.Fatalf("pause %s: %v", wf, err)
	}
}

func unpauseRun(t *testing.T, ctx context.Context, c client.Client, wf string) {
	t.Helper()
	if err := c.UnpauseWorkflowExecution(ctx, client.UnpauseWorkflowExecutionOptions{WorkflowID: wf, Reason: "fixed", RequestID: "unpause-" + wf}); err != nil {
		t.Fatalf("unpause %s: %v", wf, err)
	}
}

// A run paused while Queued is not claimed: a run started after it on the
// same queue completes first, while the paused one keeps no claim and no
// event but its pause. Unpaused, it runs.
func TestPauseWhileQueued(t *testing.T) {
	e := open(t)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	paused, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pq-paused", TaskQueue: "pq"}, Just)
	if err != nil {
		t.Fatal(err)
	}
	pauseRun(t, ctx, c, "pq-paused")
	pauseRun(t, ctx, c, "pq-paused") // the same request again: nothing more
	other, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pq-other", TaskQueue: "pq"}, Just)
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, e, "pq", worker.Options{}, registerPause)
	if err := other.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	j, err := c.DescribeWorkflow(ctx, "pq-paused", "")
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != engine.StatusQueued || j.Pause == nil || j.Pause.Reason != "investigating" || j.Attempt != 0 {
		t.Fatalf("paused run after a later run completed: %+v", j)
	}
	page, err := c.ListWorkflows(ctx, engine.ListQuery{Paused: true})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].WorkflowID != "pq-paused" {
		t.Fatalf("paused runs = %+v, %v", page, err)
	}
	// A pause is a flag beside the status: the paused run is in the open
	// group (Temporal's Running) too, and both filter spellings find it.
	ids := func(lq engine.ListQuery) string {
		t.Helper()
		page, err := c.ListWorkflows(ctx, lq)
		if err != nil {
			t.Fatalf("list %+v: %v", lq, err)
		}
		var out []string
		for _, j := range page.Jobs {
			out = append(out, j.WorkflowID)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		lq   engine.ListQuery
		want string
	}{
		{engine.ListQuery{ExecutionStatus: "open"}, "pq-paused"},
		{engine.ListQuery{ExecutionStatus: "Running"}, "pq-paused"},
		{engine.ListQuery{Query: `ExecutionStatus = "Paused"`}, "pq-paused"},
		{engine.ListQuery{Query: "paused=true ORDER BY StartTime ASC"}, "pq-paused"},
		{engine.ListQuery{Query: "paused=false"}, "pq-other"},
		{engine.ListQuery{Query: `ExecutionStatus = "Completed" OR Paused = true`}, "pq-other pq-paused"},
	} {
		if got := ids(tc.lq); got != tc.want {
			t.Errorf("list %+v = %q, want %q", tc.lq, got, tc.want)
		}
	}
	if n, err := c.CountWorkflow(ctx, &client.CountWorkflowExecutionsRequest{Query: `ExecutionStatus = "Paused"`}); err != nil || n.Count != 1 {
		t.Errorf("count of the paused runs = %+v, %v; want 1", n, err)
	}
	if got := historyTypes(t, ctx, c, "pq-paused"); strings.Join(got, " ") != "job_created workflow_paused" {
		t.Fatalf("history of the paused run: %v", got)
	}
	unpauseRun(t, ctx, c, "pq-paused")
	if err := paused.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	verify(t, e)
}

// A run paused while Running, mid-turn, finishes the activity that runs,
// starts no other, and is not claimed again until unpaused; then it goes
// on from where it was.
func TestPauseWhileRunning(t *testing.T) { forEachCache(t, testPauseWhileRunning) }

func testPauseWhileRunning(t *testing.T, cache int) {
	e := open(t)
	wf := fmt.Sprintf("pr-%d", cache)
	started := make(chan struct{})
	pauseStarted.Store(wf, started)
	pauseGates.fresh(wf)
	startWorker(t, e, "pr", worker.Options{CacheSize: cache}, registerPause)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: "pr"}, TwoSteps)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("HeldOpen never started")
	}
	pauseRun(t, ctx, c, wf)
	close(pauseGates.of(wf)) // the running activity finishes
	j := waitRunIs(t, ctx, e, c, wf, "paused and released", func(j *engine.Job) bool {
		return j.Status != engine.StatusRunning && j.Pause != nil
	})
	types := historyTypes(t, ctx, c, wf)
	if countOf(types, engine.EventActivityCompleted) != 1 || pauseCalls.get(wf+"/after") != 0 {
		t.Fatalf("paused run %s: history %v; After must not have run", j.Status, types)
	}
	unpauseRun(t, ctx, c, wf)
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "gated after" {
		t.Fatalf("result %q, %v", got, err)
	}
	if n := pauseCalls.get(wf + "/after"); n != 1 {
		t.Fatalf("After ran %d times, want once", n)
	}
	verify(t, e)
}

// A run paused while it waits for a timer: the timer fires and is
// recorded, but the run takes no turn until unpaused.
func TestPauseWhileWaitingTimerFires(t *testing.T) { forEachCache(t, testPauseWhileWaitingTimerFires) }

func testPauseWhileWaitingTimerFires(t *testing.T, cache int) {
	e := open(t)
	wf := fmt.Sprintf("pw-%d", cache)
	startWorker(t, e, "pw", worker.Options{CacheSize: cache}, registerPause)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: "pw"}, SleepThenAct, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitRunIs(t, ctx, e, c, wf, "Waiting", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })
	pauseRun(t, ctx, c, wf)
	j := waitRunIs(t, ctx, e, c, wf, "woken by its timer, and held", func(j *engine.Job) bool {
		return j.Status == engine.StatusQueued
	})
	types := historyTypes(t, ctx, c, wf)
	if j.Pause == nil || countOf(types, engine.EventTimerFired) != 1 || countOf(types, engine.EventActivityCompleted) != 0 ||
		types[len(types)-1] != string(engine.EventWaitCompleted) {
		t.Fatalf("paused run %+v: history %v", j, types)
	}
	unpauseRun(t, ctx, c, wf)
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	verify(t, e)
}

var (
	flakyMu     sync.Mutex
	flakyFixed  = map[string]bool{}
	flakyTries  counter
	flakyAttems sync.Map // workflow id → []int32, the Info.Attempt of each try
)

// Unreliable fails until its workflow is marked fixed.
func Unreliable(ctx context.Context) (string, error) {
	info := activity.GetInfo(ctx)
	wf := info.WorkflowExecution.ID
	flakyTries.add(wf)
	prev, _ := flakyAttems.LoadOrStore(wf, []int32{})
	flakyAttems.Store(wf, append(prev.([]int32), info.Attempt))
	flakyMu.Lock()
	fixed := flakyFixed[wf]
	flakyMu.Unlock()
	if !fixed {
		return "", errors.New("upstream down")
	}
	return "done", nil
}

func fix(wf string) {
	flakyMu.Lock()
	flakyFixed[wf] = true
	flakyMu.Unlock()
}

func triesOf(wf string) int { return flakyTries.get(wf) }

// forgetTries starts wf's counts afresh, so that a test may run again.
func forgetTries(wf string) {
	flakyTries.mu.Lock()
	delete(flakyTries.runs, wf)
	flakyTries.mu.Unlock()
	flakyAttems.Delete(wf)
	flakyMu.Lock()
	delete(flakyFixed, wf)
	flakyMu.Unlock()
}

// Retried calls Unreliable with the retry interval it is given.
func Retried(ctx workflow.Context, interval time.Duration) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: interval, BackoffCoefficient: 1}})
	var s string
	err := workflow.ExecuteActivity(ctx, Unreliable).Get(ctx, &s)
	return s, err
}

// stepOf returns the one activity step of a run.
func stepOf(t *testing.T, ctx context.Context, c client.Client, wf string) engine.StepInfo {
	t.Helper()
	steps, err := c.ListSteps(ctx, wf, "")
	if err != nil || len(steps) != 1 {
		t.Fatalf("steps of %s = %+v, %v", wf, steps, err)
	}
	return steps[0]
}

// An activity that keeps failing is paused by its type: its retries stop
// (the try that runs finishes), the run waits, and no try starts until it
// is unpaused, after which it succeeds.
func TestActivityPauseStopsRetries(t *testing.T) { forEachCache(t, testActivityPauseStopsRetries) }

func testActivityPauseStopsRetries(t *testing.T, cache int) {
	e := open(t)
	wf := fmt.Sprintf("ap-%d", cache)
	forgetTries(wf)
	startWorker(t, e, "ap", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(Retried)
		w.RegisterActivity(Unreliable)
	})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: "ap"}, Retried, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitRunIs(t, ctx, e, c, wf, "retrying", func(*engine.Job) bool { return triesOf(wf) >= 2 })
	res, err := c.PauseActivity(ctx, client.PauseActivityOptions{ActivitySelector: client.ActivitySelector{WorkflowID: wf, ActivityType: "Unreliable"},
		Reason: "upstream down", RequestID: "pa-" + wf})
	if err != nil || len(res.Steps) != 1 {
		t.Fatalf("PauseActivity = %+v, %v", res, err)
	}
	// The worker stops trying: the run waits for the activity's news.
	waitRunIs(t, ctx, e, c, wf, "Waiting", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })
	held := triesOf(wf)
	si := stepOf(t, ctx, c, wf)
	if si.Pause == nil || si.Pause.Reason != "upstream down" || !si.Explicit || si.State != engine.StepRetrying {
		t.Fatalf("paused step = %+v", si)
	}
	fix(wf)
	if _, err := c.UnpauseActivity(ctx, client.UnpauseActivityOptions{ActivitySelector: client.ActivitySelector{WorkflowID: wf, ActivityID: si.Step}}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "done" {
		t.Fatalf("result %q, %v", got, err)
	}
	if n := triesOf(wf); n != held+1 {
		t.Fatalf("%d tries after the unpause, %d while paused: want exactly one more", n, held)
	}
	verify(t, e)
}

// A reset makes an activity waiting out a long retry delay try again at
// once, as its first attempt; new options (a longer start-to-close
// timeout) apply from its next try.
func TestActivityResetAndUpdateOptions(t *testing.T) {
	forEachCache(t, testActivityResetAndUpdateOptions)
}

func testActivityResetAndUpdateOptions(t *testing.T, cache int) {
	e := open(t)
	wf := fmt.Sprintf("ar-%d", cache)
	forgetTries(wf)
	startWorker(t, e, "ar", worker.Options{CacheSize: cache, RetryInlineThreshold: time.Millisecond}, func(w worker.Worker) {
		w.RegisterWorkflow(Retried)
		w.RegisterActivity(Unreliable)
	})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: "ar"}, Retried, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The first try failed; the next waits an hour.
	waitRunIs(t, ctx, e, c, wf, "waiting for its retry", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting && triesOf(wf) == 1 })
	sel := client.ActivitySelector{WorkflowID: wf, MatchAll: true}
	if _, err := c.UpdateActivityOptions(ctx, client.UpdateActivityOptionsRequest{ActivitySelector: sel, StartToCloseTimeout: 20 * time.Second,
		RequestID: "uo-" + wf}); err != nil {
		t.Fatal(err)
	}
	si := stepOf(t, ctx, c, wf)
	if si.Options == nil || si.Options.StartToCloseTimeoutMS != 20_000 {
		t.Fatalf("step after update-options = %+v", si)
	}
	fix(wf)
	if _, err := c.ResetActivity(ctx, client.ResetActivityOptions{ActivitySelector: sel, RequestID: "ra-" + wf}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "done" {
		dumpJobs(t, e)
		t.Fatalf("result %q, %v", got, err)
	}
	attempts, _ := flakyAttems.Load(wf)
	if a := attempts.([]int32); len(a) != 2 || a[0] != 1 || a[1] != 1 {
		t.Fatalf("Info.Attempt of each try: %v, want [1 1] (the reset starts over)", a)
	}
	verify(t, e)
}

var remoteTries atomic.Int32

// RemoteUnreliable fails until fixed; it runs on another task queue.
func RemoteUnreliable(ctx context.Context) (string, error) {
	remoteTries.Add(1)
	if !flakyFixedRemote.Load() {
		return "", errors.New("upstream down")
	}
	return fmt.Sprintf("done at attempt %d", activity.GetInfo(ctx).Attempt), nil
}

var flakyFixedRemote atomic.Bool

// CallsRemote runs RemoteUnreliable on the "remote" task queue.
func CallsRemote(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "pause-remote", StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Hour}})
	var s string
	err := workflow.ExecuteActivity(ctx, RemoteUnreliable).Get(ctx, &s)
	return s, err
}

// An activity on another task queue is its own job: pausing it pauses
// that job, a reset that keeps it paused releases it from its retry delay
// but leaves it unclaimable, and the unpause runs it, as its first
// attempt again.
func TestRemoteActivityPauseAndReset(t *testing.T) {
	e := open(t)
	remoteTries.Store(0)
	flakyFixedRemote.Store(false)
	startWorker(t, e, "pause-main", worker.Options{RetryInlineThreshold: time.Millisecond}, func(w worker.Worker) {
		w.RegisterWorkflow(CallsRemote)
	})
	startWorker(t, e, "pause-remote", worker.Options{RetryInlineThreshold: time.Millisecond}, func(w worker.Worker) {
		w.RegisterActivity(RemoteUnreliable)
	})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "remote-pause", TaskQueue: "pause-main"}, CallsRemote)
	if err != nil {
		t.Fatal(err)
	}
	taskID := ""
	waitRunIs(t, ctx, e, c, "remote-pause", "its activity task waiting for its retry", func(*engine.Job) bool {
		page, err := c.ListWorkflows(ctx, engine.ListQuery{Queue: "pause-remote", Status: engine.StatusRetrying})
		if err == nil && len(page.Jobs) == 1 {
			taskID = page.Jobs[0].WorkflowID
			return true
		}
		return false
	})
	sel := client.ActivitySelector{WorkflowID: "remote-pause", ActivityType: "RemoteUnreliable"}
	if _, err := c.PauseActivity(ctx, client.PauseActivityOptions{ActivitySelector: sel, Reason: "hold"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetActivity(ctx, client.ResetActivityOptions{ActivitySelector: sel, KeepPaused: true}); err != nil {
		t.Fatal(err)
	}
	task, err := c.DescribeWorkflow(ctx, taskID, "")
	if err != nil || task.Status != engine.StatusQueued || task.Pause == nil || task.AttemptBase != task.Attempt {
		t.Fatalf("activity task after pause and reset = %+v, %v", task, err)
	}
	if si := stepOf(t, ctx, c, "remote-pause"); si.Pause == nil {
		t.Fatalf("the run's step does not show the pause: %+v", si)
	}
	flakyFixedRemote.Store(true)
	if _, err := c.UnpauseActivity(ctx, client.UnpauseActivityOptions{ActivitySelector: sel}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "done at attempt 1" {
		t.Fatalf("result %q, %v", got, err)
	}
	if n := remoteTries.Load(); n != 2 {
		t.Fatalf("%d tries, want 2", n)
	}
	verify(t, e)
}

// The errors an operator meets: no such activity, a run that ended.
func TestActivityOperationErrors(t *testing.T) {
	e := open(t)
	startWorker(t, e, "ae", worker.Options{}, registerPause)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "ae", TaskQueue: "ae"}, Just)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.PauseActivity(ctx, client.PauseActivityOptions{ActivitySelector: client.ActivitySelector{WorkflowID: "ae", ActivityID: "1"}})
	if !errors.Is(err, engine.ErrJobClosed) {
		t.Fatalf("pause of an ended run's activity: %v, want ErrJobClosed", err)
	}
	if err := c.PauseWorkflowExecution(ctx, client.PauseWorkflowExecutionOptions{WorkflowID: "ae"}); !errors.Is(err, engine.ErrJobClosed) {
		t.Fatalf("pause of an ended run: %v, want ErrJobClosed", err)
	}
	if err := c.PauseWorkflowExecution(ctx, client.PauseWorkflowExecutionOptions{WorkflowID: "nobody"}); !errors.Is(err, engine.ErrUnknownJob) {
		t.Fatalf("pause of an unknown run: %v, want ErrUnknownJob", err)
	}
	if _, err := c.UpdateActivityOptions(ctx, client.UpdateActivityOptionsRequest{ActivitySelector: client.ActivitySelector{WorkflowID: "ae", MatchAll: true}}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("update-options changing nothing: %v, want ErrInvalidCommand", err)
	}
}

// A run paused mid-turn stays paused across leader changes
// (HEDDLE_SDK_BACKEND=cluster only): the leadership moves right after the
// pause, the run's turn ends under the new leader (its running activity
// finishes, the next does not start), nobody claims it after another move,
// and its unpause lets it finish.
func TestPauseUnderLeaderFailover(t *testing.T) {
	if !overCluster() {
		t.Skip("runs against a three-node cluster: HEDDLE_SDK_BACKEND=cluster")
	}
	e := open(t)
	cl := remote(t, e)
	wf := "pause-failover"
	started := make(chan struct{})
	pauseStarted.Store(wf, started)
	pauseGates.fresh(wf)
	startWorker(t, e, "pf", worker.Options{LeaseTTL: 10 * time.Second}, registerPause)
	c := client.New(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: "pf"}, TwoSteps)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("HeldOpen never started")
	}
	transfer := func() {
		t.Helper()
		before, _ := cl.Status(ctx)
		if err := cl.TransferLeader(ctx); err != nil {
			t.Fatalf("transfer the leadership: %v", err)
		}
		for {
			st, err := cl.Status(ctx)
			if err == nil && st.LeaderID != "" && st.LeaderID != before.LeaderID {
				t.Logf("leader %s → %s", before.LeaderID, st.LeaderID)
				return
			}
			if ctx.Err() != nil {
				t.Fatal("no new leader")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pauseRun(t, ctx, c, wf)
	transfer()
	close(pauseGates.of(wf))
	// The turn finishes on the new leader; e (the first leader's engine)
	// still applies every write, so its commits pace the wait.
	waitRunIs(t, ctx, e, c, wf, "paused and released", func(j *engine.Job) bool {
		return j.Status != engine.StatusRunning && j.Pause != nil
	})
	transfer()
	j, err := c.DescribeWorkflow(ctx, wf, "")
	if err != nil || j.Pause == nil || j.Status == engine.StatusRunning || pauseCalls.get(wf+"/after") != 0 {
		t.Fatalf("after two leader changes: %+v, %v; After ran %d times", j, err, pauseCalls.get(wf+"/after"))
	}
	unpauseRun(t, ctx, c, wf)
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "gated after" {
		t.Fatalf("result %q, %v", got, err)
	}
	verify(t, e)
}

// A paused run stays paused when the process restarts: the engine reopens
// its directory, its timer (which fired while it was paused) is recorded, a
// new worker passes it by (a run started later on its queue completes
// first), and the unpause lets it finish.
func TestPauseSurvivesRestart(t *testing.T) {
	if overHTTP() {
		t.Skip("restarts an embedded engine on its directory")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(e)
	w := startWorker(t, e, "prs", worker.Options{}, registerPause)
	wf := "restart-paused"
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: "prs"}, SleepThenAct, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitRunIs(t, ctx, e, c, wf, "Waiting", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })
	pauseRun(t, ctx, c, wf)
	waitRunIs(t, ctx, e, c, wf, "woken by its timer, and held", func(j *engine.Job) bool { return j.Status == engine.StatusQueued })
	stopOK(t, w)
	closeOK(t, e)

	e2, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e2) })
	c2 := client.New(e2)
	j, err := c2.DescribeWorkflow(ctx, wf, "")
	if err != nil || j.Pause == nil || j.Pause.Reason != "investigating" || j.Status != engine.StatusQueued {
		t.Fatalf("after the restart: %+v, %v", j, err)
	}
	later, err := c2.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "restart-later", TaskQueue: "prs"}, Just)
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, e2, "prs", worker.Options{}, registerPause)
	if err := later.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if j, err := c2.DescribeWorkflow(ctx, wf, ""); err != nil || j.Status != engine.StatusQueued || j.Attempt != 1 {
		t.Fatalf("the paused run after a later run completed: %+v, %v", j, err)
	}
	unpauseRun(t, ctx, c2, wf)
	if err := c2.GetWorkflow(ctx, wf, "").Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	verify(t, e2)
}

var explicitTries atomic.Int32

// ExplicitFlaky fails its first try; it heartbeats, so it runs on the
// explicit path (a step lease per try).
func ExplicitFlaky(ctx context.Context) (string, error) {
	activity.RecordHeartbeat(ctx)
	if explicitTries.Add(1) == 1 {
		return "", errors.New("first try fails")
	}
	return "ok", nil
}

// CallsExplicit runs ExplicitFlaky with a heartbeat timeout.
func CallsExplicit(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{HeartbeatTimeout: 10 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 3}})
	var s string
	err := workflow.ExecuteActivity(ctx, ExplicitFlaky).Get(ctx, &s)
	return s, err
}

// pauseAroundLease pauses the run just before the second LeaseStep (the
// retry's) and unpauses it right after the engine refused the lease as
// paused, before the worker sees either: the step parks on a pause that
// is already over.
type pauseAroundLease struct {
	engine.Service
	e     *embedded.Engine
	calls atomic.Int32
	t     *testing.T
}

func (s *pauseAroundLease) LeaseStep(ctx context.Context, c engine.LeaseStep) (*engine.StepResult, error) {
	if s.calls.Add(1) != 2 {
		return s.Service.LeaseStep(ctx, c)
	}
	if _, err := s.e.Pause(ctx, engine.Pause{Target: engine.Target{Job: c.Job}}); err != nil {
		s.t.Errorf("pause: %v", err)
	}
	res, err := s.Service.LeaseStep(ctx, c)
	if err == nil && !res.Paused {
		s.t.Errorf("a lease of a paused run was not refused: %+v", res)
	}
	if _, err := s.e.Unpause(ctx, engine.Unpause{Target: engine.Target{Job: c.Job}}); err != nil {
		s.t.Errorf("unpause: %v", err)
	}
	return res, err
}

// A step refused its lease because its run was paused is tried again once
// the run is unpaused, even when the unpause came before the worker saw
// the pause: the unpause is news to the parked step, and the run does not
// wait for ever.
func TestStepParkedOnAPauseThatIsOver(t *testing.T) {
	if overCluster() {
		t.Skip("pauses through the first node's engine, which a cluster's follower may be")
	}
	e := open(t)
	explicitTries.Store(0)
	svc := &pauseAroundLease{Service: service(t, e), e: e, t: t}
	startWorkerOn(t, svc, "park", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(CallsExplicit)
		w.RegisterActivity(ExplicitFlaky)
	})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "parked-on-pause", TaskQueue: "park"}, CallsExplicit)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "ok" {
		dumpJobs(t, e)
		t.Fatalf("result %q, %v", got, err)
	}
	if n := svc.calls.Load(); n < 3 {
		t.Fatalf("%d step leases, want the refused one and another", n)
	}
	verify(t, e)
}
