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
