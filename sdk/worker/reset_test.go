package worker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// resetSteps counts the runs of each ResetStep input; resetFixed is the
// fix deployed between a run that failed and its reset.
var (
	resetStepsMu sync.Mutex
	resetSteps   = map[string]int{}
	resetFixed   atomic.Bool
)

// ResetStep is an activity with a bug when asked for "b" until the fix.
func ResetStep(_ context.Context, name string) (string, error) {
	resetStepsMu.Lock()
	resetSteps[name]++
	n := resetSteps[name]
	resetStepsMu.Unlock()
	if name == "b" && !resetFixed.Load() {
		return "", temporal.NewNonRetryableApplicationError("bug in b", "Bug", nil)
	}
	return fmt.Sprintf("%s#%d", name, n), nil
}

func resetStepRuns(name string) int {
	resetStepsMu.Lock()
	defer resetStepsMu.Unlock()
	return resetSteps[name]
}

// ResetOrder runs an activity, records a side effect, sleeps (a turn ends
// on the timer), waits for the signal "go" (a turn ends blocked on it),
// then runs the activity that has the bug.
func ResetOrder(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}})
	var a, tok, v, b string
	if err := workflow.ExecuteActivity(ctx, ResetStep, "a").Get(ctx, &a); err != nil {
		return "", err
	}
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return "tok" }).Get(&tok); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	if err := workflow.ExecuteActivity(ctx, ResetStep, "b").Get(ctx, &b); err != nil {
		return "", err
	}
	return a + " " + tok + " " + v + " " + b, nil
}

// waitRun waits until the workflow id's run satisfies ok, and returns it.
func waitRun(ctx context.Context, t *testing.T, e *embedded.Engine, c client.Client, wf string, ok func(*engine.Job) bool) *engine.Job {
	t.Helper()
	for {
		changed := e.Committed() // before the read, so no commit is missed
		j, err := c.DescribeWorkflow(ctx, wf, "")
		if err != nil {
			t.Fatal(err)
		}
		if ok(j) {
			return j
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("run %d of %q never got there (it is %s)", j.ID, wf, j.Status)
		}
	}
}

// waitsForSignal: the run's code is blocked on a signal (its wait has no
// timer left).
func waitsForSignal(j *engine.Job) bool {
	return j.Status == engine.StatusWaiting && j.Wait != nil && j.Wait.AnySignal && len(j.Wait.Timers) == 0
}

// A run reset while it waits (to its first turn, signals excluded) starts
// over in a new run: the activity before the wait runs again, the old run
// ends Terminated. That run fails on the activity's bug; after the fix, a
// reset of the failed run to its last turn replays the history (the
// activity, the side effect, the timer), gets the signal again, runs only
// the failed activity anew and completes. The runs link to each other and
// the store verifies.
func TestResetReplaysAndCompletes(t *testing.T) {
	resetStepsMu.Lock()
	clear(resetSteps)
	resetStepsMu.Unlock()
	resetFixed.Store(false)
	e := open(t)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	startWorker(t, e, "reset", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(ResetOrder)
		w.RegisterActivity(ResetStep)
	})
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "reset-order", TaskQueue: "reset"}, ResetOrder)
	if err != nil {
		t.Fatal(err)
	}
	waitRun(ctx, t, e, c, "reset-order", waitsForSignal)

	r1, err := c.ResetWorkflowExecution(ctx, &client.ResetWorkflowExecutionRequest{
		WorkflowExecution: &workflow.Execution{ID: "reset-order", RunID: run.GetRunID()}, ResetType: client.ResetTypeFirstWorkflowTask,
		Reason: "start over", ResetReapplyExcludeTypes: []client.ResetReapplyExcludeType{client.ResetReapplyExcludeTypeSignal}})
	if err != nil {
		t.Fatal(err)
	}
	second := waitRun(ctx, t, e, c, "reset-order", func(j *engine.Job) bool {
		return strconv.FormatUint(uint64(j.ID), 10) == r1.GetRunId() && waitsForSignal(j)
	})
	if got := resetStepRuns("a"); got != 2 {
		t.Fatalf("activity a ran %d times; a reset to the first turn runs it again", got)
	}
	if old, err := c.DescribeWorkflow(ctx, "reset-order", run.GetRunID()); err != nil || old.Status != engine.StatusTerminated || old.ResetNewRunID != second.ID {
		t.Fatalf("the run reset while open: %+v, %v", old, err)
	}
	if err := c.SignalWorkflow(ctx, "reset-order", "", "go", "go"); err != nil {
		t.Fatal(err)
	}
	if err := c.GetWorkflow(ctx, "reset-order", r1.GetRunId()).Get(ctx, nil); err == nil {
		t.Fatal("the second run did not fail on the bug")
	}

	resetFixed.Store(true)
	r2, err := c.ResetWorkflowExecution(ctx, &client.ResetWorkflowExecutionRequest{
		WorkflowExecution: &workflow.Execution{ID: "reset-order"}, ResetType: client.ResetTypeLastWorkflowTask, Reason: "fixed b", RequestId: "fix-1"})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := c.GetWorkflow(ctx, "reset-order", r2.GetRunId()).Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "a#2 tok go b#2"; got != want {
		t.Fatalf("the reset run returned %q, want %q", got, want)
	}
	if a, b := resetStepRuns("a"), resetStepRuns("b"); a != 2 || b != 2 {
		t.Fatalf("activities ran a %d, b %d times; want a 2 (replayed, not run), b 2 (run again)", a, b)
	}
	failed, err := c.DescribeWorkflow(ctx, "reset-order", r1.GetRunId())
	if err != nil || failed.Status != engine.StatusFailed || strconv.FormatUint(uint64(failed.ResetNewRunID), 10) != r2.GetRunId() {
		t.Fatalf("the failed run after its reset: %+v, %v", failed, err)
	}
	last, err := c.DescribeWorkflow(ctx, "reset-order", r2.GetRunId())
	if err != nil || last.ResetBaseRunID != failed.ID || last.Status != engine.StatusCompleted {
		t.Fatalf("the reset run: %+v, %v", last, err)
	}
	// The reset run's whole history (the copy, the reset, the turn after
	// it) replays against the code without nondeterminism.
	hist, err := c.GetWorkflowHistory(ctx, "reset-order", r2.GetRunId())
	if err != nil {
		t.Fatal(err)
	}
	rp := worker.NewWorkflowReplayer()
	rp.RegisterWorkflow(ResetOrder)
	if err := rp.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatalf("replaying the reset run's history: %v", err)
	}
	// A retry of the request answers the same run and resets nothing.
	again, err := c.ResetWorkflowExecution(ctx, &client.ResetWorkflowExecutionRequest{
		WorkflowExecution: &workflow.Execution{ID: "reset-order"}, ResetType: client.ResetTypeLastWorkflowTask, Reason: "fixed b", RequestId: "fix-1"})
	if err != nil || again.GetRunId() != r2.GetRunId() {
		t.Fatalf("retry of the reset: %+v, %v", again, err)
	}
	verify(t, e)
}

