package engine

import (
	"errors"
	"slices"
	"testing"
)

func (h *harness) claimTask(role TaskRole, queue string, leaseMS int64) []ClaimedTask {
	h.t.Helper()
	return h.must(&ClaimTasks{Role: role, Queue: queue, Owner: "w-" + role.String(), Max: 10, LeaseMS: leaseMS}).(*ClaimTasksResult).Tasks
}

func (h *harness) decide(id TaskID, op TaskOp, reason string) {
	h.t.Helper()
	h.must(&TaskCommand{TaskTarget: TaskTarget{ID: id}, Op: op, By: "steward", Reason: reason})
}

// A DAG requirements → implementation → tests as a trace: each task is
// gated by review and approval; the implementation is rejected once with
// feedback, reworked with that feedback, and approved; only then may the
// tests start. The manifest sums the costs and times.
func TestTaskDAGTrace(t *testing.T) {
	h := newHarness(t)
	mk := func(phase string, deps ...string) TaskID {
		return h.must(&CreateTask{Job: "email", Phase: phase, Queue: "agents", Type: phase, Deps: deps,
			JobDescription: "validate e-mail addresses", Config: TaskConfig{Objective: phase}}).(*TaskResult).Task
	}
	req := mk("requirements")
	impl := mk("implementation", "requirements")
	tests := mk("tests", "implementation")

	run := func(want TaskID, cost float64, workMS int64) ClaimedTask {
		t.Helper()
		got := h.claimTask(TaskRoleWork, "agents", 60_000)
		if len(got) != 1 || got[0].Task != want {
			t.Fatalf("work claim = %+v, want only task %d", got, want)
		}
		h.now += workMS
		h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: want, Attempt: got[0].Attempt}, Op: TaskReportOutput,
			Output: []byte("work of " + got[0].Phase), Cost: cost, Summary: "did " + got[0].Phase})
		h.decide(want, TaskOpStep, "")
		rv := h.claimTask(TaskRoleReview, "agents", 60_000)
		if len(rv) != 1 || rv[0].Task != want || string(rv[0].Output) != "work of "+got[0].Phase {
			t.Fatalf("review claim = %+v", rv)
		}
		h.now += 1000
		h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: want, Attempt: rv[0].Attempt}, Op: TaskReportVerdict,
			Review: &Review{Verdict: VerdictApprove, Recommendations: []string{"ship it"}, Summary: "reviewed " + got[0].Phase}})
		if s := h.task(want).State; s != TaskApprovalRequired {
			t.Fatalf("after the verdict: %s", s)
		}
		return got[0]
	}
	run(req, 2, 4000)
	// The implementation waits for the requirements' approval.
	if got := h.claimTask(TaskRoleWork, "agents", 60_000); len(got) != 0 {
		t.Fatalf("claimed %+v before the requirements were approved", got)
	}
	h.decide(req, TaskOpApprove, "")
	first := run(impl, 5, 10_000)
	if first.Feedback != "" {
		t.Fatalf("first run has feedback %q", first.Feedback)
	}
	h.decide(impl, TaskOpReject, "handle internationalised domains")
	if s := h.task(impl).State; s != TaskPending {
		t.Fatalf("rejected implementation is %s, want PENDING", s)
	}
	rework := run(impl, 3, 6000)
	if rework.Feedback != "handle internationalised domains" || rework.Runs != 2 {
		t.Fatalf("rework claim = %+v, want the feedback and run 2", rework)
	}
	if got := h.claimTask(TaskRoleWork, "agents", 60_000); len(got) != 0 {
		t.Fatalf("tests claimed %+v before the implementation was approved", got)
	}
	h.decide(impl, TaskOpApprove, "")
	got := h.claimTask(TaskRoleWork, "agents", 60_000)
	if len(got) != 1 || got[0].Task != tests {
		t.Fatalf("after approval, claim = %+v, want the tests", got)
	}
	h.now += 2000
	h.verify()

	var m *Manifest
	ts := []Task{*h.task(req), *h.task(impl), *h.task(tests)}
	m = BuildManifest("email", ts, h.now)
	if m.JobID != "email" || m.Description != "validate e-mail addresses" || m.Status != TaskRunning || m.CurrentPhase != "tests" {
		t.Fatalf("manifest = %+v", m)
	}
	// Costs 2 + 5 + 3; time: requirements 4 s work + 1 s review, the
	// implementation twice (10 + 1) and (6 + 1), the tests 2 s so far.
	if m.Metrics.CumulativeCost != 10 || m.Metrics.CumulativeTimeSeconds != 25 {
		t.Fatalf("metrics = %+v, want cost 10 and 25 s", m.Metrics)
	}
	wantHist := []ManifestEntry{
		{Phase: "requirements", Status: TaskSuccess, Summary: "reviewed requirements", TaskID: req, DecidedBy: "steward"},
		{Phase: "implementation", Status: TaskSuccess, Summary: "reviewed implementation", TaskID: impl, DecidedBy: "steward"},
		{Phase: "tests", Status: TaskRunning, Summary: "", TaskID: tests},
	}
	if !slices.Equal(m.History, wantHist) {
		t.Fatalf("history = %+v\nwant %+v", m.History, wantHist)
	}
	hist := h.taskHistory(impl)
	var rejected *TaskEvent
	for i := range hist {
		if hist[i].Type == TaskEventRejected {
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
	id := h.must(&CreateTask{Job: "j", Phase: "p", Queue: "q", Type: "w"}).(*TaskResult).Task
	c := h.claimTask(TaskRoleWork, "q", 10_000)[0]
	h.now += 9000
	hb := h.must(&TaskHeartbeat{Leases: []TaskLeaseRef{{Task: id, Attempt: c.Attempt}}, LeaseMS: 10_000}).(*TaskHeartbeatResult)
	if len(hb.Refused) != 0 || hb.LeaseExpiryMS != h.now+10_000 {
		t.Fatalf("heartbeat = %+v", hb)
	}
	h.now += 2000 // past the first lease, within the renewed one
	if r := h.must(&ReclaimTasks{Max: 10}).(*TaskSweepResult); len(r.Tasks) != 0 {
		t.Fatalf("reclaimed a renewed lease: %+v", r)
	}
	h.now += 9000
	if r := h.must(&ReclaimTasks{Max: 10}).(*TaskSweepResult); !slices.Equal(r.Tasks, []TaskID{id}) {
		t.Fatalf("reclaim = %+v", r)
	}
	if s := h.task(id).State; s != TaskPending {
		t.Fatalf("stuck RUNNING went to %s, want PENDING", s)
	}
	_, err := h.apply(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: c.Attempt}, Op: TaskReportOutput, Output: []byte("late")})
	var se *StaleTaskError
	if !errors.As(err, &se) || se.Current != c.Attempt || se.State != TaskPending {
		t.Fatalf("late output: %v", err)
	}
	c2 := h.claimTask(TaskRoleWork, "q", 10_000)[0]
	h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: c2.Attempt}, Op: TaskReportOutput, Output: []byte("ok")})
	h.decide(id, TaskOpStep, "")
	r := h.claimTask(TaskRoleReview, "q", 5000)[0]
	h.now += 5000
	h.must(&ReclaimTasks{Max: 10})
	if s := h.task(id).State; s != TaskReviewRequired {
		t.Fatalf("stuck REVIEWING went to %s, want REVIEW_REQUIRED", s)
	}
	h.mustFail(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: r.Attempt}, Op: TaskReportVerdict, Review: &Review{Verdict: VerdictApprove}}, ErrStaleTaskAttempt)
	hb = h.must(&TaskHeartbeat{Leases: []TaskLeaseRef{{Task: id, Attempt: r.Attempt}}, LeaseMS: 1000}).(*TaskHeartbeatResult)
	if len(hb.Refused) != 1 {
		t.Fatalf("a stale heartbeat was not refused: %+v", hb)
	}
	hist := h.taskHistory(id)
	var expired []TaskEvent
	for _, e := range hist {
		if e.Type == TaskEventLeaseExpired {
			expired = append(expired, e)
		}
	}
	if len(expired) != 2 || expired[0].From != TaskRunning || expired[1].From != TaskReviewing {
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
	id := h.must(&CreateTask{Job: "j", Phase: "p", Queue: "q", Type: "w", AutoReview: true, AutoApprove: true}).(*TaskResult).Task
	c := h.claimTask(TaskRoleWork, "q", 10_000)[0]
	res := h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: c.Attempt}, Op: TaskReportOutput, Output: []byte("x")}).(*TaskResult)
	if res.State != TaskReviewing {
		t.Fatalf("auto review: %s", res.State)
	}
	h.claimTask(TaskRoleReview, "q", 1000)
	h.now += 1000
	h.must(&ReclaimTasks{Max: 10})
	if s := h.task(id).State; s != TaskReviewing {
		t.Fatalf("after the reviewer's lease expired: %s, want REVIEWING again", s)
	}
	r := h.claimTask(TaskRoleReview, "q", 1000)[0]
	res = h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: r.Attempt}, Op: TaskReportVerdict, Review: &Review{Verdict: VerdictApprove}}).(*TaskResult)
	if res.State != TaskSuccess {
		t.Fatalf("auto approval: %s", res.State)
	}
	hist := h.taskHistory(id)
	if last := hist[len(hist)-1]; last.Type != TaskEventApproved || last.By != ByAuto {
		t.Fatalf("last event = %+v", last)
	}
	// An intervening verdict is never approved automatically.
	id2 := h.must(&CreateTask{Job: "j", Phase: "p2", Queue: "q", Type: "w", AutoReview: true, AutoApprove: true}).(*TaskResult).Task
	c = h.claimTask(TaskRoleWork, "q", 10_000)[0]
	h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id2, Attempt: c.Attempt}, Op: TaskReportOutput})
	r = h.claimTask(TaskRoleReview, "q", 1000)[0]
	h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id2, Attempt: r.Attempt}, Op: TaskReportVerdict, Review: &Review{Verdict: VerdictIntervene, Summary: "broken"}})
	if s := h.task(id2).State; s != TaskInterventionRequired {
		t.Fatalf("intervene with auto approval: %s", s)
	}
	h.verify()
}

