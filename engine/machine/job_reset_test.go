package machine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// resetRun drives a run of workflow id wf through two turns and a signal
// after the second one's wait, the history every reset test starts from:
//
//	1 job_created  2 job_leased  3 activity_completed (step 1)
//	4 activity_attempt_failed (step 2, not ended)  5 timer_scheduled (step 3)
//	6 job_waiting (turn 1 ends)  7 timer_fired  8 wait_completed
//	9 job_leased  10 activity_completed (step 4)  11 job_waiting (turn 2 ends)
//	12 signal_received "approve"  13 signal_received heddle.update
//
// The wait of turn 2 is for the timer 5 only, so the signals wake nothing.
func resetRun(h *harness, wf string) engine.JobID {
	h.t.Helper()
	id := h.create(wf)
	c := h.claimOne(60_000)
	ref := c.Lease()
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, Name: "Reserve", Payload: []byte(`"R"`)})
	h.must(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventActivityAttemptFailed, Step: "2", Name: "Charge", StepAttempt: 1}}})
	h.must(&engine.Wait{LeaseRef: ref, SeenSeq: 4, Spec: engine.WaitSpec{Timers: []engine.Timer{{ID: "3", FireMS: h.now + 1000}}},
		Events: []engine.NewEvent{{Type: engine.EventTimerScheduled, Step: "3"}}})
	h.now += 1000
	h.must(&engine.FireTimers{Max: 10})
	c = h.claimOne(60_000)
	ref = c.Lease()
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "4", Type: engine.EventActivityCompleted, Name: "Ship", Payload: []byte(`"S"`)})
	h.must(&engine.Wait{LeaseRef: ref, SeenSeq: 10, Spec: engine.WaitSpec{Timers: []engine.Timer{{ID: "5", FireMS: h.now + 60_000}}}})
	h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: "approve", Payload: []byte(`"alice"`)})
	h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: engine.UpdateSignalName, Payload: []byte(`{"id":"u1"}`)})
	if got := h.history(id); len(got) != 13 || got[5].Type != engine.EventJobWaiting || got[10].Type != engine.EventJobWaiting {
		h.t.Fatalf("the test's run has the history %v", types(got))
	}
	return id
}

func types(evs []engine.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Type)
		if ev.Step != "" {
			out[i] += ":" + ev.Step
		}
	}
	return out
}

func (h *harness) reset(c *engine.ResetJob) *engine.ResetResult {
	h.t.Helper()
	res := h.must(c).(*engine.ResetResult)
	h.verify()
	return res
}

