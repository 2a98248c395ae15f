package machine_test

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func TestCronChain(t *testing.T) {
	h := newSchedHarness(t)
	h.mustFail(&engine.CreateJob{WorkflowID: "c", Type: "t", Queue: "q", CronSchedule: "not a line"}, engine.ErrInvalidCommand)
	h.mustFail(&engine.CreateJob{WorkflowID: "c", Type: "t", Queue: "q", CronSchedule: "TZ=UTC * * * * *"}, engine.ErrInvalidCommand)

	every5 := int64(5 * 60_000)
	first := (schedT0/every5 + 1) * every5
	cr := h.must(&engine.CreateJob{WorkflowID: "c", Type: "t", Queue: "q", Input: []byte("in"), CronSchedule: "*/5 * * * *"}).(*engine.CreateResult)
	j := h.job(cr.Job)
	if j.Status != engine.StatusRetrying || j.ReleaseAtMS != first || j.CronSchedule != "*/5 * * * *" {
		t.Fatalf("first run %s, release at %d (want %d)", j.Status, j.ReleaseAtMS, first)
	}
	// runAt releases the chain's current run at its time, claims it and
	// ends it with end; it returns the next run's record.
	runAt := func(at int64, end func(ref engine.LeaseRef)) *engine.Job {
		t.Helper()
		h.now = at - 1
		h.must(&engine.ReleaseDelayed{Max: 10})
		if cur, _ := h.current("c"); cur.Status != engine.StatusRetrying {
			t.Fatalf("released before its time: %s", cur.Status)
		}
		h.now = at
		h.must(&engine.ReleaseDelayed{Max: 10})
		c := h.claimOne(10_000)
		end(c.Lease())
		next, _ := h.current("c")
		return next
	}
	n2 := runAt(first, func(ref engine.LeaseRef) { h.must(&engine.Complete{LeaseRef: ref, Result: []byte("r1")}) })
	if n2.ID == cr.Job || n2.Status != engine.StatusRetrying || n2.ReleaseAtMS != first+every5 {
		t.Fatalf("second run %+v", n2)
	}
	ev := h.history(n2.ID)[0]
	if string(ev.Payload) != "in" || string(ev.LastResult) != "r1" {
		t.Fatalf("second run's job_created: input %q, last result %q", ev.Payload, ev.LastResult)
	}
	if end := h.history(cr.Job); end[len(end)-1].Reason != engine.ReasonCronNext || h.job(cr.Job).Status != engine.StatusCompleted {
		t.Fatalf("first run ended %+v", end[len(end)-1])
	}
	// A failed run is followed too, and the last completion result stays.
	n3 := runAt(first+every5, func(ref engine.LeaseRef) { h.must(&engine.Fail{LeaseRef: ref, Error: []byte("boom")}) })
	if ev := h.history(n3.ID)[0]; string(ev.LastResult) != "r1" || n3.Status != engine.StatusRetrying {
		t.Fatalf("third run: %s, last result %q", n3.Status, ev.LastResult)
	}
	// A retry within a run keeps the chain and the last result.
	n4 := runAt(first+2*every5, func(ref engine.LeaseRef) {
		h.must(&engine.ContinueAsNew{LeaseRef: ref, Input: []byte("in"), Failure: []byte("again")})
	})
	if ev := h.history(n4.ID)[0]; string(ev.LastResult) != "r1" || n4.CronSchedule == "" || n4.Status != engine.StatusQueued {
		t.Fatalf("retried run: %s, cron %q, last result %q", n4.Status, n4.CronSchedule, ev.LastResult)
	}
	// A run its run timeout ends is followed too (Temporal's cron).
	h.must(&engine.Cancel{Target: engine.Target{WorkflowID: "c"}})
	cr = h.must(&engine.CreateJob{WorkflowID: "c", Type: "t", Queue: "q", Input: []byte("in"), CronSchedule: "*/5 * * * *", RunTimeoutMS: 1000}).(*engine.CreateResult)
	first = (h.now/every5 + 1) * every5
	h.now = first
	h.must(&engine.ReleaseDelayed{Max: 10})
	h.now = first + 999
	h.must(&engine.ExpireDeadlines{Max: 10})
	if s := h.job(cr.Job).Status; s != engine.StatusQueued {
		t.Fatalf("the run timeout counted the wait for the run's time: %s", s)
	}
	h.now = first + 1000
	h.must(&engine.ExpireDeadlines{Max: 10})
	n4, _ = h.current("c")
	if h.job(cr.Job).Status != engine.StatusTimedOut || n4.ID == cr.Job || n4.Status != engine.StatusRetrying || n4.ReleaseAtMS != first+every5 {
		t.Fatalf("after a run timeout: old %s, next %+v", h.job(cr.Job).Status, n4)
	}
	// Cancelling ends the chain.
	h.must(&engine.Cancel{Target: engine.Target{WorkflowID: "c"}})
	if cur, _ := h.current("c"); cur.ID != n4.ID || cur.Status != engine.StatusCancelled {
		t.Fatalf("after cancel: %+v", cur)
	}
	h.verify()
}

