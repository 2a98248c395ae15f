package engine

import (
	"errors"
	"testing"
)

// After a lease expires and the job is reclaimed and claimed again, every
// write by the old attempt is refused and changes nothing.
func TestFencingOldAttemptAfterReclaim(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	old := h.claimOne(1000)
	oldRef := LeaseRef{Job: id, Attempt: old.Attempt}
	h.must(&CommitStep{LeaseRef: oldRef, Step: "a", Type: "activity_completed", Payload: []byte("1")})

	h.now += 1000 // the lease expires exactly now
	r := h.must(&Reclaim{Max: 10}).(*SweepResult)
	if len(r.Jobs) != 1 || r.Jobs[0] != id {
		t.Fatalf("reclaim = %+v, want job %d", r, id)
	}
	if ev := h.history(id)[h.job(id).LastSeq-1]; ev.Type != EventJobRequeued || ev.Reason != ReasonLeaseExpired {
		t.Fatalf("reclaim wrote %+v", ev)
	}

	stale := []struct {
		name string
		cmd  Command
	}{
		{"append", &AppendEvents{LeaseRef: oldRef, Events: []NewEvent{{Type: "activity_started", Step: "b"}}}},
		{"commit", &CommitStep{LeaseRef: oldRef, Step: "b", Type: "activity_completed"}},
		{"wait", &Wait{LeaseRef: oldRef, Spec: WaitSpec{Signals: []string{"s"}}}},
		{"complete", &Complete{LeaseRef: oldRef}},
		{"fail", &Fail{LeaseRef: oldRef}},
		{"requeue", &Requeue{LeaseRef: oldRef, DelayMS: 5}},
	}
	Check := func(phase string) {
		t.Helper()
		for _, s := range stale {
			before := h.snapshot()
			_, err := h.apply(s.cmd)
			var se *StaleAttemptError
			if !errors.Is(err, ErrStaleAttempt) || !errors.As(err, &se) || se.Attempt != old.Attempt {
				t.Fatalf("%s: %s by the old attempt: %v, want ErrStaleAttempt", phase, s.name, err)
			}
			sameStore(t, before, h.snapshot())
		}
		before := h.snapshot()
		hb := h.must(&Heartbeat{Leases: []LeaseRef{oldRef}, LeaseMS: 1000}).(*HeartbeatResult)
		if len(hb.Refused) != 1 || hb.Refused[0].Code != StaleAttemptCode {
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
	newRef := LeaseRef{Job: id, Attempt: fresh.Attempt}
	hb := h.must(&Heartbeat{Leases: []LeaseRef{newRef, oldRef}, LeaseMS: 2000}).(*HeartbeatResult)
	if len(hb.Refused) != 1 || hb.Refused[0].LeaseRef != oldRef {
		t.Fatalf("mixed heartbeat refused %+v, want only the old attempt", hb.Refused)
	}
	if got := h.job(id).LeaseExpiryMS; got != h.now+2000 {
		t.Fatalf("lease expiry %d, want %d", got, h.now+2000)
	}
	h.must(&CommitStep{LeaseRef: newRef, Step: "b", Type: "activity_completed"})
	h.must(&Complete{LeaseRef: newRef})
	h.verify()
}

// Suspending a running job ends its lease: the worker is fenced out.
func TestSuspendFencesRunningAttempt(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, StatusRunning, "wf")
	h.must(&Suspend{Target: Target{Job: ref.Job}, Reason: "operator"})
	h.mustFail(&AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: "x"}}}, ErrStaleAttempt)
	h.must(&Resume{Target: Target{Job: ref.Job}})
	c := h.claimOne(1000)
	if c.Attempt != ref.Attempt+1 {
		t.Fatalf("after resume the claim has attempt %d, want %d", c.Attempt, ref.Attempt+1)
	}
	h.mustFail(&Complete{LeaseRef: ref}, ErrStaleAttempt)
	h.verify()
}

// A Waiting or Parked job is never reclaimed, however old its lease.
func TestWaitingJobIsNeverReclaimed(t *testing.T) {
	for _, park := range []bool{false, true} {
		h := newHarness(t)
		id := h.create("wf")
		c := h.claimOne(1000)
		h.must(&Wait{LeaseRef: LeaseRef{Job: id, Attempt: c.Attempt}, Spec: WaitSpec{Signals: []string{"go"}, Park: park}, SeenSeq: c.LastSeq})
		for _, jump := range []int64{1000, 1, 3600_000, 365 * 24 * 3600_000} {
			h.now += jump
			if r := h.must(&Reclaim{Max: 100}).(*SweepResult); len(r.Jobs) != 0 {
				t.Fatalf("park=%v: reclaim took %v from a waiting job", park, r.Jobs)
			}
		}
		want := StatusWaiting
		if park {
			want = StatusParked
		}
		if got := h.job(id).Status; got != want {
			t.Fatalf("park=%v: status %s, want %s", park, got, want)
		}
		h.must(&Signal{Target: Target{WorkflowID: "wf"}, Name: "go"})
		if got := h.job(id).Status; got != StatusQueued {
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
	h.must(&Heartbeat{Leases: []LeaseRef{{Job: id, Attempt: c.Attempt}}, LeaseMS: 1000})
	h.now += 900 // past the first lease, within the renewed one
	if r := h.must(&Reclaim{Max: 10}).(*SweepResult); len(r.Jobs) != 0 {
		t.Fatalf("reclaimed a job with a renewed lease: %v", r.Jobs)
	}
	h.now += 100
	if r := h.must(&Reclaim{Max: 10}).(*SweepResult); len(r.Jobs) != 1 {
		t.Fatalf("renewed lease expired but reclaim took %v", r.Jobs)
	}
	h.verify()
}
