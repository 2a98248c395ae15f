package engine

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/storage"
)

func TestCompleteAsyncIsFencedByTheParkedAttempt(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&CreateJob{WorkflowID: "wf/1/1", Type: ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*CreateResult).Job
	c := h.must(&Claim{Queue: "acts", Owner: "w", Max: 1, LeaseMS: 10_000}).(*ClaimResult).Jobs[0]
	ref := LeaseRef{Job: task, Attempt: c.Attempt}
	h.must(&Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq})
	if h.job(task).Status != StatusParked {
		t.Fatalf("parked task is %s", h.job(task).Status)
	}
	before := h.snapshot()
	h.mustFail(&CompleteAsync{LeaseRef: LeaseRef{Job: task, Attempt: c.Attempt + 1}, Result: []byte("ok")}, ErrStaleAttempt)
	h.mustFail(&CompleteAsync{LeaseRef: LeaseRef{Job: parent, Attempt: 1}, Result: []byte("ok")}, ErrInvalidCommand)
	h.mustFail(&CompleteAsync{LeaseRef: ref, Result: []byte("ok"), Error: []byte("x")}, ErrInvalidCommand)
	sameStore(t, before, h.snapshot())

	res := h.must(&CompleteAsync{LeaseRef: ref, Result: []byte("ok")}).(*StatusResult)
	if res.Status != StatusCompleted {
		t.Fatalf("completed into %s", res.Status)
	}
	var eff *Effect
	viewOK(t, h.db, func(r *storage.Reader) error {
		b, err := r.Get(storage.EffectKey(uint64(parent), "1"))
		if err != nil {
			return err
		}
		eff = new(Effect)
		_, err = storage.Decode(b, storage.KindEffect, effectVersion, eff)
		return err
	})
	if string(eff.Payload) != "ok" || eff.Failed {
		t.Fatalf("parent's effect %+v", eff)
	}
	// The same token again: the task ended.
	if _, err := h.apply(&CompleteAsync{LeaseRef: ref, Result: []byte("again")}); !errors.Is(err, ErrStaleAttempt) {
		t.Fatalf("second completion: %v", err)
	}
	hist := h.history(task)
	if n := len(hist); hist[n-3].Reason != ReasonAsyncCompletion || hist[n-2].Name != ReasonAsyncCompletion || hist[n-1].Type != EventJobCompleted {
		t.Fatalf("history tail %+v", hist[n-3:])
	}
	if err := CheckHistory(hist, StatusCompleted); err != nil {
		t.Fatal(err)
	}
	h.verify()
}

func TestCompleteAsyncBeforeTheActivityReturned(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&CreateJob{WorkflowID: "wf/1/1", Type: ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*CreateResult).Job
	c := h.must(&Claim{Queue: "acts", Owner: "w", Max: 1, LeaseMS: 10_000}).(*ClaimResult).Jobs[0]
	ref := LeaseRef{Job: task, Attempt: c.Attempt}
	h.mustFail(&CompleteAsync{LeaseRef: LeaseRef{Job: task, Attempt: c.Attempt + 1}, Result: []byte("ok")}, ErrStaleAttempt)
	if res := h.must(&CompleteAsync{LeaseRef: ref, Result: []byte("ok")}).(*StatusResult); res.Status != StatusCompleted {
		t.Fatalf("completed into %s", res.Status)
	}
	// The worker parks it afterwards: refused as stale.
	h.mustFail(&Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq}, ErrStaleAttempt)
	h.verify()
}

func TestCompleteAsyncFailure(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&CreateJob{WorkflowID: "wf/1/1", Type: ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*CreateResult).Job
	c := h.must(&Claim{Queue: "acts", Owner: "w", Max: 1, LeaseMS: 10_000}).(*ClaimResult).Jobs[0]
	ref := LeaseRef{Job: task, Attempt: c.Attempt}
	h.must(&Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq})
	if res := h.must(&CompleteAsync{LeaseRef: ref, Error: []byte(`{"message":"no"}`)}).(*StatusResult); res.Status != StatusFailed {
		t.Fatalf("failed into %s", res.Status)
	}
	h.verify()
}