// Draft configuration: config changes a DRAFT task and is refused once it
// is active, naming the state and what is legal there.
func TestTaskDraftConfig(t *testing.T) {
	h := newHarness(t)
	id := h.must(&CreateTask{Job: "j", Phase: "p", Queue: "q", Type: "w", Draft: true,
		Config: TaskConfig{Objective: "first"}}).(*TaskResult).Task
	if got := h.claimTask(TaskRoleWork, "q", 1000); len(got) != 0 {
		t.Fatalf("claimed a draft: %+v", got)
	}
	h.must(&TaskCommand{TaskTarget: TaskTarget{Job: "j", Phase: "p"}, Op: TaskOpConfig,
		Config: &TaskConfig{Details: "more", Acceptance: []string{"a", "b"}, Input: []byte("in")}})
	h.must(&TaskCommand{TaskTarget: TaskTarget{ID: id}, Op: TaskOpActivate})
	_, err := h.apply(&TaskCommand{TaskTarget: TaskTarget{ID: id}, Op: TaskOpConfig, Config: &TaskConfig{Objective: "late"}})
	var se *TaskStateError
	if !errors.As(err, &se) || se.State != TaskPending || !slices.Equal(se.Legal, []TaskOp{TaskOpSuspend, TaskOpCancel}) {
		t.Fatalf("config when active: %v", err)
	}
	c := h.claimTask(TaskRoleWork, "q", 1000)[0]
	want := TaskConfig{Objective: "first", Details: "more", Acceptance: []string{"a", "b"}, Input: []byte("in")}
	if c.Config.Objective != want.Objective || c.Config.Details != want.Details ||
		!slices.Equal(c.Config.Acceptance, want.Acceptance) || string(c.Config.Input) != "in" {
		t.Fatalf("claimed config %+v, want %+v", c.Config, want)
	}
	h.verify()
}

