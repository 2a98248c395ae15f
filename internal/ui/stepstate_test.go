package ui

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// The engine's step states join the history's steps: a step of both gets
// its info; one only the engine knows is added, pending while it is open;
// one the engine ended is not pending.
func TestMergeStepInfos(t *testing.T) {
	steps := deriveSteps(history(
		ev(engine.EventActivityCompleted, "1", "Reserve"),
		ev(engine.EventActivityAttemptFailed, "2", "Charge", `{"attempt":1,"message":"declined"}`),
		ev(engine.EventTimerScheduled, "4", ""),
	), &engine.Job{})
	infos := []engine.StepInfo{
		{Step: "1", Activity: "Reserve", State: engine.StepSucceeded},
		{Step: "2", Activity: "Charge", State: engine.StepRetrying, Attempt: 1},
		{Step: "3", Activity: "Scrape", State: engine.StepRunning, Attempt: 2, Worker: "w-9", LastHeartbeatMS: 42},
	}
	got := mergeStepInfos(steps, infos)
	want := []struct {
		step, name, state string
		pending           bool
		engine            engine.StepState // StepNone: no info
	}{
		{"1", "Reserve", stepCompleted, false, engine.StepSucceeded},
		{"2", "Charge", stepRetrying, true, engine.StepRetrying},
		{"4", "", stepWaiting, true, engine.StepNone},
		{"3", "Scrape", "", true, engine.StepRunning},
	}
	if len(got) != len(want) {
		t.Fatalf("%d steps, want %d:\n%s", len(got), len(want), stepsLine(got))
	}
	for i, w := range want {
		s := got[i]
		var st engine.StepState
		if s.Engine != nil {
			st = s.Engine.State
		}
		if s.Step != w.step || s.Name != w.name || s.State != w.state || s.Pending != w.pending || st != w.engine {
			t.Errorf("step %d: %s %q %q pending=%v engine=%s, want %+v", i, s.Step, s.Name, s.State, s.Pending, st, w)
		}
	}
	if s := got[3]; s.Engine.Worker != "w-9" || s.Engine.LastHeartbeatMS != 42 || s.Kind != "activity" {
		t.Errorf("the engine's step: %+v %+v", s, s.Engine)
	}
	if n := len(mergeStepInfos(steps[:0:0], nil)); n != 0 {
		t.Errorf("no steps and no infos: %d steps", n)
	}
}

// Every step state has a badge of its own kind; none falls to st-none.
func TestStepClass(t *testing.T) {
	want := map[engine.StepState]string{
		engine.StepPending: "st-queued", engine.StepWaitingDeps: "st-queued", engine.StepLeased: "st-running",
		engine.StepRunning: "st-running", engine.StepSucceeded: "st-completed", engine.StepFailedRetryable: "st-failed",
		engine.StepRetrying: "st-queued", engine.StepFailedResource: "st-failed", engine.StepSwitchingResource: "st-queued",
		engine.StepFailedFatal: "st-failed", engine.StepFailed: "st-failed", engine.StepNeedsUser: "st-waiting",
		engine.StepLeaseTimeout: "st-queued",
	}
	for _, s := range engine.StepStates() {
		if got := stepClass(s); got != want[s] {
			t.Errorf("%s: %q, want %q", s, got, want[s])
		}
	}
	if got := stepClass(engine.StepNone); got != "st-none" {
		t.Errorf("NONE: %q", got)
	}
}
