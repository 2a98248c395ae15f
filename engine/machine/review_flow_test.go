package machine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func (h *harness) claimTask(role engine.TaskRole, queue string, leaseMS int64) []engine.ClaimedTask {
	h.t.Helper()
	return h.must(&engine.ClaimTasks{Role: role, Queue: queue, Owner: "w-" + role.String(), Max: 10, LeaseMS: leaseMS}).(*engine.ClaimTasksResult).Tasks
}

func (h *harness) decide(id engine.TaskID, op engine.TaskOp, reason string) {
	h.t.Helper()
	h.must(&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id}, Op: op, By: "steward", Reason: reason})
}

// A DAG requirements → implementation → tests as a trace: each task is
// gated by review and approval; the implementation is rejected once with
// feedback, reworked with that feedback, and approved; only then may the
// tests start. The manifest sums the costs and times.
func TestTaskDAGTrace(t *testing.T) {
	h := newHarness(t)
	mk := func(phase string, deps ...string) engine.TaskID {
		return h.must(&engine.CreateTask{Job: "email", Phase: phase, Queue: "agents", Type: phase, Deps: deps,
			JobDescription: "validate e-mail addresses", Config: engine.TaskConfig{Objective: phase}}).(*engine.TaskResult).Task
	}
	req := mk("requirements")
	impl := mk("implementation", "requirements")
	tests := mk("tests", "implementation")

	run := func(want engine.TaskID, cost float64, workMS int64) engine.ClaimedTask {
		t.Helper()
		got := h.claimTask(engine.TaskRoleWork, "agents", 60_000)
		if len(got) != 1 || got[0].Task != want {
			t.Fatalf("work claim = %+v, want only task %d", got, want)
		}
		h.now += workMS
		h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: want, Attempt: got[0].Attempt}, Op: engine.TaskReportOutput,
			Output: []byte("work of " + got[0].Phase), Cost: cost, Summary: "did " + got[0].Phase})
		h.decide(want, engine.TaskOpStep, "")
		rv := h.claimTask(engine.TaskRoleReview, "agents", 60_000)
		if len(rv) != 1 || rv[0].Task != want || string(rv[0].Output) != "work of "+got[0].Phase {
			t.Fatalf("review claim = %+v", rv)
		}
		h.now += 1000
		h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: want, Attempt: rv[0].Attempt}, Op: engine.TaskReportVerdict,
			Review: &engine.Review{Verdict: engine.VerdictApprove, Recommendations: []string{"ship it"}, Summary: "reviewed " + got[0].Phase}})
		if s := h.task(want).State; s != engine.TaskApprovalRequired {
			t.Fatalf("after the verdict: %s", s)
		}
		return got[0]
	}
	run(req, 2, 4000)
	// The implementation waits for the requirements' approval.
	if got := h.claimTask(engine.TaskRoleWork, "agents", 60_000); len(got) != 0 {
		t.Fatalf("claimed %+v before the requirements were approved", got)
	}
	h.decide(req, engine.TaskOpApprove, "")
	first := run(impl, 5, 10_000)
	if first.Feedback != "" {
		t.Fatalf("first run has feedback %q", first.Feedback)
	}
	h.decide(impl, engine.TaskOpReject, "handle internationalised domains")
	if s := h.task(impl).State; s != engine.TaskPending {
		t.Fatalf("rejected implementation is %s, want PENDING", s)
	}
	rework := run(impl, 3, 6000)
	if rework.Feedback != "handle internationalised domains" || rework.Runs != 2 {
		t.Fatalf("rework claim = %+v, want the feedback and run 2", rework)
	}
	if got := h.claimTask(engine.TaskRoleWork, "agents", 60_000); len(got) != 0 {
		t.Fatalf("tests claimed %+v before the implementation was approved", got)
	}
	h.decide(impl, engine.TaskOpApprove, "")
	got := h.claimTask(engine.TaskRoleWork, "agents", 60_000)
	if len(got) != 1 || got[0].Task != tests {
		t.Fatalf("after approval, claim = %+v, want the tests", got)
	}
	h.now += 2000
	h.verify()

	var m *engine.Manifest
	ts := []engine.Task{*h.task(req), *h.task(impl), *h.task(tests)}
	m = engine.BuildManifest("email", ts, h.now)
	if m.JobID != "email" || m.Description != "validate e-mail addresses" || m.Status != engine.TaskRunning || m.CurrentPhase != "tests" {
		t.Fatalf("manifest = %+v", m)
	}
	// Costs 2 + 5 + 3; time: requirements 4 s work + 1 s review, the
	// implementation twice (10 + 1) and (6 + 1), the tests 2 s so far.
	if m.Metrics.CumulativeCost != 10 || m.Metrics.CumulativeTimeSeconds != 25 {
		t.Fatalf("metrics = %+v, want cost 10 and 25 s", m.Metrics)
	}
	wantHist := []engine.ManifestEntry{
		{Phase: "requirements", Status: engine.TaskSuccess, Summary: "reviewed requirements", TaskID: req, DecidedBy: "steward"},
		{Phase: "implementation", Status: engine.TaskSuccess, Summary: "reviewed implementation", TaskID: impl, DecidedBy: "steward"},
		{Phase: "tests", Status: engine.TaskRunning, Summary: "", TaskID: tests},
	}
	if !slices.Equal(m.History, wantHist) {
		t.Fatalf("history = %+v\nwant %+v", m.History, wantHist)
	}
	hist := h.taskHistory(impl)
	var rejected *engine.TaskEvent
	for i := range hist {
		if hist[i].Type == engine.TaskEventRejected {
			rejected = &hist[i]
		}
	}
	if rejected == nil || rejected.By != "steward" || rejected.Reason != "handle internationalised domains" {
		t.Fatalf("reject event = %+v", rejected)
	}
}

