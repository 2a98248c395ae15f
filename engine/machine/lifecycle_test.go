package machine_test

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A job's whole life as a trace: created, claimed, steps committed, a timer
// wait, woken by the timer, claimed again, completed.
func TestLifecycleTrace(t *testing.T) {
	h := newHarness(t)
	id := h.create("order-1")
	c := h.claimOne(30_000)
	if c.Attempt != 1 {
		t.Fatalf("first claim attempt = %d, want 1", c.Attempt)
	}
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	h.must(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "activity_started", Step: "charge"}}})
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "charge", Type: "activity_completed", Payload: []byte("ok")})
	h.mustFail(&engine.CommitStep{LeaseRef: ref, Step: "charge", Type: "activity_completed"}, engine.ErrStepCommitted)
	w := h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{TimerID: "t1", TimerAtMS: h.now + 5000}, SeenSeq: h.job(id).LastSeq}).(*engine.WaitResult)
	if w.Woken || w.Status != engine.StatusWaiting {
		t.Fatalf("wait = %+v, want Waiting", w)
	}
	// Not due yet: nothing fires.
	if r := h.must(&engine.FireTimers{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
		t.Fatalf("timer fired early: %+v", r)
	}
	h.now += 5000
	r := h.must(&engine.FireTimers{Max: 10}).(*engine.SweepResult)
	if len(r.Ready) != 1 || r.Ready[0] != id {
		t.Fatalf("fire = %+v, want job %d ready", r, id)
	}
	c2 := h.claimOne(30_000)
	if c2.Attempt != 2 {
		t.Fatalf("second claim attempt = %d, want 2", c2.Attempt)
	}
	h.must(&engine.Complete{LeaseRef: engine.LeaseRef{Job: id, Attempt: 2}, Result: []byte("done")})
	h.verify()

	var types []engine.EventType
	for _, ev := range h.history(id) {
		types = append(types, ev.Type)
	}
	want := []engine.EventType{engine.EventJobCreated, engine.EventJobLeased, "activity_started", "activity_completed",
		engine.EventJobWaiting, engine.EventTimerFired, engine.EventWaitCompleted, engine.EventJobLeased, engine.EventJobCompleted}
	if len(types) != len(want) {
		t.Fatalf("history %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("history %v, want %v", types, want)
		}
	}
	if j := h.job(id); j.Status != engine.StatusCompleted || j.ClosedMS != h.now {
		t.Fatalf("job = %+v", j)
	}
}
