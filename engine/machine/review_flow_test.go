package machine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func (h *harness) claimReview(role engine.ReviewRole, queue string, leaseMS int64) []engine.ClaimedReview {
	h.t.Helper()
	return h.must(&engine.ClaimReviews{Role: role, Queue: queue, Owner: "w-" + role.String(), Max: 10, LeaseMS: leaseMS}).(*engine.ClaimReviewsResult).Reviews
}

func (h *harness) decide(id engine.ReviewID, op engine.ReviewOp, reason string) {
	h.t.Helper()
	h.must(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: op, By: "steward", Reason: reason})
}

// A DAG requirements → implementation → tests as a trace: each task is
// gated by review and approval; the implementation is rejected once with
// feedback, reworked with that feedback, and approved; only then may the
// tests start. The manifest sums the costs and times.
func TestReviewDAGTrace(t *testing.T) {
	h := newHarness(t)
	mk := func(phase string, deps ...string) engine.ReviewID {
		return h.must(&engine.CreateReview{Job: "email", Phase: phase, Queue: "agents", Type: phase, Deps: deps,
			JobDescription: "validate e-mail addresses", Config: engine.ReviewConfig{Objective: phase}}).(*engine.ReviewResult).Review
	}
	req := mk("requirements")
	impl := mk("implementation", "requirements")
	tests := mk("tests", "implementation")

	run := func(want engine.ReviewID, cost float64, workMS int64) engine.ClaimedReview {
		t.Helper()
		got := h.claimReview(engine.ReviewRoleWork, "agents", 60_000)
		if len(got) != 1 || got[0].Review != want {
			t.Fatalf("work claim = %+v, want only task %d", got, want)
		}
		h.now += workMS
		h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: want, Attempt: got[0].Attempt}, Op: engine.ReviewReportOutput,
			Output: []byte("work of " + got[0].Phase), Cost: cost, Summary: "did " + got[0].Phase})
		h.decide(want, engine.ReviewOpStep, "")
		rv := h.claimReview(engine.ReviewRoleReview, "agents", 60_000)
		if len(rv) != 1 || rv[0].Review != want || string(rv[0].Output) != "work of "+got[0].Phase {
			t.Fatalf("review claim = %+v", rv)
		}
		h.now += 1000
		h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: want, Attempt: rv[0].Attempt}, Op: engine.ReviewReportVerdict,
			Assessment: &engine.Assessment{Verdict: engine.VerdictApprove, Recommendations: []string{"ship it"}, Summary: "reviewed " + got[0].Phase}})
		if s := h.review(want).State; s != engine.ReviewApprovalRequired {
			t.Fatalf("after the verdict: %s", s)
		}
		return got[0]
	}
	run(req, 2, 4000)
	// The implementation waits for the requirements' approval.
	if got := h.claimReview(engine.ReviewRoleWork, "agents", 60_000); len(got) != 0 {
		t.Fatalf("claimed %+v before the requirements were approved", got)
	}
	h.decide(req, engine.ReviewOpApprove, "")
	first := run(impl, 5, 10_000)
	if first.Feedback != "" {
		t.Fatalf("first run has feedback %q", first.Feedback)
	}
	h.decide(impl, engine.ReviewOpReject, "handle internationalised domains")
	if s := h.review(impl).State; s != engine.ReviewPending {
		t.Fatalf("rejected implementation is %s, want PENDING", s)
	}
	rework := run(impl, 3, 6000)
	if rework.Feedback != "handle internationalised domains" || rework.Runs != 2 {
		t.Fatalf("rework claim = %+v, want the feedback and run 2", rework)
	}
	if got := h.claimReview(engine.ReviewRoleWork, "agents", 60_000); len(got) != 0 {
		t.Fatalf("tests claimed %+v before the implementation was approved", got)
	}
	h.decide(impl, engine.ReviewOpApprove, "")
	got := h.claimReview(engine.ReviewRoleWork, "agents", 60_000)
	if len(got) != 1 || got[0].Review != tests {
		t.Fatalf("after approval, claim = %+v, want the tests", got)
	}
	h.now += 2000
	h.verify()

	var m *engine.Manifest
	ts := []engine.Review{*h.review(req), *h.review(impl), *h.review(tests)}
	m = engine.BuildManifest("email", ts, h.now)
	if m.JobID != "email" || m.Description != "validate e-mail addresses" || m.Status != engine.ReviewRunning || m.CurrentPhase != "tests" {
		t.Fatalf("manifest = %+v", m)
	}
	// Costs 2 + 5 + 3; time: requirements 4 s work + 1 s review, the
	// implementation twice (10 + 1) and (6 + 1), the tests 2 s so far.
	if m.Metrics.CumulativeCost != 10 || m.Metrics.CumulativeTimeSeconds != 25 {
		t.Fatalf("metrics = %+v, want cost 10 and 25 s", m.Metrics)
	}
	wantHist := []engine.ManifestEntry{
		{Phase: "requirements", Status: engine.ReviewSuccess, Summary: "reviewed requirements", ReviewID: req, DecidedBy: "steward"},
		{Phase: "implementation", Status: engine.ReviewSuccess, Summary: "reviewed implementation", ReviewID: impl, DecidedBy: "steward"},
		{Phase: "tests", Status: engine.ReviewRunning, Summary: "", ReviewID: tests},
	}
	if !slices.Equal(m.History, wantHist) {
		t.Fatalf("history = %+v\nwant %+v", m.History, wantHist)
	}
	hist := h.reviewHistory(impl)
	var rejected *engine.ReviewEvent
	for i := range hist {
		if hist[i].Type == engine.ReviewEventRejected {
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
func TestReviewStuckRecovery(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateReview{Job: "j", Phase: "p", Queue: "q", Type: "w"}).(*engine.ReviewResult).Review
	c := h.claimReview(engine.ReviewRoleWork, "q", 10_000)[0]
	h.now += 9000
	hb := h.must(&engine.ReviewHeartbeat{Leases: []engine.ReviewLeaseRef{{Review: id, Attempt: c.Attempt}}, LeaseMS: 10_000}).(*engine.ReviewHeartbeatResult)
	if len(hb.Refused) != 0 || hb.LeaseExpiryMS != h.now+10_000 {
		t.Fatalf("heartbeat = %+v", hb)
	}
	h.now += 2000 // past the first lease, within the renewed one
	if r := h.must(&engine.ReclaimReviews{Max: 10}).(*engine.ReviewSweepResult); len(r.Reviews) != 0 {
		t.Fatalf("reclaimed a renewed lease: %+v", r)
	}
	h.now += 9000
	if r := h.must(&engine.ReclaimReviews{Max: 10}).(*engine.ReviewSweepResult); !slices.Equal(r.Reviews, []engine.ReviewID{id}) {
		t.Fatalf("reclaim = %+v", r)
	}
	if s := h.review(id).State; s != engine.ReviewPending {
		t.Fatalf("stuck RUNNING went to %s, want PENDING", s)
	}
	_, err := h.apply(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: c.Attempt}, Op: engine.ReviewReportOutput, Output: []byte("late")})
	var se *engine.StaleReviewError
	if !errors.As(err, &se) || se.Current != c.Attempt || se.State != engine.ReviewPending {
		t.Fatalf("late output: %v", err)
	}
	c2 := h.claimReview(engine.ReviewRoleWork, "q", 10_000)[0]
	h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: c2.Attempt}, Op: engine.ReviewReportOutput, Output: []byte("ok")})
	h.decide(id, engine.ReviewOpStep, "")
	r := h.claimReview(engine.ReviewRoleReview, "q", 5000)[0]
	h.now += 5000
	h.must(&engine.ReclaimReviews{Max: 10})
	if s := h.review(id).State; s != engine.ReviewReviewRequired {
		t.Fatalf("stuck REVIEWING went to %s, want REVIEW_REQUIRED", s)
	}
	h.mustFail(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: r.Attempt}, Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove}}, engine.ErrStaleReviewAttempt)
	hb = h.must(&engine.ReviewHeartbeat{Leases: []engine.ReviewLeaseRef{{Review: id, Attempt: r.Attempt}}, LeaseMS: 1000}).(*engine.ReviewHeartbeatResult)
	if len(hb.Refused) != 1 {
		t.Fatalf("a stale heartbeat was not refused: %+v", hb)
	}
	hist := h.reviewHistory(id)
	var expired []engine.ReviewEvent
	for _, e := range hist {
		if e.Type == engine.ReviewEventLeaseExpired {
			expired = append(expired, e)
		}
	}
	if len(expired) != 2 || expired[0].From != engine.ReviewRunning || expired[1].From != engine.ReviewReviewing {
		t.Fatalf("lease expiries = %+v", expired)
	}
	h.verify()
}

