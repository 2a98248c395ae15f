package machine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// deadlineEntries lists the deadline index as (due time, job) pairs.
func (h *harness) deadlineEntries() []storage.TimeKey {
	h.t.Helper()
	var out []storage.TimeKey
	err := h.db.View(func(r *storage.Reader) error {
		return r.Scan(storage.DeadlinePrefix, nil, false, func(k, _ []byte) (bool, error) {
			tk, err := storage.ParseTimeKey(k)
			out = append(out, tk)
			return err == nil, err
		})
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// lastEvent returns the newest event of job id.
func (h *harness) lastEvent(id engine.JobID) engine.Event {
	h.t.Helper()
	hist := h.history(id)
	return hist[len(hist)-1]
}

// wantFailure decodes payload and checks its type and timeout type.
func wantFailure(t *testing.T, payload []byte, typ string, tt engine.TimeoutType) {
	t.Helper()
	f, err := engine.DecodeFailure(payload)
	if err != nil {
		t.Fatalf("failure payload %q: %v", payload, err)
	}
	if f.Type != typ || f.TimeoutType != tt || !f.NonRetryable || f.Message == "" {
		t.Fatalf("failure %+v, want type %s, timeout type %q, non-retryable, with a message", *f, typ, tt)
	}
}

// Each deadline ends the run as TimedOut when it passes, from every status
// it may find the job in, with the reason and the failure payload naming
// it; nothing happens a millisecond earlier. A running attempt is fenced
// out, and the lease and timers go with the run.
func TestDeadlinesEndRunsInEveryOpenStatus(t *testing.T) {
	kinds := []struct {
		name   string
		set    func(c *engine.CreateJob, ms int64)
		reason string
		tt     engine.TimeoutType
		// claimed: the deadline survives the first claim (schedule-to-start does not).
		claimed bool
	}{
		{"execution", func(c *engine.CreateJob, ms int64) { c.ExecutionTimeoutMS = ms }, engine.ReasonExecutionTimeout, engine.TimeoutWorkflowExecution, true},
		{"run", func(c *engine.CreateJob, ms int64) { c.RunTimeoutMS = ms }, engine.ReasonRunTimeout, engine.TimeoutWorkflowRun, true},
		{"schedule-to-start", func(c *engine.CreateJob, ms int64) { c.ScheduleToStartTimeoutMS = ms }, engine.ReasonScheduleToStart, engine.TimeoutScheduleToStart, false},
	}
	statuses := []engine.Status{engine.StatusQueued, engine.StatusRunning, engine.StatusWaiting, engine.StatusParked, engine.StatusRetrying, engine.StatusDraft, engine.StatusSuspended}
	claimedIn := map[engine.Status]bool{engine.StatusRunning: true, engine.StatusWaiting: true, engine.StatusParked: true, engine.StatusRetrying: true}
	for _, k := range kinds {
		for _, s := range statuses {
			if claimedIn[s] && !k.claimed {
				continue
			}
			t.Run(k.name+"/"+s.String(), func(t *testing.T) {
				h := newHarness(t)
				start := h.now
				create := &engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q"}
				k.set(create, 3_000)
				ref := driveJob(h, create, s)
				h.now = start + 2_999
				if r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
					t.Fatalf("a deadline expired a millisecond early: %+v", r)
				}
				if got := h.job(ref.Job).Status; got != s {
					t.Fatalf("job is %s before its deadline, want %s", got, s)
				}
				h.now = start + 3_000
				r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult)
				if len(r.Jobs) != 1 || r.Jobs[0] != ref.Job || len(r.Ready) != 0 {
					t.Fatalf("ExpireDeadlines = %+v, want job %d timed out", r, ref.Job)
				}
				j := h.job(ref.Job)
				if j.Status != engine.StatusTimedOut || j.LeaseOwner != "" || j.LeaseExpiryMS != 0 || len(j.Timers) != 0 ||
					j.TimeoutAtMS != 0 || j.ClosedMS != h.now {
					t.Fatalf("timed-out record %+v", *j)
				}
				ev := h.lastEvent(ref.Job)
				if ev.Type != engine.EventJobTimedOut || ev.Reason != k.reason || ev.Attempt != j.Attempt {
					t.Fatalf("last event %+v, want job_timed_out with reason %s", ev, k.reason)
				}
				wantFailure(t, ev.Payload, engine.FailureTimeout, k.tt)
				if s == engine.StatusRunning {
					h.mustFail(&engine.Complete{LeaseRef: ref}, engine.ErrStaleAttempt)
					if hb := h.must(&engine.Heartbeat{Leases: []engine.LeaseRef{ref}, LeaseMS: 1000}).(*engine.HeartbeatResult); len(hb.Refused) != 1 {
						t.Fatalf("the timed-out attempt's heartbeat was renewed: %+v", hb)
					}
				}
				// Nothing more happens to it, and its index entry is gone.
				h.now += 10_000_000
				if r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
					t.Fatalf("a timed-out job expired again: %+v", r)
				}
				if c := h.must(&engine.Claim{Queue: "q", Owner: "w", Max: 5, LeaseMS: 1000}).(*engine.ClaimResult); len(c.Jobs) != 0 {
					t.Fatalf("a timed-out job was claimed: %+v", c.Jobs)
				}
				h.mustFail(&engine.Requeue{LeaseRef: engine.LeaseRef{Job: ref.Job}}, engine.ErrIllegalTransition)
				if e := h.deadlineEntries(); len(e) != 0 {
					t.Fatalf("deadline index after the end: %+v", e)
				}
				h.verify()
			})
		}
	}
}