// Stuck recovery through leases only: a worker that stops renewing loses
// RUNNING to PENDING, a reviewer REVIEWING to REVIEW_REQUIRED; the stale
// holders' writes are then refused; a renewed lease is kept.
func TestTaskStuckRecovery(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateTask{Job: "j", Phase: "p", Queue: "q", Type: "w"}).(*engine.TaskResult).Task
	c := h.claimTask(engine.TaskRoleWork, "q", 10_000)[0]
	h.now += 9000
	hb := h.must(&engine.TaskHeartbeat{Leases: []engine.TaskLeaseRef{{Task: id, Attempt: c.Attempt}}, LeaseMS: 10_000}).(*engine.TaskHeartbeatResult)
	if len(hb.Refused) != 0 || hb.LeaseExpiryMS != h.now+10_000 {
		t.Fatalf("heartbeat = %+v", hb)
	}
	h.now += 2000 // past the first lease, within the renewed one
	if r := h.must(&engine.ReclaimTasks{Max: 10}).(*engine.TaskSweepResult); len(r.Tasks) != 0 {
		t.Fatalf("reclaimed a renewed lease: %+v", r)
	}
	h.now += 9000
	if r := h.must(&engine.ReclaimTasks{Max: 10}).(*engine.TaskSweepResult); !slices.Equal(r.Tasks, []engine.TaskID{id}) {
		t.Fatalf("reclaim = %+v", r)
	}
	if s := h.task(id).State; s != engine.TaskPending {
		t.Fatalf("stuck RUNNING went to %s, want PENDING", s)
	}
	_, err := h.apply(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: c.Attempt}, Op: engine.TaskReportOutput, Output: []byte("late")})
	var se *engine.StaleTaskError
	if !errors.As(err, &se) || se.Current != c.Attempt || se.State != engine.TaskPending {
		t.Fatalf("late output: %v", err)
	}
	c2 := h.claimTask(engine.TaskRoleWork, "q", 10_000)[0]
	h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: c2.Attempt}, Op: engine.TaskReportOutput, Output: []byte("ok")})
	h.decide(id, engine.TaskOpStep, "")
	r := h.claimTask(engine.TaskRoleReview, "q", 5000)[0]
	h.now += 5000
	h.must(&engine.ReclaimTasks{Max: 10})
	if s := h.task(id).State; s != engine.TaskReviewRequired {
		t.Fatalf("stuck REVIEWING went to %s, want REVIEW_REQUIRED", s)
	}
	h.mustFail(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: r.Attempt}, Op: engine.TaskReportVerdict, Review: &engine.Review{Verdict: engine.VerdictApprove}}, engine.ErrStaleTaskAttempt)
	hb = h.must(&engine.TaskHeartbeat{Leases: []engine.TaskLeaseRef{{Task: id, Attempt: r.Attempt}}, LeaseMS: 1000}).(*engine.TaskHeartbeatResult)
	if len(hb.Refused) != 1 {
		t.Fatalf("a stale heartbeat was not refused: %+v", hb)
	}
	hist := h.taskHistory(id)
	var expired []engine.TaskEvent
	for _, e := range hist {
		if e.Type == engine.TaskEventLeaseExpired {
			expired = append(expired, e)
		}
	}
	if len(expired) != 2 || expired[0].From != engine.TaskRunning || expired[1].From != engine.TaskReviewing {
		t.Fatalf("lease expiries = %+v", expired)
	}
	h.verify()
}