// Auto review and auto approval: the output goes straight to REVIEWING
// and an approving verdict straight to SUCCESS, each recorded as by "auto".
// A reviewer that dies is replaced after its lease, and the review is
// started again by itself.
func TestReviewAutoReviewAndApproval(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateReview{Job: "j", Phase: "p", Queue: "q", Type: "w", AutoReview: true, AutoApprove: true}).(*engine.ReviewResult).Review
	c := h.claimReview(engine.ReviewRoleWork, "q", 10_000)[0]
	res := h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: c.Attempt}, Op: engine.ReviewReportOutput, Output: []byte("x")}).(*engine.ReviewResult)
	if res.State != engine.ReviewReviewing {
		t.Fatalf("auto review: %s", res.State)
	}
	h.claimReview(engine.ReviewRoleReview, "q", 1000)
	h.now += 1000
	h.must(&engine.ReclaimReviews{Max: 10})
	if s := h.review(id).State; s != engine.ReviewReviewing {
		t.Fatalf("after the reviewer's lease expired: %s, want REVIEWING again", s)
	}
	r := h.claimReview(engine.ReviewRoleReview, "q", 1000)[0]
	res = h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: r.Attempt}, Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove}}).(*engine.ReviewResult)
	if res.State != engine.ReviewSuccess {
		t.Fatalf("auto approval: %s", res.State)
	}
	hist := h.reviewHistory(id)
	if last := hist[len(hist)-1]; last.Type != engine.ReviewEventApproved || last.By != engine.ByAuto {
		t.Fatalf("last event = %+v", last)
	}
	// An intervening verdict is never approved automatically.
	id2 := h.must(&engine.CreateReview{Job: "j", Phase: "p2", Queue: "q", Type: "w", AutoReview: true, AutoApprove: true}).(*engine.ReviewResult).Review
	c = h.claimReview(engine.ReviewRoleWork, "q", 10_000)[0]
	h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id2, Attempt: c.Attempt}, Op: engine.ReviewReportOutput})
	r = h.claimReview(engine.ReviewRoleReview, "q", 1000)[0]
	h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id2, Attempt: r.Attempt}, Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictIntervene, Summary: "broken"}})
	if s := h.review(id2).State; s != engine.ReviewInterventionRequired {
		t.Fatalf("intervene with auto approval: %s", s)
	}
	h.verify()
}