// The first claim clears the schedule-to-start deadline: its index entry is
// left stale and the sweep that reaches it drops it without a word.
func TestScheduleToStartIsClearedByTheFirstClaim(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateJob{Type: "t", Queue: "q", ScheduleToStartTimeoutMS: 1_000, RunTimeoutMS: 60_000}).(*engine.CreateResult).Job
	start := h.now
	if j := h.job(id); j.StartDeadlineMS != start+1_000 || j.TimeoutAtMS != start+1_000 {
		t.Fatalf("record %+v, want a schedule-to-start deadline at %d", *j, start+1_000)
	}
	h.now += 500
	h.claimOneFrom("q")
	j := h.job(id)
	if j.StartDeadlineMS != 0 || j.TimeoutAtMS != start+60_000 {
		t.Fatalf("after the claim: start deadline %d, entry at %d; want 0 and the run deadline %d", j.StartDeadlineMS, j.TimeoutAtMS, start+60_000)
	}
	h.now = start + 5_000
	if r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
		t.Fatalf("a cleared deadline expired: %+v", r)
	}
	if got := h.deadlineEntries(); len(got) != 1 || got[0].AtMS != start+60_000 {
		t.Fatalf("deadline index %+v, want only the run deadline's entry", got)
	}
	h.verify()
}

func (h *harness) claimOneFrom(queue string) engine.ClaimedJob {
	h.t.Helper()
	r := h.must(&engine.Claim{Queue: queue, Owner: "w1", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult)
	if len(r.Jobs) != 1 {
		h.t.Fatalf("claim of %s got %d jobs, want 1", queue, len(r.Jobs))
	}
	return r.Jobs[0]
}

// ContinueAsNew and a workflow retry carry the chain's execution deadline
// to the next run as it is, and give the next run the run timeout afresh
// from its own start; the old run's entry goes stale.
func TestContinueAsNewCarriesTheExecutionDeadline(t *testing.T) {
	for _, retry := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) {
			h := newHarness(t)
			start := h.now
			h.must(&engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q", ExecutionTimeoutMS: 10_000, RunTimeoutMS: 5_000})
			next := func(at int64) engine.JobID {
				h.t.Helper()
				c := h.claimOneFrom("q")
				h.now = start + at
				can := &engine.ContinueAsNew{LeaseRef: c.Lease(), Input: []byte("next")}
				if retry {
					can.Failure = []byte(`{"type":"E","message":"m","nonRetryable":false}`)
				}
				id := h.must(can).(*engine.CreateResult).Job
				j := h.job(id)
				if j.DeadlineMS != start+10_000 || j.RunDeadlineMS != h.now+5_000 || j.RunTimeoutMS != 5_000 ||
					j.TimeoutAtMS != min(start+10_000, h.now+5_000) {
					t.Fatalf("run continued at +%d: deadline %d, run deadline %d (timeout %d), entry %d", at,
						j.DeadlineMS, j.RunDeadlineMS, j.RunTimeoutMS, j.TimeoutAtMS)
				}
				return id
			}
			run2 := next(1_000)
			h.now = start + 5_000 // the first run's run deadline: its entry is stale
			if r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
				t.Fatalf("the first run's run deadline followed the chain: %+v", r)
			}
			run3 := next(5_500)
			h.now = start + 6_000 // run 2's run deadline: stale too
			if r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
				t.Fatalf("the second run's run deadline followed the chain: %+v", r)
			}
			h.now = start + 10_000 // the chain's deadline, before run 3's run deadline
			r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult)
			if len(r.Jobs) != 1 || r.Jobs[0] != run3 || h.job(run3).Status != engine.StatusTimedOut {
				t.Fatalf("ExpireDeadlines = %+v, run 3 %s; want run 3 timed out", r, h.job(run3).Status)
			}
			if ev := h.lastEvent(run3); ev.Reason != engine.ReasonExecutionTimeout {
				t.Fatalf("run 3 ended with %+v, want reason %s", ev, engine.ReasonExecutionTimeout)
			}
			if s := h.job(run2).Status; !s.Terminal() || s == engine.StatusTimedOut {
				t.Fatalf("run 2 is %s", s)
			}
			h.verify()
		})
	}
}