// Each reset point: the new run holds the base run's history up to the
// point, less the events of steps that had not ended (step 2), then the
// reset's own event, the signals after the point and the event that makes
// it ready; the open base run ends Terminated, naming the new run, which
// names it back; the workflow id now names the new run, and the next claim
// takes the attempt after the copied ones.
func TestResetPoints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cmd    engine.ResetJob
		point  uint64
		copied []string
		wake   engine.EventType
	}{
		{"first", engine.ResetJob{Type: engine.ResetFirstWorkflowTask}, 1,
			[]string{"job_created"}, engine.EventJobRequeued},
		{"last", engine.ResetJob{Type: engine.ResetLastWorkflowTask}, 11,
			[]string{"job_created", "job_leased", "activity_completed:1", "timer_scheduled:3", "job_waiting",
				"timer_fired", "wait_completed", "job_leased", "activity_completed:4", "job_waiting"}, engine.EventWaitCompleted},
		{"event", engine.ResetJob{Seq: 6}, 6,
			[]string{"job_created", "job_leased", "activity_completed:1", "timer_scheduled:3", "job_waiting"}, engine.EventWaitCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.meter = newMeterCheck(t, &meterSeen{}) // the metrics' diff of each command is checked too
			base := resetRun(h, "r")
			h.now += 500
			c := tc.cmd
			c.Target, c.Reason, c.By = engine.Target{WorkflowID: "r"}, "bad deploy", "ops"
			res := h.reset(&c)
			if res.BaseJob != base || res.Seq != tc.point || res.CopiedEvents != uint64(len(tc.copied)) ||
				!slices.Equal(res.Terminated, []engine.JobID{base}) || res.Reapplied != 2 {
				t.Fatalf("result %+v", res)
			}
			hist := h.history(res.Job)
			want := append(slices.Clone(tc.copied), "workflow_reset", "signal_received", "signal_received", string(tc.wake))
			if got := types(hist); !slices.Equal(got, want) {
				t.Fatalf("new run's history %v, want %v", got, want)
			}
			mark := hist[len(tc.copied)]
			if mark.BaseRunID != base || mark.ResetEventID != tc.point || mark.Reason != "bad deploy" || mark.By != "ops" || mark.AtMS != h.now {
				t.Errorf("workflow_reset %+v", mark)
			}
			if sig := hist[len(tc.copied)+1]; sig.Name != "approve" || string(sig.Payload) != `"alice"` || sig.Reason != engine.ReasonReset {
				t.Errorf("reapplied signal %+v", sig)
			}
			old := h.history(base)
			for i, ev := range hist[:len(tc.copied)] {
				if ev.AtMS == 0 || (ev.Type == engine.EventJobCreated && ev.AtMS != old[0].AtMS) {
					t.Errorf("copied event %d keeps no time of its own: %+v", i+1, ev)
				}
			}
			oj, nj := h.job(base), h.job(res.Job)
			if oj.Status != engine.StatusTerminated || oj.ResetNewRunID != res.Job {
				t.Errorf("base run %s, reset to %d", oj.Status, oj.ResetNewRunID)
			}
			if end := old[len(old)-1]; end.Type != engine.EventJobTerminated || end.Reason != engine.ReasonReset || end.NewRunID != res.Job ||
				!strings.Contains(string(end.Payload), "bad deploy") {
				t.Errorf("base run's end %+v", end)
			}
			if nj.Status != engine.StatusQueued || nj.ResetBaseRunID != base || nj.ResetEventID != tc.point || nj.WorkflowID != "r" || len(nj.Timers) != 0 {
				t.Errorf("new run %+v", nj)
			}
			if cur := h.describeWF("r"); cur.ID != res.Job {
				t.Errorf("workflow id names run %d, not the new run %d", cur.ID, res.Job)
			}
			claimed := h.claimOne(60_000)
			if claimed.Job != res.Job || claimed.Attempt != nj.Attempt+1 {
				t.Errorf("claim %+v after a copy ending at attempt %d", claimed, nj.Attempt)
			}
			h.verify()
		})
	}
}

func (h *harness) describeWF(wf string) *engine.Job {
	h.t.Helper()
	var j *engine.Job
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		j, err = machine.ReadTarget(r, engine.Target{WorkflowID: wf})
		return err
	})
	return j
}

// A point that is no turn boundary is refused, naming the valid ones, and
// writes nothing; so is a run that has none, and a target that names a job
// of another workflow id.
func TestResetRefusesPoints(t *testing.T) {
	h := newHarness(t)
	base := resetRun(h, "r")
	before := h.snapshot()
	for _, seq := range []uint64{3, 7, 99} {
		_, err := h.apply(&engine.ResetJob{Target: engine.Target{Job: base}, Seq: seq})
		var pe *engine.ResetPointError
		if !errors.As(err, &pe) || !errors.Is(err, engine.ErrInvalidCommand) || !slices.Equal(pe.Valid, []uint64{1, 6, 11}) ||
			!strings.Contains(err.Error(), "valid event ids (3): 1, 6, 11") || !strings.Contains(err.Error(), engine.ResetPointCode) {
			t.Errorf("reset to %d: %v", seq, err)
		}
	}
	h.mustFail(&engine.ResetJob{Target: engine.Target{Job: base, WorkflowID: "other"}, Seq: 6}, engine.ErrUnknownJob)
	h.mustFail(&engine.ResetJob{Target: engine.Target{Job: base}}, engine.ErrInvalidCommand)
	h.mustFail(&engine.ResetJob{Target: engine.Target{Job: base}, Seq: 6, Type: engine.ResetLastWorkflowTask}, engine.ErrInvalidCommand)
	sameStore(t, before, h.snapshot())

	draft := h.must(&engine.CreateJob{WorkflowID: "d", Type: "order", Queue: "q", Draft: true}).(*engine.CreateResult).Job
	before = h.snapshot()
	_, err := h.apply(&engine.ResetJob{Target: engine.Target{Job: draft}, Type: engine.ResetFirstWorkflowTask})
	if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), "never activated") {
		t.Errorf("reset of a draft: %v", err)
	}
	sameStore(t, before, h.snapshot())
}