// Draft configuration: config changes a DRAFT task and is refused once it
// is active, naming the state and what is legal there.
func TestReviewDraftConfig(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateReview{Job: "j", Phase: "p", Queue: "q", Type: "w", Draft: true,
		Config: engine.ReviewConfig{Objective: "first"}}).(*engine.ReviewResult).Review
	if got := h.claimReview(engine.ReviewRoleWork, "q", 1000); len(got) != 0 {
		t.Fatalf("claimed a draft: %+v", got)
	}
	h.must(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{Job: "j", Phase: "p"}, Op: engine.ReviewOpConfig,
		Config: &engine.ReviewConfig{Details: "more", Acceptance: []string{"a", "b"}, Input: []byte("in")}})
	h.must(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: engine.ReviewOpActivate})
	_, err := h.apply(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: engine.ReviewOpConfig, Config: &engine.ReviewConfig{Objective: "late"}})
	var se *engine.ReviewStateError
	if !errors.As(err, &se) || se.State != engine.ReviewPending || !slices.Equal(se.Legal, []engine.ReviewOp{engine.ReviewOpSuspend, engine.ReviewOpCancel}) {
		t.Fatalf("config when active: %v", err)
	}
	c := h.claimReview(engine.ReviewRoleWork, "q", 1000)[0]
	want := engine.ReviewConfig{Objective: "first", Details: "more", Acceptance: []string{"a", "b"}, Input: []byte("in")}
	if c.Config.Objective != want.Objective || c.Config.Details != want.Details ||
		!slices.Equal(c.Config.Acceptance, want.Acceptance) || string(c.Config.Input) != "in" {
		t.Fatalf("claimed config %+v, want %+v", c.Config, want)
	}
	h.verify()
}

