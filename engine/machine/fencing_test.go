package machine_test

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// After a lease expires and the job is reclaimed and claimed again, every
// write by the old attempt is refused and changes nothing.
func TestFencingOldAttemptAfterReclaim(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	old := h.claimOne(1000)
	oldRef := engine.LeaseRef{Job: id, Attempt: old.Attempt}
	h.must(&engine.CommitStep{LeaseRef: oldRef, Step: "a", Type: "activity_completed", Payload: []byte("1")})

	h.now += 1000 // the lease expires exactly now
	r := h.must(&engine.Reclaim{Max: 10}).(*engine.SweepResult)
	if len(r.Jobs) != 1 || r.Jobs[0] != id {
		t.Fatalf("reclaim = %+v, want job %d", r, id)
	}
	if ev := h.history(id)[h.job(id).LastSeq-1]; ev.Type != engine.EventJobRequeued || ev.Reason != engine.ReasonLeaseExpired {
		t.Fatalf("reclaim wrote %+v", ev)
	}

	stale := []struct {
		name string
		cmd  engine.Command
	}{
		{"append", &engine.AppendEvents{LeaseRef: oldRef, Events: []engine.NewEvent{{Type: "activity_started", Step: "b"}}}},
		{"commit", &engine.CommitStep{LeaseRef: oldRef, Step: "b", Type: "activity_completed"}},
		{"wait", &engine.Wait{LeaseRef: oldRef, Spec: engine.WaitSpec{Signals: []string{"s"}}}},
		{"complete", &engine.Complete{LeaseRef: oldRef}},
		{"fail", &engine.Fail{LeaseRef: oldRef}},
		{"requeue", &engine.Requeue{LeaseRef: oldRef, DelayMS: 5}},
	}
	Check := func(phase string) {
		t.Helper()
		for _, s := range stale {
			before := h.snapshot()
			_, err := h.apply(s.cmd)
			var se *engine.StaleAttemptError
			if !errors.Is(err, engine.ErrStaleAttempt) || !errors.As(err, &se) || se.Attempt != old.Attempt {
				t.Fatalf("%s: %s by the old attempt: %v, want ErrStaleAttempt", phase, s.name, err)
			}
			sameStore(t, before, h.snapshot())
		}
		before := h.snapshot()
		hb := h.must(&engine.Heartbeat{Leases: []engine.LeaseRef{oldRef}, LeaseMS: 1000}).(*engine.HeartbeatResult)
		if len(hb.Refused) != 1 || hb.Refused[0].Code != engine.StaleAttemptCode {
			t.Fatalf("%s: heartbeat by the old attempt: %+v, want refused", phase, hb)
		}
		sameStore(t, before, h.snapshot())
	}
	Check("reclaimed, not yet claimed")

	fresh := h.claimOne(1000)
	if fresh.Attempt != old.Attempt+1 {
		t.Fatalf("new attempt %d, want %d", fresh.Attempt, old.Attempt+1)
	}
	Check("claimed by a new attempt")

	// The new attempt writes freely, and its heartbeat is accepted.
	newRef := engine.LeaseRef{Job: id, Attempt: fresh.Attempt}
	hb := h.must(&engine.Heartbeat{Leases: []engine.LeaseRef{newRef, oldRef}, LeaseMS: 2000}).(*engine.HeartbeatResult)
	if len(hb.Refused) != 1 || hb.Refused[0].LeaseRef != oldRef {
		t.Fatalf("mixed heartbeat refused %+v, want only the old attempt", hb.Refused)
	}
	if got := h.job(id).LeaseExpiryMS; got != h.now+2000 {
		t.Fatalf("lease expiry %d, want %d", got, h.now+2000)
	}
	h.must(&engine.CommitStep{LeaseRef: newRef, Step: "b", Type: "activity_completed"})
	h.must(&engine.Complete{LeaseRef: newRef})
	h.verify()
}

// Suspending a running job ends its lease: the worker is fenced out.
func TestSuspendFencesRunningAttempt(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, engine.StatusRunning, "wf")
	h.must(&engine.Suspend{Target: engine.Target{Job: ref.Job}, Reason: "operator"})
	h.mustFail(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "x"}}}, engine.ErrStaleAttempt)
	h.must(&engine.Resume{Target: engine.Target{Job: ref.Job}})
	c := h.claimOne(1000)
	if c.Attempt != ref.Attempt+1 {
		t.Fatalf("after resume the claim has attempt %d, want %d", c.Attempt, ref.Attempt+1)
	}
	h.mustFail(&engine.Complete{LeaseRef: ref}, engine.ErrStaleAttempt)
	h.verify()
}

// A Waiting or Parked job is never reclaimed, however old its lease.
func TestWaitingJobIsNeverReclaimed(t *testing.T) {
	for _, park := range []bool{false, true} {
		h := newHarness(t)
		id := h.create("wf")
		c := h.claimOne(1000)
		h.must(&engine.Wait{LeaseRef: engine.LeaseRef{Job: id, Attempt: c.Attempt}, Spec: engine.WaitSpec{Signals: []string{"go"}, Park: park}, SeenSeq: c.LastSeq})
		for _, jump := range []int64{1000, 1, 3600_000, 365 * 24 * 3600_000} {
			h.now += jump
			if r := h.must(&engine.Reclaim{Max: 100}).(*engine.SweepResult); len(r.Jobs) != 0 {
				t.Fatalf("park=%v: reclaim took %v from a waiting job", park, r.Jobs)
			}
		}
		want := engine.StatusWaiting
		if park {
			want = engine.StatusParked
		}
		if got := h.job(id).Status; got != want {
			t.Fatalf("park=%v: status %s, want %s", park, got, want)
		}
		h.must(&engine.Signal{Target: engine.Target{WorkflowID: "wf"}, Name: "go"})
		if got := h.job(id).Status; got != engine.StatusQueued {
			t.Fatalf("after the signal: %s, want Queued", got)
		}
		h.verify()
	}
}

// A heartbeat that arrives before expiry keeps the job from being reclaimed.
func TestHeartbeatDefersReclaim(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(1000)
	h.now += 900
	h.must(&engine.Heartbeat{Leases: []engine.LeaseRef{{Job: id, Attempt: c.Attempt}}, LeaseMS: 1000})
	h.now += 900 // past the first lease, within the renewed one
	if r := h.must(&engine.Reclaim{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
		t.Fatalf("reclaimed a job with a renewed lease: %v", r.Jobs)
	}
	h.now += 100
	if r := h.must(&engine.Reclaim{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 1 {
		t.Fatalf("renewed lease expired but reclaim took %v", r.Jobs)
	}
	h.verify()
}
