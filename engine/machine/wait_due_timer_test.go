package machine_test

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A wait whose timer is already due must make progress. The worker asks
// again with the same due timer for as long as the engine answers Woken
// without writing anything, so a Woken answer that records nothing would
// spin forever (found by the chaos suite: a commit acknowledged late left
// a workflow's short Sleep due before its Wait, and the worker called Wait
// thousands of times a minute while holding the lease). The wait is taken
// instead, and the scheduler fires the due timer at once.
func TestWaitOnDueTimerIsTaken(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(1000)
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	spec := engine.WaitSpec{AnySignal: true, Timers: []engine.Timer{{ID: "2", FireMS: h.now - 1}}}
	w := h.must(&engine.Wait{LeaseRef: ref, Spec: spec, SeenSeq: c.LastSeq}).(*engine.WaitResult)
	if w.Woken || w.Status != engine.StatusWaiting {
		t.Fatalf("wait on a due timer = %+v, want the job Waiting", w)
	}
	fired := h.must(&engine.FireTimers{Max: 10}).(*engine.SweepResult)
	if len(fired.Jobs) != 1 || h.job(id).Status != engine.StatusQueued {
		t.Fatalf("FireTimers = %+v, job is %s; want the due timer fired and the job Queued", fired, h.job(id).Status)
	}
	h.verify()
}