// Bad input is refused with the field named, and writes nothing.
func TestReviewBadInput(t *testing.T) {
	h := newHarness(t)
	h.must(&engine.CreateReview{Job: "j", Phase: "a", Queue: "q", Type: "w"})
	before := h.snapshot()
	for _, c := range []engine.Command{
		&engine.CreateReview{Job: "j", Phase: "a", Queue: "q", Type: "w"},
		&engine.CreateReview{Job: "j", Phase: "b", Queue: "q", Type: "w", Deps: []string{"missing"}},
		&engine.CreateReview{Job: "j", Phase: "b", Queue: "q", Type: "w", Deps: []string{"b"}},
		&engine.CreateReview{Job: "j", Phase: "b", Type: "w"},
		&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: 1}, Op: engine.ReviewOpApprove},
		&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: 1}, Op: "bless", By: "x"},
		&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: 99}, Op: engine.ReviewOpCancel},
		&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: 1}, Op: engine.ReviewOpCancel, Expect: engine.ReviewRunning},
		&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: 1, Attempt: 1}, Op: engine.ReviewReportOutput, Cost: -1},
		&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: 1, Attempt: 1}, Op: engine.ReviewReportVerdict},
		&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: 1, Attempt: 1}, Op: engine.ReviewReportOutput},
		&engine.ClaimReviews{Role: 7, Queue: "q", Owner: "w", Max: 1, LeaseMS: 1},
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
func TestReviewParentStepEffect(t *testing.T) {
	h := newHarness(t)
	job := h.create("wf")
	c := h.claimOne(60_000)
	ref := engine.LeaseRef{Job: job, Attempt: c.Attempt}
	id := h.must(&engine.CreateReview{Job: "wf", Phase: "p", Queue: "q2", Type: "w", AutoReview: true, AutoApprove: true,
		ParentJob: job, ParentStep: "task-1", ParentLease: &ref}).(*engine.ReviewResult).Review
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Steps: []string{"task-1"}}, SeenSeq: h.job(job).LastSeq})
	w := h.claimReview(engine.ReviewRoleWork, "q2", 1000)[0]
	h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: w.Attempt}, Op: engine.ReviewReportOutput, Output: []byte(`"result"`)})
	r := h.claimReview(engine.ReviewRoleReview, "q2", 1000)[0]
	h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: r.Attempt}, Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove}})
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
	id2 := h.must(&engine.CreateReview{Job: "wf", Phase: "p2", Queue: "q2", Type: "w", ParentJob: job, ParentStep: "task-2", ParentLease: &ref2}).(*engine.ReviewResult).Review
	h.must(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id2}, Op: engine.ReviewOpCancel, Reason: "not needed"})
	if eff := h.effectOf(job, "task-2"); eff == nil || !eff.Failed {
		t.Fatalf("effect of a canceled task = %+v", eff)
	}
	h.verify()
}

// The origin model lets a person suspend any active
// task; a PAUSED one (its worker rate limited) could not be. Suspending it
// ends the worker's lease: its next report is stale, and resume runs the
// work again (PENDING).
func TestSuspendAPausedReview(t *testing.T) {
	h := newHarness(t)
	id := h.reviewTo("j", engine.ReviewPaused)
	lease := engine.ReviewLeaseRef{Review: id, Attempt: h.review(id).Attempt}
	res := h.must(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: engine.ReviewOpSuspend, By: "ann", Reason: "budget"}).(*engine.ReviewResult)
	if res.State != engine.ReviewSuspended || h.review(id).LeaseOwner != "" {
		t.Fatalf("suspended paused task: %+v, record %+v", res, h.review(id))
	}
	h.mustFail(&engine.ReviewReport{ReviewLeaseRef: lease, Op: engine.ReviewReportUnpause}, engine.ErrStaleReviewAttempt)
	if r := h.must(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: engine.ReviewOpResume, By: "ann"}).(*engine.ReviewResult); r.State != engine.ReviewPending {
		t.Fatalf("resumed into %s", r.State)
	}
	h.verify()
}
