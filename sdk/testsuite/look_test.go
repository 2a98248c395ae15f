package testsuite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/heddlewf/heddle/storage"
)

// TestLookJudgesOneStateOfTheEngine is the regression test of a flake of
// TestPortActivityTimeouts: a look read the engine's deadlines while the
// run was in a turn (no timer pending) and its running jobs after the
// turn's Wait had committed (the run Waiting, for a retry timer). Judged
// together, the two reads made every run look idle with only the run
// timeout ahead, and the driver moved the clock ten years: the run timed
// out. The commit's notification comes after its data can be read, so
// the driver's check that nothing committed during the look can miss
// it. A look must judge one state of the engine: here a Wait commits
// between the look's reads (lookBetweenReads), and the look must see the
// run either in its turn (not quiet) or waiting for its timer.
func TestLookJudgesOneStateOfTheEngine(t *testing.T) {
	ctx := context.Background()
	env := newEnvironment(nil)
	env.tl = newTimeline(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	lr, err := env.open(DefaultTaskQueue)
	if err != nil {
		t.Fatal(err)
	}
	env.run = lr
	defer func() { _ = lr.eng.Close() }()
	run, err := lr.cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: DefaultWorkflowID, TaskQueue: DefaultTaskQueue,
		WorkflowRunTimeout: DefaultWorkflowRunTimeout}, "Idle")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.ParseUint(run.GetRunID(), 10, 64)
	lr.rootID, lr.root = run.GetID(), engine.JobID(id)
	claimed, err := lr.eng.Claim(ctx, engine.Claim{Queue: DefaultTaskQueue, Owner: "test", Max: 1, LeaseMS: leaseTTL.Milliseconds()})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d jobs", err, len(claimed))
	}
	j := claimed[0]
	timerAt := env.tl.Now().Add(10 * time.Millisecond)
	lookBetweenReads = func() {
		lookBetweenReads = nil // the first look only
		_, err := lr.eng.Wait(ctx, engine.Wait{LeaseRef: j.Lease(), SeenSeq: j.LastSeq,
			Spec: engine.WaitSpec{Timers: []engine.Timer{{ID: "retry", FireMS: timerAt.UnixMilli()}}}})
		if err != nil {
			t.Errorf("wait: %v", err)
		}
	}
	defer func() { lookBetweenReads = nil }()
	s, err := env.look(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lookBetweenReads != nil {
		t.Fatal("the look did not read the engine through lookBetweenReads")
	}
	if s.quiet && !s.next.Equal(timerAt) {
		t.Fatalf("the look found every run idle with %v the next deadline (reasons %q); the run waits for its timer at %v",
			s.next, s.why, timerAt)
	}
	// The next look sees the run waiting and skips to its timer.
	s, err = env.look(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s.quiet || !s.next.Equal(timerAt) {
		t.Fatalf("look after the wait: quiet %v, next %v (reasons %q); want quiet with the timer at %v next", s.quiet, s.next, s.why, timerAt)
	}
}

// TestClockStopsAtAnAnswerTimeout: a step that asks a person waits for the
// answer's timeout (NeedsUserTimeout), a step deadline of the engine. The
// clock skips to it, and the step fails there with nobody's answer,
// instead of the clock skipping past it to the run timeout.
func TestClockStopsAtAnAnswerTimeout(t *testing.T) {
	var ts WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions(func(context.Context) error { return activity.NewNeedsUserError("ship it?") },
		activity.RegisterOptions{Name: "Ask"})
	env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{NeedsUserTimeout: time.Hour, StartToCloseTimeout: time.Minute})
		start := workflow.Now(ctx)
		err := workflow.ExecuteActivity(ctx, "Ask").Get(ctx, nil)
		if err == nil || !strings.Contains(err.Error(), "nobody answered within 1h0m0s") {
			return "", fmt.Errorf("the step ended with %v, want nobody's answer", err)
		}
		return workflow.Now(ctx).Sub(start).String(), nil
	})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	var waited string
	if err := env.GetWorkflowResult(&waited); err != nil {
		t.Fatal(err)
	}
	if waited != "1h0m0s" {
		t.Fatalf("the step failed after %s of workflow time, want the answer timeout's 1h0m0s", waited)
	}
}

// TestSchedulerWaitsForTheCallbacksOfAnInstant is the regression test of a
// flake of TestCallbackBeforeTimerOfTheSameInstant: the engine's scheduler,
// woken by the commit before the driver moved the clock, read the moved
// clock and fired the run's timer before the delayed callback of the same
// instant had signalled, and the run saw its timer first. Here the
// scheduler is woken after the clock moved (advanceBetweenSteps) and given
// time to look; the timer must still be pending, and the signal must win.
func TestSchedulerWaitsForTheCallbacksOfAnInstant(t *testing.T) {
	var ts WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	fired := false
	advanceBetweenSteps = func() {
		advanceBetweenSteps = nil             // the first move only
		env.run.eng.NotifyCommitted(nil, nil) // wakes the scheduler
		// The scheduler firing the timer here is what must not happen, so
		// the wait is bounded; a slow machine can only hide the bug.
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			var ev engineView
			if err := env.run.eng.View(context.Background(), func(r *storage.Reader) (err error) {
				ev, err = readEngine(r, env.run.root, env.tl.Now())
				return err
			}); err != nil {
				t.Errorf("reading the engine: %v", err)
				return
			}
			if ev.deadlines[0] == 0 {
				fired = true
				return
			}
		}
	}
	defer func() { advanceBetweenSteps = nil }()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("go", "signal") }, time.Hour)
	env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
		out := ""
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(workflow.GetSignalChannel(ctx, "go"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &out) })
		sel.AddFuture(workflow.NewTimer(ctx, time.Hour), func(workflow.Future) { out = "timer" })
		sel.Select(ctx)
		return out, nil
	})
	if fired {
		t.Fatal("the scheduler fired the timer after the clock moved and before the callback of its instant ran")
	}
	var got string
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if got != "signal" {
		t.Fatalf("the run took %q first, want the signal of the callback due with its timer", got)
	}
}