// ExcludeSignals and ExcludeUpdates leave the signals, or the updates,
// received after the point out of the new run.
func TestResetExcludes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sig   bool
		upd   bool
		names []string
	}{
		{"signals", true, false, []string{engine.UpdateSignalName}},
		{"updates", false, true, []string{"approve"}},
		{"both", true, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			resetRun(h, "r")
			res := h.reset(&engine.ResetJob{Target: engine.Target{WorkflowID: "r"}, Type: engine.ResetLastWorkflowTask,
				ExcludeSignals: tc.sig, ExcludeUpdates: tc.upd})
			var names []string
			for _, ev := range h.history(res.Job) {
				if ev.Type == engine.EventSignalReceived {
					names = append(names, ev.Name)
				}
			}
			if !slices.Equal(names, tc.names) || res.Reapplied != len(tc.names) {
				t.Errorf("reapplied %v (%d), want %v", names, res.Reapplied, tc.names)
			}
		})
	}
}

// A closed run stays as it ended and links to the new run; resetting it
// again ends the workflow id's open run (the first reset's) as Terminated,
// and the base run links to the newest. A request id makes a reset
// idempotent: its retry answers the first result and resets nothing more.
func TestResetClosedRunAndRequestID(t *testing.T) {
	h := newHarness(t)
	base := resetRun(h, "r")
	h.now += 61_000
	h.must(&engine.FireTimers{Max: 10})
	c := h.claimOne(60_000)
	h.must(&engine.Complete{LeaseRef: c.Lease(), Result: []byte(`"done"`)})
	endSeq := h.job(base).LastSeq

	first := h.reset(&engine.ResetJob{Header: engine.Header{RequestID: "reset-1"}, Target: engine.Target{WorkflowID: "r"}, Seq: 6})
	if again := h.must(&engine.ResetJob{Header: engine.Header{RequestID: "reset-1"}, Target: engine.Target{WorkflowID: "r"}, Seq: 6}).(*engine.ResetResult); again.Job != first.Job {
		t.Fatalf("retry of the request made run %d, the first made %d", again.Job, first.Job)
	}
	b := h.job(base)
	if b.Status != engine.StatusCompleted || b.LastSeq != endSeq || b.ResetNewRunID != first.Job || len(first.Terminated) != 0 {
		t.Fatalf("closed base after reset: %s, last seq %d (was %d), new run %d; terminated %v", b.Status, b.LastSeq, endSeq, b.ResetNewRunID, first.Terminated)
	}
	second := h.reset(&engine.ResetJob{Target: engine.Target{Job: base}, Type: engine.ResetFirstWorkflowTask})
	if !slices.Equal(second.Terminated, []engine.JobID{first.Job}) {
		t.Errorf("second reset terminated %v, want the open run %d", second.Terminated, first.Job)
	}
	if f := h.job(first.Job); f.Status != engine.StatusTerminated || f.ResetNewRunID != second.Job {
		t.Errorf("the first reset's run: %s, reset to %d", f.Status, f.ResetNewRunID)
	}
	if b := h.job(base); b.ResetNewRunID != second.Job {
		t.Errorf("base links to %d, want the newest %d", b.ResetNewRunID, second.Job)
	}
	// The reset of a reset run copies its workflow_reset too; the new run
	// names its own base in its last one.
	third := h.reset(&engine.ResetJob{Target: engine.Target{Job: first.Job}, Type: engine.ResetLastWorkflowTask})
	if third.BaseJob != first.Job {
		t.Errorf("third reset's base %d", third.BaseJob)
	}
}