// Auto review and auto approval: the output goes straight to REVIEWING
// and an approving verdict straight to SUCCESS, each recorded as by "auto".
// A reviewer that dies is replaced after its lease, and the review is
// started again by itself.
func TestTaskAutoReviewAndApproval(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateTask{Job: "j", Phase: "p", Queue: "q", Type: "w", AutoReview: true, AutoApprove: true}).(*engine.TaskResult).Task
	c := h.claimTask(engine.TaskRoleWork, "q", 10_000)[0]
	res := h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: c.Attempt}, Op: engine.TaskReportOutput, Output: []byte("x")}).(*engine.TaskResult)
	if res.State != engine.TaskReviewing {
		t.Fatalf("auto review: %s", res.State)
	}
	h.claimTask(engine.TaskRoleReview, "q", 1000)
	h.now += 1000
	h.must(&engine.ReclaimTasks{Max: 10})
	if s := h.task(id).State; s != engine.TaskReviewing {
		t.Fatalf("after the reviewer's lease expired: %s, want REVIEWING again", s)
	}
	r := h.claimTask(engine.TaskRoleReview, "q", 1000)[0]
	res = h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: r.Attempt}, Op: engine.TaskReportVerdict, Review: &engine.Review{Verdict: engine.VerdictApprove}}).(*engine.TaskResult)
	if res.State != engine.TaskSuccess {
		t.Fatalf("auto approval: %s", res.State)
	}
	hist := h.taskHistory(id)
	if last := hist[len(hist)-1]; last.Type != engine.TaskEventApproved || last.By != engine.ByAuto {
		t.Fatalf("last event = %+v", last)
	}
	// An intervening verdict is never approved automatically.
	id2 := h.must(&engine.CreateTask{Job: "j", Phase: "p2", Queue: "q", Type: "w", AutoReview: true, AutoApprove: true}).(*engine.TaskResult).Task
	c = h.claimTask(engine.TaskRoleWork, "q", 10_000)[0]
	h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id2, Attempt: c.Attempt}, Op: engine.TaskReportOutput})
	r = h.claimTask(engine.TaskRoleReview, "q", 1000)[0]
	h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id2, Attempt: r.Attempt}, Op: engine.TaskReportVerdict, Review: &engine.Review{Verdict: engine.VerdictIntervene, Summary: "broken"}})
	if s := h.task(id2).State; s != engine.TaskInterventionRequired {
		t.Fatalf("intervene with auto approval: %s", s)
	}
	h.verify()
}

// Draft configuration: config changes a DRAFT task and is refused once it
// is active, naming the state and what is legal there.
func TestTaskDraftConfig(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateTask{Job: "j", Phase: "p", Queue: "q", Type: "w", Draft: true,
		Config: engine.TaskConfig{Objective: "first"}}).(*engine.TaskResult).Task
	if got := h.claimTask(engine.TaskRoleWork, "q", 1000); len(got) != 0 {
		t.Fatalf("claimed a draft: %+v", got)
	}
	h.must(&engine.TaskCommand{TaskTarget: engine.TaskTarget{Job: "j", Phase: "p"}, Op: engine.TaskOpConfig,
		Config: &engine.TaskConfig{Details: "more", Acceptance: []string{"a", "b"}, Input: []byte("in")}})
	h.must(&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id}, Op: engine.TaskOpActivate})
	_, err := h.apply(&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id}, Op: engine.TaskOpConfig, Config: &engine.TaskConfig{Objective: "late"}})
	var se *engine.TaskStateError
	if !errors.As(err, &se) || se.State != engine.TaskPending || !slices.Equal(se.Legal, []engine.TaskOp{engine.TaskOpSuspend, engine.TaskOpCancel}) {
		t.Fatalf("config when active: %v", err)
	}
	c := h.claimTask(engine.TaskRoleWork, "q", 1000)[0]
	want := engine.TaskConfig{Objective: "first", Details: "more", Acceptance: []string{"a", "b"}, Input: []byte("in")}
	if c.Config.Objective != want.Objective || c.Config.Details != want.Details ||
		!slices.Equal(c.Config.Acceptance, want.Acceptance) || string(c.Config.Input) != "in" {
		t.Fatalf("claimed config %+v, want %+v", c.Config, want)
	}
	h.verify()
}

