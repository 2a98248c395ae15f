package machine_test

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func TestCompleteAsyncIsFencedByTheParkedAttempt(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&engine.CreateJob{WorkflowID: "wf/1/1", Type: engine.ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*engine.CreateResult).Job
	c := h.must(&engine.Claim{Queue: "acts", Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimResult).Jobs[0]
	ref := engine.LeaseRef{Job: task, Attempt: c.Attempt}
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{engine.AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq})
	if h.job(task).Status != engine.StatusParked {
		t.Fatalf("parked task is %s", h.job(task).Status)
	}
	before := h.snapshot()
	h.mustFail(&engine.CompleteAsync{LeaseRef: engine.LeaseRef{Job: task, Attempt: c.Attempt + 1}, Result: []byte("ok")}, engine.ErrStaleAttempt)
	h.mustFail(&engine.CompleteAsync{LeaseRef: engine.LeaseRef{Job: parent, Attempt: 1}, Result: []byte("ok")}, engine.ErrInvalidCommand)
	h.mustFail(&engine.CompleteAsync{LeaseRef: ref, Result: []byte("ok"), Error: []byte("x")}, engine.ErrInvalidCommand)
	sameStore(t, before, h.snapshot())

	res := h.must(&engine.CompleteAsync{LeaseRef: ref, Result: []byte("ok")}).(*engine.StatusResult)
	if res.Status != engine.StatusCompleted {
		t.Fatalf("completed into %s", res.Status)
	}
	var eff *engine.Effect
	viewOK(t, h.db, func(r *storage.Reader) error {
		b, err := r.Get(storage.EffectKey(uint64(parent), "1"))
		if err != nil {
			return err
		}
		eff = new(engine.Effect)
		_, err = storage.Decode(b, storage.KindEffect, machine.EffectVersion, eff)
		return err
	})
	if string(eff.Payload) != "ok" || eff.Failed {
		t.Fatalf("parent's effect %+v", eff)
	}
	// The same token again: the task ended.
	if _, err := h.apply(&engine.CompleteAsync{LeaseRef: ref, Result: []byte("again")}); !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("second completion: %v", err)
	}
	hist := h.history(task)
	if n := len(hist); hist[n-3].Reason != engine.ReasonAsyncCompletion || hist[n-2].Name != engine.ReasonAsyncCompletion || hist[n-1].Type != engine.EventJobCompleted {
		t.Fatalf("history tail %+v", hist[n-3:])
	}
	if err := engine.CheckHistory(hist, engine.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	h.verify()
}

func TestCompleteAsyncBeforeTheActivityReturned(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&engine.CreateJob{WorkflowID: "wf/1/1", Type: engine.ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*engine.CreateResult).Job
	c := h.must(&engine.Claim{Queue: "acts", Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimResult).Jobs[0]
	ref := engine.LeaseRef{Job: task, Attempt: c.Attempt}
	h.mustFail(&engine.CompleteAsync{LeaseRef: engine.LeaseRef{Job: task, Attempt: c.Attempt + 1}, Result: []byte("ok")}, engine.ErrStaleAttempt)
	if res := h.must(&engine.CompleteAsync{LeaseRef: ref, Result: []byte("ok")}).(*engine.StatusResult); res.Status != engine.StatusCompleted {
		t.Fatalf("completed into %s", res.Status)
	}
	// The worker parks it afterwards: refused as stale.
	h.mustFail(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{engine.AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq}, engine.ErrStaleAttempt)
	h.verify()
}

func TestCompleteAsyncFailure(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&engine.CreateJob{WorkflowID: "wf/1/1", Type: engine.ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*engine.CreateResult).Job
	c := h.must(&engine.Claim{Queue: "acts", Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimResult).Jobs[0]
	ref := engine.LeaseRef{Job: task, Attempt: c.Attempt}
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{engine.AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq})
	if res := h.must(&engine.CompleteAsync{LeaseRef: ref, Error: []byte(`{"message":"no"}`)}).(*engine.StatusResult); res.Status != engine.StatusFailed {
		t.Fatalf("failed into %s", res.Status)
	}
	h.verify()
}