// Children (and activities on other queues) whose start the copied history
// records are not reset: they keep running and are reconnected to the new
// run, which gets their result; one that ended after the point hands the
// new run its recorded result to catch up. The base run's other open
// children get its parent-close policy, as a Terminate gives them.
func TestResetChildren(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("p")
	child := func(step string, ref *engine.LeaseRef) engine.JobID {
		return h.must(&engine.CreateJob{WorkflowID: "p/" + step, Type: "c", Queue: "cq", ParentID: parent, ParentStep: step, ParentLease: ref}).(*engine.CreateResult).Job
	}
	before := child("1", pref)
	ended := child("2", pref)
	h.must(&engine.Wait{LeaseRef: *pref, SeenSeq: 2, Spec: engine.WaitSpec{Steps: []string{"1", "2"}, AnySignal: true},
		Events: []engine.NewEvent{{Type: engine.EventChildScheduled, Step: "1", Name: "c"}, {Type: engine.EventChildScheduled, Step: "2", Name: "c"}}})
	point := h.job(parent).LastSeq
	// Child 2 ends: its result is the parent's effect, not yet caught up.
	r := h.must(&engine.Claim{Queue: "cq", Owner: "w", Max: 10, LeaseMS: 60_000}).(*engine.ClaimResult)
	var beforeRef engine.LeaseRef
	for _, cj := range r.Jobs {
		switch cj.Job {
		case ended:
			h.must(&engine.Complete{LeaseRef: cj.Lease(), Result: []byte(`"two"`)})
		case before:
			beforeRef = cj.Lease()
		}
	}
	pc := h.must(&engine.Claim{Queue: "parents", Owner: "parent-worker", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
	pref2 := pc.Lease()
	after := child("3", &pref2)

	res := h.reset(&engine.ResetJob{Target: engine.Target{Job: parent}, Seq: point})
	if j := h.job(before); j.ParentID != res.Job || j.Status.Terminal() {
		t.Errorf("child started before the point: parent %d, %s; want reconnected to %d", j.ParentID, j.Status, res.Job)
	}
	if j := h.job(after); j.Status != engine.StatusTerminated || j.ParentID != parent {
		t.Errorf("child started after the point: %s, parent %d", j.Status, j.ParentID)
	}
	var eff *engine.Effect
	viewOK(t, h.db, func(r *storage.Reader) error {
		var err error
		eff, err = machine.ReadEffect(r, res.Job, "2")
		return err
	})
	if eff == nil || eff.CommittedSeq != 0 || string(eff.Payload) != `"two"` {
		t.Errorf("the ended child's result in the new run: %+v", eff)
	}
	// The reconnected child's end is the new run's effect.
	h.must(&engine.Complete{LeaseRef: beforeRef, Result: []byte(`"one"`)})
	viewOK(t, h.db, func(r *storage.Reader) error {
		var err error
		eff, err = machine.ReadEffect(r, res.Job, "1")
		return err
	})
	if eff == nil || string(eff.Payload) != `"one"` {
		t.Errorf("the reconnected child's result: %+v", eff)
	}
	h.verify()
}

// A child run that is reset keeps its parent's step: the old run's end
// gives the parent no result, and the new run's end does.
func TestResetChildRun(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("p")
	child := h.must(&engine.CreateJob{WorkflowID: "kid", Type: "c", Queue: "cq", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*engine.CreateResult).Job
	res := h.reset(&engine.ResetJob{Target: engine.Target{Job: child}, Type: engine.ResetFirstWorkflowTask})
	var eff *engine.Effect
	viewOK(t, h.db, func(r *storage.Reader) error {
		var err error
		eff, err = machine.ReadEffect(r, parent, "1")
		return err
	})
	if eff != nil {
		t.Fatalf("the reset child's end was recorded for its parent: %+v", eff)
	}
	if j := h.job(res.Job); j.ParentID != parent || j.ParentStep != "1" {
		t.Fatalf("new child run's parent %d step %q", j.ParentID, j.ParentStep)
	}
	c := h.must(&engine.Claim{Queue: "cq", Owner: "w", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
	h.must(&engine.Complete{LeaseRef: c.Lease(), Result: []byte(`"new"`)})
	viewOK(t, h.db, func(r *storage.Reader) error {
		var err error
		eff, err = machine.ReadEffect(r, parent, "1")
		return err
	})
	if eff == nil || string(eff.Payload) != `"new"` {
		t.Errorf("parent's effect %+v", eff)
	}
	h.verify()
}

// Steps on the explicit path: a step that ended by the point keeps its
// record in the new run; one that had not (here running on a resource
// unit) starts over there with no record and no events, and the base
// run's end gives its unit back.
func TestResetSteps(t *testing.T) {
	h := newStepH(t)
	h.meter = newMeterCheck(t, &meterSeen{})
	h.addResource("gpu-1", 1, "gpu")
	ref := h.running("s")
	start := func(step string) {
		h.t.Helper()
		r := h.must(&engine.LeaseStep{LeaseRef: ref, Step: step, Name: "Train", LeaseMS: 60_000, Capabilities: []string{"gpu"}, Start: true}).(*engine.StepResult)
		wantState(t, r, engine.StepRunning, true, "gpu-1")
	}
	start("1")
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, Name: "Train", StepAttempt: 1, Payload: []byte(`"m1"`)})
	start("2")
	h.must(&engine.Wait{LeaseRef: ref, SeenSeq: h.job(ref.Job).LastSeq, Spec: engine.WaitSpec{Steps: []string{"2"}, Park: true}})

	res := h.reset(&engine.ResetJob{Target: engine.Target{Job: ref.Job}, Type: engine.ResetLastWorkflowTask})
	if got := h.stepEvents(res.Job, "2"); len(got) != 0 {
		t.Errorf("the step that had not ended keeps events %v in the new run", got)
	}
	if got := h.stepEvents(res.Job, "1"); !slices.Equal(got, []engine.EventType{engine.EventStepLeased, engine.EventStepStarted, engine.EventActivityCompleted}) {
		t.Errorf("the ended step's events in the new run: %v", got)
	}
	if r := h.rec(res.Job, "1"); r.State != engine.StepSucceeded || r.Job != res.Job {
		t.Errorf("the ended step's record in the new run: %+v", r)
	}
	if rs := h.resource("gpu-1"); len(rs.Holders) != 0 {
		t.Errorf("the base run's unit was not given back: %+v", rs.Holders)
	}
	if nj := h.job(res.Job); len(nj.LiveSteps) != 0 {
		t.Errorf("new run's live steps %v", nj.LiveSteps)
	}
	c := h.must(&engine.Claim{Queue: "q-s", Owner: "w", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
	ref = c.Lease()
	start("2")
	h.mustFail(&engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Train", LeaseMS: 60_000}, engine.ErrStepCommitted)
	h.verify()
}

// A reset of a run in the middle of a turn fences its worker out: the
// attempt's next write is refused as stale.
func TestResetRunningRun(t *testing.T) {
	h := newHarness(t)
	id := h.create("run")
	c := h.claimOne(60_000)
	res := h.reset(&engine.ResetJob{Target: engine.Target{Job: id}, Type: engine.ResetLastWorkflowTask})
	if !slices.Equal(res.Terminated, []engine.JobID{id}) || res.Seq != 1 {
		t.Fatalf("reset of a running run: %+v", res)
	}
	h.mustFail(&engine.Complete{LeaseRef: c.Lease()}, engine.ErrStaleAttempt)
}

// A review task the base run created is not made again: the new run's
// request for it (its step was left out of the copy, so the code asks
// again) hands it the task, and a task that ended already gives the new
// run its end at once. Another run's task of the same phase is refused as
// before.
func TestResetReviewTask(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("p")
	create := func(ref *engine.LeaseRef) (*engine.ReviewResult, error) {
		res, err := h.apply(&engine.CreateReview{Job: "p", Phase: "draft", Queue: "rq", Type: "write", ReviewQueue: "rv",
			ParentJob: ref.Job, ParentStep: "1", ParentLease: ref})
		if err != nil {
			return nil, err
		}
		return res.(*engine.ReviewResult), nil
	}
	first, err := create(pref)
	if err != nil {
		t.Fatal(err)
	}
	h.must(&engine.Wait{LeaseRef: *pref, SeenSeq: 2, Spec: engine.WaitSpec{Steps: []string{"1"}},
		Events: []engine.NewEvent{{Type: engine.EventReviewScheduled, Step: "1", Name: "write"}}})
	res := h.reset(&engine.ResetJob{Target: engine.Target{Job: parent}, Type: engine.ResetLastWorkflowTask})
	for _, ev := range h.history(res.Job) {
		if ev.Step == "1" {
			t.Errorf("the review step is in the new run's history: %+v", ev)
		}
	}
	c := h.must(&engine.Claim{Queue: "parents", Owner: "pw", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
	nref := c.Lease()
	again, err := create(&nref)
	if err != nil || again.Review != first.Review {
		t.Fatalf("the new run's request for its task: %+v, %v; want task %d", again, err, first.Review)
	}
	var rv *engine.Review
	viewOK(t, h.db, func(r *storage.Reader) error {
		rv, err = machine.ReadReview(r, first.Review)
		return err
	})
	if rv.ParentJob != res.Job {
		t.Fatalf("task's parent %d, want the new run %d", rv.ParentJob, res.Job)
	}
	// Another workflow's run asking for the same phase is still refused.
	_, oref := h.runningParent("other")
	if _, err := h.apply(&engine.CreateReview{Job: "p", Phase: "draft", Queue: "rq", Type: "write", ParentJob: oref.Job, ParentStep: "1", ParentLease: oref}); !errors.Is(err, engine.ErrReviewExists) {
		t.Errorf("another run's create of the phase: %v", err)
	}
	h.verify()
}

// Verify checks the reset links: a run naming a base run that does not
// link back, or a point that is no turn boundary, is reported.
func TestVerifyResetLinks(t *testing.T) {
	h := newHarness(t)
	resetRun(h, "r")
	res := h.reset(&engine.ResetJob{Target: engine.Target{WorkflowID: "r"}, Seq: 6})
	orig := h.job(res.Job)
	for _, tc := range []struct {
		name string
		edit func(j *engine.Job)
		want string
	}{
		{"point", func(j *engine.Job) { j.ResetEventID = 3 }, "not a turn boundary"},
		{"half", func(j *engine.Job) { j.ResetEventID = 0 }, "both or neither"},
		{"base", func(j *engine.Job) { j.ResetBaseRunID = 99 }, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := orig.Clone()
			tc.edit(j)
			h.putJob(j)
			defer h.putJob(orig)
			var errs []error
			viewOK(t, h.db, func(r *storage.Reader) error {
				errs = machine.Verify(r, 10)
				return nil
			})
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("Verify: %v, want %q", errs, tc.want)
			}
		})
	}
}

// putJob writes j's record as it is, around the machine, for Verify's
// tests.
func (h *harness) putJob(j *engine.Job) {
	h.t.Helper()
	b := h.db.NewBatch()
	defer b.Discard()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(j.ID)), machine.EncodeJob(j))
	if err := b.Add(tx); err != nil {
		h.t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		h.t.Fatal(err)
	}
}

// The chain fields stand: a reset of a cron chain's run ends the chain's
// next run, waiting for its time, and the new run, which starts at once,
// keeps the cron line, so its end makes the chain's next run; a reset of a
// run that continued as new ends the run it continued as.
func TestResetChains(t *testing.T) {
	h := newHarness(t)
	first := h.must(&engine.CreateJob{WorkflowID: "c", Type: "order", Queue: "q", CronSchedule: "*/5 * * * *", CronFirstNow: true, RunTimeoutMS: 60_000}).(*engine.CreateResult).Job
	c := h.claimOne(60_000)
	h.must(&engine.Complete{LeaseRef: c.Lease(), Result: []byte(`"r1"`)})
	held := h.describeWF("c")
	if held.ID == first || held.Status != engine.StatusRetrying {
		t.Fatalf("the chain's next run %+v", held)
	}
	h.now += 1000
	res := h.reset(&engine.ResetJob{Target: engine.Target{Job: first}, Type: engine.ResetFirstWorkflowTask})
	if len(res.Terminated) != 1 || res.Terminated[0] != held.ID {
		t.Fatalf("reset terminated %v, want the held-back run %d", res.Terminated, held.ID)
	}
	nj := h.job(res.Job)
	if nj.Status != engine.StatusQueued || nj.CronSchedule != "*/5 * * * *" || nj.RunTimeoutMS != 60_000 || nj.RunDeadlineMS != h.now+60_000 {
		t.Fatalf("the new cron run %+v", nj)
	}
	c = h.claimOne(60_000)
	if c.Job != res.Job {
		t.Fatalf("claimed %d, want the new run %d", c.Job, res.Job)
	}
	h.must(&engine.Complete{LeaseRef: c.Lease(), Result: []byte(`"r2"`)})
	if next := h.describeWF("c"); next.ID == res.Job || next.Status != engine.StatusRetrying || next.CronSchedule == "" {
		t.Errorf("the run after the reset run's end: %+v", next)
	}
	h.verify()

	k := h.create("k")
	c = h.claimOne(60_000)
	cont := h.must(&engine.ContinueAsNew{LeaseRef: c.Lease(), Input: []byte(`[2]`)}).(*engine.CreateResult).Job
	res = h.reset(&engine.ResetJob{Target: engine.Target{Job: k}, Type: engine.ResetLastWorkflowTask})
	if len(res.Terminated) != 1 || res.Terminated[0] != cont || res.Seq != 1 {
		t.Errorf("reset of a run that continued as new: %+v, want run %d terminated", res, cont)
	}
	if j := h.job(k); j.Status != engine.StatusCompleted || j.ResetNewRunID != res.Job {
		t.Errorf("the continued run after its reset: %s, linked to %d", j.Status, j.ResetNewRunID)
	}
}

// A reset of an older run leaves the workflow id's current run alone when
// that has ended: it links nothing to the new run.
func TestResetOlderRunLeavesClosedCurrent(t *testing.T) {
	h := newHarness(t)
	old := h.create("w")
	h.must(&engine.Complete{LeaseRef: h.claimOne(60_000).Lease()})
	cur := h.create("w")
	h.must(&engine.Complete{LeaseRef: h.claimOne(60_000).Lease()})
	before := h.job(cur)
	h.now += 1000 // a save of the current run would move its UpdatedMS
	res := h.reset(&engine.ResetJob{Target: engine.Target{Job: old}, Type: engine.ResetFirstWorkflowTask})
	if len(res.Terminated) != 0 {
		t.Errorf("reset terminated %v", res.Terminated)
	}
	if after := h.job(cur); after.ResetNewRunID != 0 || after.UpdatedMS != before.UpdatedMS {
		t.Errorf("the closed current run was touched: %+v", after)
	}
	if j := h.job(old); j.ResetNewRunID != res.Job {
		t.Errorf("the base run links to %d, want %d", j.ResetNewRunID, res.Job)
	}
	if w := h.describeWF("w"); w.ID != res.Job {
		t.Errorf("the workflow id names %d, want the new run %d", w.ID, res.Job)
	}
}