// Bad input is refused with the field named, and writes nothing.
func TestTaskBadInput(t *testing.T) {
	h := newHarness(t)
	h.must(&engine.CreateTask{Job: "j", Phase: "a", Queue: "q", Type: "w"})
	before := h.snapshot()
	for _, c := range []engine.Command{
		&engine.CreateTask{Job: "j", Phase: "a", Queue: "q", Type: "w"},
		&engine.CreateTask{Job: "j", Phase: "b", Queue: "q", Type: "w", Deps: []string{"missing"}},
		&engine.CreateTask{Job: "j", Phase: "b", Queue: "q", Type: "w", Deps: []string{"b"}},
		&engine.CreateTask{Job: "j", Phase: "b", Type: "w"},
		&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: 1}, Op: engine.TaskOpApprove},
		&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: 1}, Op: "bless", By: "x"},
		&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: 99}, Op: engine.TaskOpCancel},
		&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: 1}, Op: engine.TaskOpCancel, Expect: engine.TaskRunning},
		&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: 1, Attempt: 1}, Op: engine.TaskReportOutput, Cost: -1},
		&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: 1, Attempt: 1}, Op: engine.TaskReportVerdict},
		&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: 1, Attempt: 1}, Op: engine.TaskReportOutput},
		&engine.ClaimTasks{Role: 7, Queue: "q", Owner: "w", Max: 1, LeaseMS: 1},
	} {
		if _, err := h.apply(c); err == nil {
			t.Errorf("%T %+v was accepted", c, c)
		}
	}
	sameStore(t, before, h.snapshot())
}

// A task with a parent step delivers its output to the workflow at
// SUCCESS, as a child workflow's result, and wakes the workflow waiting
// for it; a canceled task delivers a failure.
func TestTaskParentStepEffect(t *testing.T) {
	h := newHarness(t)
	job := h.create("wf")
	c := h.claimOne(60_000)
	ref := engine.LeaseRef{Job: job, Attempt: c.Attempt}
	id := h.must(&engine.CreateTask{Job: "wf", Phase: "p", Queue: "q2", Type: "w", AutoReview: true, AutoApprove: true,
		ParentJob: job, ParentStep: "task-1", ParentLease: &ref}).(*engine.TaskResult).Task
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Steps: []string{"task-1"}}, SeenSeq: h.job(job).LastSeq})
	w := h.claimTask(engine.TaskRoleWork, "q2", 1000)[0]
	h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: w.Attempt}, Op: engine.TaskReportOutput, Output: []byte(`"result"`)})
	r := h.claimTask(engine.TaskRoleReview, "q2", 1000)[0]
	h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: r.Attempt}, Op: engine.TaskReportVerdict, Review: &engine.Review{Verdict: engine.VerdictApprove}})
	if j := h.job(job); j.Status != engine.StatusQueued {
		t.Fatalf("parent is %s, want woken (Queued)", j.Status)
	}
	if eff := h.effectOf(job, "task-1"); eff == nil || string(eff.Payload) != `"result"` || eff.Failed {
		t.Fatalf("effect = %+v", eff)
	}
	// The workflow woke (Queued): a new attempt holds it and creates the
	// next task.
	c2 := h.claimOne(60_000)
	ref2 := c2.Lease()
	id2 := h.must(&engine.CreateTask{Job: "wf", Phase: "p2", Queue: "q2", Type: "w", ParentJob: job, ParentStep: "task-2", ParentLease: &ref2}).(*engine.TaskResult).Task
	h.must(&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id2}, Op: engine.TaskOpCancel, Reason: "not needed"})
	if eff := h.effectOf(job, "task-2"); eff == nil || !eff.Failed {
		t.Fatalf("effect of a canceled task = %+v", eff)
	}
	h.verify()
}

// The origin model lets a person suspend any active
// task; a PAUSED one (its worker rate limited) could not be. Suspending it
// ends the worker's lease: its next report is stale, and resume runs the
// work again (PENDING).
func TestSuspendAPausedTask(t *testing.T) {
	h := newHarness(t)
	id := h.taskTo("j", engine.TaskPaused)
	lease := engine.TaskLeaseRef{Task: id, Attempt: h.task(id).Attempt}
	res := h.must(&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id}, Op: engine.TaskOpSuspend, By: "ann", Reason: "budget"}).(*engine.TaskResult)
	if res.State != engine.TaskSuspended || h.task(id).LeaseOwner != "" {
		t.Fatalf("suspended paused task: %+v, record %+v", res, h.task(id))
	}
	h.mustFail(&engine.TaskReport{TaskLeaseRef: lease, Op: engine.TaskReportUnpause}, engine.ErrStaleTaskAttempt)
	if r := h.must(&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id}, Op: engine.TaskOpResume, By: "ann"}).(*engine.TaskResult); r.State != engine.TaskPending {
		t.Fatalf("resumed into %s", r.State)
	}
	h.verify()
}