// A run's own run timeout ends it even when the chain has time left.
func TestContinuedRunTimesOutOnItsOwnRunTimeout(t *testing.T) {
	h := newHarness(t)
	start := h.now
	h.must(&engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q", ExecutionTimeoutMS: 60_000, RunTimeoutMS: 2_000})
	c := h.claimOneFrom("q")
	h.now = start + 1_000
	next := h.must(&engine.ContinueAsNew{LeaseRef: c.Lease()}).(*engine.CreateResult).Job
	h.now = start + 3_000
	r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult)
	if len(r.Jobs) != 1 || r.Jobs[0] != next {
		t.Fatalf("ExpireDeadlines = %+v, want the continued run timed out", r)
	}
	if ev := h.lastEvent(next); ev.Reason != engine.ReasonRunTimeout {
		t.Fatalf("continued run ended with %+v, want reason %s", ev, engine.ReasonRunTimeout)
	}
	h.verify()
}

// A deadline that already passed when the job (re)opens is entered as due
// now, never below the index's low-water mark, and ends the run at the next
// sweep: a run continued after its chain's deadline passed (before the
// sweep came), and an operator's retry of a failed run past its deadline.
func TestPassedDeadlineOfAReopenedRunIsDueNow(t *testing.T) {
	t.Run("continue-as-new", func(t *testing.T) {
		h := newHarness(t)
		h.must(&engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q", ExecutionTimeoutMS: 1_000})
		c := h.claimOneFrom("q")
		h.now += 2_000
		next := h.must(&engine.ContinueAsNew{LeaseRef: c.Lease()}).(*engine.CreateResult).Job
		if j := h.job(next); j.TimeoutAtMS != h.now || j.DeadlineMS >= h.now {
			t.Fatalf("next run's entry at %d (deadline %d), want now %d", j.TimeoutAtMS, j.DeadlineMS, h.now)
		}
		h.verify()
		r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult)
		if len(r.Jobs) != 1 || r.Jobs[0] != next || h.job(next).Status != engine.StatusTimedOut {
			t.Fatalf("ExpireDeadlines = %+v; want the next run timed out", r)
		}
		if s := h.job(c.Job).Status; s != engine.StatusCompleted {
			t.Fatalf("the continued run is %s, want Completed", s)
		}
		h.verify()
	})
	t.Run("retry of a failed run", func(t *testing.T) {
		h := newHarness(t)
		h.must(&engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q", ExecutionTimeoutMS: 1_000})
		c := h.claimOneFrom("q")
		h.must(&engine.Fail{LeaseRef: c.Lease()})
		h.now += 5_000
		// The failed run's stale entry is swept: the mark rises to now.
		if r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
			t.Fatalf("a failed run expired: %+v", r)
		}
		h.now++
		h.must(&engine.Requeue{LeaseRef: engine.LeaseRef{Job: c.Job}})
		if j := h.job(c.Job); j.Status != engine.StatusQueued || j.TimeoutAtMS != h.now {
			t.Fatalf("retried run %s with entry at %d, want Queued and due now %d", j.Status, j.TimeoutAtMS, h.now)
		}
		h.verify()
		h.must(&engine.ExpireDeadlines{Max: 10})
		if s := h.job(c.Job).Status; s != engine.StatusTimedOut {
			t.Fatalf("retried run is %s, want TimedOut", s)
		}
		h.verify()
	})
}