// ResetParent starts a child, waits for the signal "go", then for the
// child's result.
func ResetParent(ctx workflow.Context) (string, error) {
	f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "reset-kid"}), ResetKid)
	var exe workflow.Execution
	if err := f.GetChildWorkflowExecution().Get(ctx, &exe); err != nil {
		return "", err
	}
	var v, r string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	if err := f.Get(ctx, &r); err != nil {
		return "", err
	}
	return v + " " + r + " " + exe.RunID, nil
}

// ResetKid waits for the signal "kid-go".
func ResetKid(ctx workflow.Context) (string, error) {
	var s string
	workflow.GetSignalChannel(ctx, "kid-go").Receive(ctx, &s)
	return "kid:" + s, nil
}

// A child started before the reset point is not reset: it keeps running,
// and its result goes to the new run of its parent.
func TestResetKeepsChildren(t *testing.T) {
	e := open(t)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	startWorker(t, e, "reset-kids", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(ResetParent)
		w.RegisterWorkflow(ResetKid)
	})
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "reset-parent", TaskQueue: "reset-kids"}, ResetParent); err != nil {
		t.Fatal(err)
	}
	waitRun(ctx, t, e, c, "reset-parent", waitsForSignal)
	kid := waitRun(ctx, t, e, c, "reset-kid", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })

	r, err := c.ResetWorkflowExecution(ctx, &client.ResetWorkflowExecutionRequest{
		WorkflowExecution: &workflow.Execution{ID: "reset-parent"}, ResetType: client.ResetTypeLastWorkflowTask, Reason: "keep the kid"})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := c.DescribeWorkflow(ctx, "reset-kid", ""); err != nil || k.ID != kid.ID || strconv.FormatUint(uint64(k.ParentID), 10) != r.GetRunId() {
		t.Fatalf("the child after its parent's reset: %+v, %v; want run %d with parent %s", k, err, kid.ID, r.GetRunId())
	}
	if err := c.SignalWorkflow(ctx, "reset-parent", "", "go", "go"); err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWorkflow(ctx, "reset-kid", "", "kid-go", "x"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := c.GetWorkflow(ctx, "reset-parent", r.GetRunId()).Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("go kid:x %d", kid.ID); got != want {
		t.Fatalf("the reset parent returned %q, want %q", got, want)
	}
	verify(t, e)
}

// An update received after the reset point is applied again in the new
// run, whose handler runs again from the state at the point (the total
// before it); left out with ResetReapplyExcludeTypeUpdate, it is not.
func TestResetReappliesUpdates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		exclude []client.ResetReapplyExcludeType
		want    int
	}{
		{"reapplied", nil, 5},
		{"excluded", []client.ResetReapplyExcludeType{client.ResetReapplyExcludeTypeUpdate}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t)
			startWorker(t, e, "reset-upd", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(UpdCounter) })
			c := client.New(service(t, e))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "reset-counter", TaskQueue: "reset-upd"}, UpdCounter)
			if err != nil {
				t.Fatal(err)
			}
			first := waitRun(ctx, t, e, c, "reset-counter", waitsForSignal)
			point := first.LastSeq // the job_waiting of the first turn
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{UpdateID: "a", WorkflowID: "reset-counter", UpdateName: "add",
				Args: []any{5}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err != nil {
				t.Fatal(err)
			}
			var got int
			if err := h.Get(ctx, &got); err != nil || got != 5 {
				t.Fatalf("the update: %d, %v", got, err)
			}
			waitRun(ctx, t, e, c, "reset-counter", waitsForSignal)
			r, err := c.ResetWorkflowExecution(ctx, &client.ResetWorkflowExecutionRequest{
				WorkflowExecution:         &workflow.Execution{ID: "reset-counter", RunID: run.GetRunID()},
				WorkflowTaskFinishEventId: int64(point), Reason: "before the update", ResetReapplyExcludeTypes: tc.exclude})
			if err != nil {
				t.Fatal(err)
			}
			// The workflow id names the new run now: "done" goes to it, after
			// the update it got again (which its code finishes first).
			if err := c.SignalWorkflow(ctx, "reset-counter", "", "done", nil); err != nil {
				t.Fatal(err)
			}
			if err := c.GetWorkflow(ctx, "reset-counter", r.GetRunId()).Get(ctx, &got); err != nil || got != tc.want {
				t.Fatalf("the reset run returned %d, %v; want %d", got, err, tc.want)
			}
			verify(t, e)
		})
	}
}