func TestCronChildKeepsItsParentWaiting(t *testing.T) {
	h := newSchedHarness(t)
	p, pref := h.runningParent("parent")
	h.must(&engine.CreateJob{WorkflowID: "kid", Type: "t", Queue: "q2", ParentID: p, ParentStep: "c1", ParentLease: pref, CronSchedule: "@hourly"})
	h.now = (schedT0/3600_000 + 1) * 3600_000
	h.must(&engine.ReleaseDelayed{Max: 10})
	c := h.must(&engine.Claim{Queue: "q2", Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimResult).Jobs[0]
	h.must(&engine.Complete{LeaseRef: c.Lease(), Result: []byte("r")})
	var eff []byte
	viewOK(t, h.db, func(r *storage.Reader) error {
		b, err := r.Get(storage.EffectKey(uint64(p), "c1"))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		eff = b
		return err
	})
	if eff != nil {
		t.Fatalf("a cron child's run gave its parent an effect: %+v", eff)
	}
	next, err := h.current("kid")
	if err != nil || next.ParentID != p || next.Status != engine.StatusRetrying {
		t.Fatalf("next child run %+v %v", next, err)
	}
	h.verify()
}

func (h *harness) current(wf string) (*engine.Job, error) {
	h.t.Helper()
	var j *engine.Job
	err := h.db.View(func(r *storage.Reader) error {
		var err error
		j, err = machine.ReadTarget(r, engine.Target{WorkflowID: wf})
		return err
	})
	if err != nil && !errors.Is(err, engine.ErrUnknownJob) {
		h.t.Fatal(err)
	}
	return j, err
}

// CronFirstNow starts a cron chain's first run at once (Queued, no
// hold-back event); the run after it waits for the line's next time as
// usual. Without CronSchedule it is refused.
func TestCronFirstNow(t *testing.T) {
	h := newSchedHarness(t)
	h.mustFail(&engine.CreateJob{WorkflowID: "c", Type: "t", Queue: "q", CronFirstNow: true}, engine.ErrInvalidCommand)

	every5 := int64(5 * 60_000)
	cr := h.must(&engine.CreateJob{WorkflowID: "c", Type: "t", Queue: "q", CronSchedule: "*/5 * * * *", CronFirstNow: true}).(*engine.CreateResult)
	j := h.job(cr.Job)
	if j.Status != engine.StatusQueued || j.CronSchedule != "*/5 * * * *" {
		t.Fatalf("first run %s, cron %q; want Queued at once, of the chain", j.Status, j.CronSchedule)
	}
	if hist := h.history(cr.Job); len(hist) != 1 || hist[0].Type != engine.EventJobCreated {
		t.Fatalf("first run's history %+v, want only job_created", hist)
	}
	c := h.claimOne(10_000)
	if c.Job != cr.Job {
		t.Fatalf("claimed job %d, want the first run %d", c.Job, cr.Job)
	}
	h.must(&engine.Complete{LeaseRef: c.Lease(), Result: []byte("r1")})
	next, _ := h.current("c")
	if want := (schedT0/every5 + 1) * every5; next.ID == cr.Job || next.Status != engine.StatusRetrying || next.ReleaseAtMS != want {
		t.Fatalf("second run %s, release at %d; want Retrying until %d", next.Status, next.ReleaseAtMS, want)
	}
}