// A sweep takes at most Max due entries and says when more were due.
func TestExpireDeadlinesIsBounded(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 5; i++ {
		h.must(&engine.CreateJob{Type: "t", Queue: "q", RunTimeoutMS: int64(100 + i)})
	}
	h.now += 1_000
	r := h.must(&engine.ExpireDeadlines{Max: 3}).(*engine.SweepResult)
	if len(r.Jobs) != 3 || !r.More || r.Jobs[0] != 1 || r.Jobs[2] != 3 {
		t.Fatalf("first sweep %+v, want jobs 1..3 and More", r)
	}
	r = h.must(&engine.ExpireDeadlines{Max: 3}).(*engine.SweepResult)
	if len(r.Jobs) != 2 || r.More {
		t.Fatalf("second sweep %+v, want jobs 4, 5", r)
	}
	h.verify()
}

// The engine's ends become the failed effect of the parent's step with the
// payload the SDK turns into a typed error: a child workflow's execution
// deadline is WorkflowExecution, an activity task's is ScheduleToClose, a
// terminate is a TerminatedError.
func TestEngineEndsBecomeTheParentsFailedEffect(t *testing.T) {
	cases := []struct {
		name, typ string
		end       func(h *harness, child engine.JobID)
		wantType  string
		wantTT    engine.TimeoutType
	}{
		{"child execution timeout", "child", func(h *harness, _ engine.JobID) { h.now += 5_000; h.must(&engine.ExpireDeadlines{Max: 10}) },
			engine.FailureTimeout, engine.TimeoutWorkflowExecution},
		{"activity schedule-to-close", engine.ActivityTypePrefix + "charge", func(h *harness, _ engine.JobID) { h.now += 5_000; h.must(&engine.ExpireDeadlines{Max: 10}) },
			engine.FailureTimeout, engine.TimeoutScheduleToClose},
		{"terminated child", "child", func(h *harness, c engine.JobID) {
			h.must(&engine.Terminate{Target: engine.Target{Job: c}, Reason: "ops"})
		},
			engine.FailureTerminated, ""},
	}
	for _, tc := range cases {
		for _, parentWaits := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/parent waits=%v", tc.name, parentWaits), func(t *testing.T) {
				h := newHarness(t)
				parent := h.must(&engine.CreateJob{Type: "p", Queue: "pq"}).(*engine.CreateResult).Job
				pc := h.claimOneFrom("pq")
				pl := pc.Lease()
				child := h.must(&engine.CreateJob{Type: tc.typ, Queue: "cq", ParentID: parent, ParentStep: "s1", ParentLease: &pl, ExecutionTimeoutMS: 5_000}).(*engine.CreateResult).Job
				if parentWaits {
					h.must(&engine.Wait{LeaseRef: engine.LeaseRef{Job: parent, Attempt: pc.Attempt}, Spec: engine.WaitSpec{Steps: []string{"s1"}}, SeenSeq: pc.LastSeq})
				}
				before := h.job(parent).LastSeq
				tc.end(h, child)
				eff := h.effectOf(parent, "s1")
				if eff == nil || !eff.Failed {
					t.Fatalf("parent effect %+v, want a failed one", eff)
				}
				wantFailure(t, eff.Payload, tc.wantType, tc.wantTT)
				p := h.job(parent)
				if p.LastSeq != before+1 {
					t.Fatalf("parent gained %d events, want 1", p.LastSeq-before)
				}
				ev := h.lastEvent(parent)
				switch {
				case parentWaits && (ev.Type != engine.EventWaitCompleted || p.Status != engine.StatusQueued):
					t.Fatalf("waiting parent: last event %+v, status %s; want wait_completed, Queued", ev, p.Status)
				case !parentWaits && (ev.Type != engine.EventEffectRecorded || ev.Step != "s1" || ev.Payload != nil || p.Status != engine.StatusRunning):
					t.Fatalf("running parent: last event %+v, status %s; want effect_recorded for s1, Running", ev, p.Status)
				}
				h.verify()
			})
		}
	}
}