// Bad input is refused with the field named, and writes nothing.
func TestTaskBadInput(t *testing.T) {
	h := newHarness(t)
	h.must(&CreateTask{Job: "j", Phase: "a", Queue: "q", Type: "w"})
	before := h.snapshot()
	for _, c := range []Command{
		&CreateTask{Job: "j", Phase: "a", Queue: "q", Type: "w"},
		&CreateTask{Job: "j", Phase: "b", Queue: "q", Type: "w", Deps: []string{"missing"}},
		&CreateTask{Job: "j", Phase: "b", Queue: "q", Type: "w", Deps: []string{"b"}},
		&CreateTask{Job: "j", Phase: "b", Type: "w"},
		&TaskCommand{TaskTarget: TaskTarget{ID: 1}, Op: TaskOpApprove},
		&TaskCommand{TaskTarget: TaskTarget{ID: 1}, Op: "bless", By: "x"},
		&TaskCommand{TaskTarget: TaskTarget{ID: 99}, Op: TaskOpCancel},
		&TaskCommand{TaskTarget: TaskTarget{ID: 1}, Op: TaskOpCancel, Expect: TaskRunning},
		&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: 1, Attempt: 1}, Op: TaskReportOutput, Cost: -1},
		&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: 1, Attempt: 1}, Op: TaskReportVerdict},
		&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: 1, Attempt: 1}, Op: TaskReportOutput},
		&ClaimTasks{Role: 7, Queue: "q", Owner: "w", Max: 1, LeaseMS: 1},
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
	ref := LeaseRef{Job: job, Attempt: c.Attempt}
	id := h.must(&CreateTask{Job: "wf", Phase: "p", Queue: "q2", Type: "w", AutoReview: true, AutoApprove: true,
		ParentJob: job, ParentStep: "task-1", ParentLease: &ref}).(*TaskResult).Task
	h.must(&Wait{LeaseRef: ref, Spec: WaitSpec{Steps: []string{"task-1"}}, SeenSeq: h.job(job).LastSeq})
	w := h.claimTask(TaskRoleWork, "q2", 1000)[0]
	h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: w.Attempt}, Op: TaskReportOutput, Output: []byte(`"result"`)})
	r := h.claimTask(TaskRoleReview, "q2", 1000)[0]
	h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: r.Attempt}, Op: TaskReportVerdict, Review: &Review{Verdict: VerdictApprove}})
	if j := h.job(job); j.Status != StatusQueued {
		t.Fatalf("parent is %s, want woken (Queued)", j.Status)
	}
	if eff := h.effectOf(job, "task-1"); eff == nil || string(eff.Payload) != `"result"` || eff.Failed {
		t.Fatalf("effect = %+v", eff)
	}
	// The workflow woke (Queued): a new attempt holds it and creates the
	// next task.
	c2 := h.claimOne(60_000)
	ref2 := c2.Lease()
	id2 := h.must(&CreateTask{Job: "wf", Phase: "p2", Queue: "q2", Type: "w", ParentJob: job, ParentStep: "task-2", ParentLease: &ref2}).(*TaskResult).Task
	h.must(&TaskCommand{TaskTarget: TaskTarget{ID: id2}, Op: TaskOpCancel, Reason: "not needed"})
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
	id := h.taskTo("j", TaskPaused)
	lease := TaskLeaseRef{Task: id, Attempt: h.task(id).Attempt}
	res := h.must(&TaskCommand{TaskTarget: TaskTarget{ID: id}, Op: TaskOpSuspend, By: "ann", Reason: "budget"}).(*TaskResult)
	if res.State != TaskSuspended || h.task(id).LeaseOwner != "" {
		t.Fatalf("suspended paused task: %+v, record %+v", res, h.task(id))
	}
	h.mustFail(&TaskReport{TaskLeaseRef: lease, Op: TaskReportUnpause}, ErrStaleTaskAttempt)
	if r := h.must(&TaskCommand{TaskTarget: TaskTarget{ID: id}, Op: TaskOpResume, By: "ann"}).(*TaskResult); r.State != TaskPending {
		t.Fatalf("resumed into %s", r.State)
	}
	h.verify()
}