func (h *harness) effectOf(id engine.JobID, step string) *engine.Effect {
	h.t.Helper()
	var eff *engine.Effect
	err := h.db.View(func(r *storage.Reader) error {
		b, err := r.Get(storage.EffectKey(uint64(id), step))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		eff, err = machine.DecodeEffect(b)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return eff
}

// effect_recorded goes to a parent that no wait_completed reaches and that
// is not blocked: Queued and Running get it; a parent Waiting on something
// else, and a parent that ended, get nothing.
func TestEffectRecordedOnlyForUnblockedParents(t *testing.T) {
	for _, s := range []engine.Status{engine.StatusQueued, engine.StatusRunning, engine.StatusRetrying, engine.StatusSuspended, engine.StatusWaiting, engine.StatusParked, engine.StatusCancelled} {
		t.Run(s.String(), func(t *testing.T) {
			h := newHarness(t)
			ref := driveJob(h, &engine.CreateJob{Type: "p", Queue: "q"}, engine.StatusRunning)
			child := h.must(&engine.CreateJob{Type: "c", Queue: "cq", ParentID: ref.Job, ParentStep: "s1", ParentLease: &ref}).(*engine.CreateResult).Job
			switch s {
			case engine.StatusQueued:
				h.must(&engine.Requeue{LeaseRef: ref})
			case engine.StatusRetrying:
				h.must(&engine.Requeue{LeaseRef: ref, DelayMS: 5_000})
			case engine.StatusSuspended:
				h.must(&engine.Suspend{Target: engine.Target{Job: ref.Job}})
			case engine.StatusWaiting, engine.StatusParked:
				h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}, Park: s == engine.StatusParked}, SeenSeq: h.job(ref.Job).LastSeq})
			case engine.StatusCancelled:
				h.must(&engine.Cancel{Target: engine.Target{Job: ref.Job}})
			}
			before := h.job(ref.Job).LastSeq
			c := h.claimOneFrom("cq")
			h.must(&engine.Complete{LeaseRef: engine.LeaseRef{Job: child, Attempt: c.Attempt}, Result: []byte("ok")})
			p := h.job(ref.Job)
			wantEvent := s != engine.StatusWaiting && s != engine.StatusParked && s != engine.StatusCancelled
			if got := p.LastSeq - before; got != map[bool]uint64{true: 1, false: 0}[wantEvent] {
				t.Fatalf("parent in %s gained %d events", s, got)
			}
			if wantEvent {
				if ev := h.lastEvent(ref.Job); ev.Type != engine.EventEffectRecorded || ev.Step != "s1" {
					t.Fatalf("parent's last event %+v, want effect_recorded of s1", ev)
				}
			}
			if p.Status != s {
				t.Fatalf("parent moved from %s to %s", s, p.Status)
			}
			if eff := h.effectOf(ref.Job, "s1"); (eff != nil) != (s != engine.StatusCancelled) {
				t.Fatalf("parent in %s has effect %+v", s, eff)
			}
			h.verify()
		})
	}
}

// Terminate ends a running job at once: the attempt is fenced out, the
// lease and timers are gone, and the event carries the reason and a
// TerminatedError.
func TestTerminateEndsARunningJobAtOnce(t *testing.T) {
	h := newHarness(t)
	h.create("wf")
	c := h.claimOne(60_000)
	ref := c.Lease()
	h.must(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "marker"}}})
	r := h.must(&engine.Terminate{Target: engine.Target{WorkflowID: "wf"}, Reason: "stuck"}).(*engine.StatusResult)
	if r.Status != engine.StatusTerminated || r.Job != c.Job {
		t.Fatalf("Terminate = %+v", r)
	}
	j := h.job(c.Job)
	if j.LeaseOwner != "" || j.LeaseExpiryMS != 0 || j.ClosedMS != h.now {
		t.Fatalf("terminated record %+v", *j)
	}
	ev := h.lastEvent(c.Job)
	if ev.Type != engine.EventJobTerminated || ev.Reason != "stuck" || ev.Attempt != c.Attempt {
		t.Fatalf("last event %+v", ev)
	}
	wantFailure(t, ev.Payload, engine.FailureTerminated, "")
	if f, _ := engine.DecodeFailure(ev.Payload); f.Message != "terminated: stuck" {
		t.Fatalf("message %q", f.Message)
	}
	h.mustFail(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "marker"}}}, engine.ErrStaleAttempt)
	h.mustFail(&engine.Terminate{Target: engine.Target{Job: c.Job}}, engine.ErrIllegalTransition)
	h.mustFail(&engine.Signal{Target: engine.Target{Job: c.Job}, Name: "s"}, engine.ErrJobClosed)
	h.mustFail(&engine.Requeue{LeaseRef: engine.LeaseRef{Job: c.Job}}, engine.ErrIllegalTransition)
	// A new run of the workflow id may start: the old one is closed.
	h.create("wf")
	h.verify()
}

// The invariants of the engine-owned ends: nothing follows job_timed_out or
// job_terminated, not even the job_requeued that may follow job_failed.
func TestCheckHistoryEngineEnds(t *testing.T) {
	base := []engine.Event{{Type: engine.EventJobCreated}, {Type: engine.EventJobLeased, Attempt: 1, Name: "w", LeaseExpiryMS: 9}}
	tests := []struct {
		name      string
		tail      []engine.Event
		invariant int // -1: legal
		status    engine.Status
	}{
		{"timed out", []engine.Event{{Type: engine.EventJobTimedOut, Reason: engine.ReasonRunTimeout}}, -1, engine.StatusTimedOut},
		{"terminated", []engine.Event{{Type: engine.EventJobTerminated}}, -1, engine.StatusTerminated},
		{"timed out, then a note", []engine.Event{{Type: engine.EventJobTimedOut}, {Type: "marker"}}, -1, engine.StatusTimedOut},
		{"requeued after timed out", []engine.Event{{Type: engine.EventJobTimedOut}, {Type: engine.EventJobRequeued}}, 1, engine.StatusNone},
		{"requeued after terminated", []engine.Event{{Type: engine.EventJobTerminated}, {Type: engine.EventJobRequeued}}, 1, engine.StatusNone},
		{"leased after terminated", []engine.Event{{Type: engine.EventJobTerminated}, {Type: engine.EventJobLeased}}, 1, engine.StatusNone},
		{"terminated twice", []engine.Event{{Type: engine.EventJobTerminated}, {Type: engine.EventJobTerminated}}, 0, engine.StatusNone},
		{"timed out after completed", []engine.Event{{Type: engine.EventJobCompleted}, {Type: engine.EventJobTimedOut}}, 0, engine.StatusNone},
		{"requeued after failed", []engine.Event{{Type: engine.EventJobFailed}, {Type: engine.EventJobRequeued}}, -1, engine.StatusQueued},
	}
	for _, tt := range tests {
		hist := append(append([]engine.Event(nil), base...), tt.tail...)
		for i := range hist {
			hist[i].Seq = uint64(i + 1)
		}
		err := engine.CheckHistory(hist, engine.StatusNone)
		var ie *engine.InvariantError
		switch {
		case tt.invariant < 0 && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.invariant >= 0 && (!errors.As(err, &ie) || ie.Invariant != tt.invariant):
			t.Errorf("%s: error %v, want invariant %d", tt.name, err, tt.invariant)
		case tt.invariant < 0 && engine.DeriveStatus(hist) != tt.status:
			t.Errorf("%s: DeriveStatus = %s, want %s", tt.name, engine.DeriveStatus(hist), tt.status)
		}
	}
}

// An activity task that no worker claims before its schedule-to-start and
// execution (schedule-to-close) deadlines, falling at the same time, ends
// as a schedule-to-start timeout, as Temporal's server orders the two
// timers; a claimed one still ends as schedule-to-close.
func TestEqualScheduleToStartAndCloseDeadlinesReportScheduleToStart(t *testing.T) {
	for _, claimed := range []bool{false, true} {
		t.Run(fmt.Sprintf("claimed=%v", claimed), func(t *testing.T) {
			h := newHarness(t)
			id := h.must(&engine.CreateJob{Type: engine.ActivityTypePrefix + "charge", Queue: "q", ExecutionTimeoutMS: 3_000, ScheduleToStartTimeoutMS: 3_000}).(*engine.CreateResult).Job
			want := engine.TimeoutScheduleToStart
			if claimed {
				h.claimOneFrom("q")
				want = engine.TimeoutScheduleToClose
			}
			h.now += 3_000
			if r := h.must(&engine.ExpireDeadlines{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 1 || r.Jobs[0] != id {
				t.Fatalf("ExpireDeadlines = %+v, want job %d timed out", r, id)
			}
			wantFailure(t, h.lastEvent(id).Payload, engine.FailureTimeout, want)
			h.verify()
		})
	}
}
