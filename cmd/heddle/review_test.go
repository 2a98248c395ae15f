package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// reviewRun runs "heddle task ARGS... --addr ADDR".
func (w *wfEnv) reviewRun(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"task", "--addr", w.addr}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// The task commands against a dev node: a draft configured and activated,
// worked and reviewed (by the test, as a worker would), rejected with
// feedback by --by, and approved; an illegal command exits non-zero naming
// the state and the legal commands; describe prints the manifest.
func TestReviewCommands(t *testing.T) {
	w := newWFEnvInMemory(t)
	t.Setenv("HEDDLE_USER", "")
	t.Setenv("USER", "ops")
	ctx := context.Background()
	if _, err := w.e.CreateReview(ctx, engine.CreateReview{Job: "email", Phase: "spec", Queue: "q", Type: "draft", Draft: true,
		JobDescription: "validate e-mail"}); err != nil {
		t.Fatal(err)
	}
	must := func(args ...string) string {
		t.Helper()
		code, out, errs := w.reviewRun(args...)
		if code != 0 {
			t.Fatalf("task %v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	must("config", "email/spec", "--objective", "list the rules", "--acceptance", "RFC 5322", "--acceptance", "IDN", "--input", `["x"]`)
	out := must("activate", "email/spec")
	wantContains(t, "activate", out, "Task 1: activate by ops; now PENDING.")
	code, _, errs := w.reviewRun("approve", "1", "--by", "ann")
	if code == 0 {
		t.Fatal("approve of a PENDING task succeeded")
	}
	wantContains(t, "illegal approve", errs, "PENDING", "legal: suspend, cancel")

	work := func() {
		t.Helper()
		c, err := w.e.ClaimReviews(ctx, engine.ClaimReviews{Queue: "q", Owner: "agent", Max: 1, LeaseMS: 60_000})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim = %+v, %v", c, err)
		}
		if _, err := w.e.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: c[0].Lease(),
			Op: engine.ReviewReportOutput, Output: []byte(`"rules"`), Cost: 4}); err != nil {
			t.Fatal(err)
		}
		must("step", "email/spec", "--by", "ann")
		r, err := w.e.ClaimReviews(ctx, engine.ClaimReviews{Role: engine.ReviewRoleReview, Queue: "q", Owner: "critic", Max: 1, LeaseMS: 60_000})
		if err != nil || len(r) != 1 {
			t.Fatalf("review claim = %+v, %v", r, err)
		}
		if _, err := w.e.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: r[0].Lease(),
			Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove, Summary: "looks complete"}}); err != nil {
			t.Fatal(err)
		}
	}
	work()
	var rej reviewOpOutput
	wfDecodeOne(t, must("reject", "1", "--by", "ann", "--reason", "add IDN", "--json"), &rej)
	if rej.Status != engine.ReviewPending || rej.By != "ann" || rej.Command != "reject" {
		t.Fatalf("reject = %+v", rej)
	}
	work()
	if code, _, errs := w.reviewRun("approve", "email/spec", "--by", "ann", "--expect", "REVIEWING"); code == 0 {
		t.Fatal("approve expecting REVIEWING succeeded on an APPROVAL_REQUIRED task")
	} else {
		wantContains(t, "approve --expect", errs, "APPROVAL_REQUIRED")
	}
	must("approve", "email/spec", "--by", "ann", "--expect", "approval_required")
	out = must("history", "email/spec")
	wantContains(t, "history", out, "task_drafted", "task_configured", "task_rejected", "APPROVAL_REQUIRED → PENDING", "ann", "add IDN", "critic")
	out = must("list", "email")
	wantContains(t, "list", out, "spec", "SUCCESS", "8")
	out = must("describe", "email")
	wantContains(t, "describe", out, "Job email: validate e-mail", "Status SUCCESS, current phase spec; cost 8", "looks complete", "(by ann)")
	var m engine.Manifest
	wfDecodeOne(t, must("describe", "email", "-o", "json"), &m)
	if m.JobID != "email" || m.Metrics.CumulativeCost != 8 || len(m.History) != 1 || m.History[0].DecidedBy != "ann" {
		t.Fatalf("manifest = %+v", m)
	}
	review, err := w.e.DescribeReview(ctx, engine.ReviewTarget{ID: 1})
	if err != nil || review.Config.Objective != "list the rules" || len(review.Config.Acceptance) != 2 || string(review.Config.Input) != `["x"]` {
		t.Fatalf("task = %+v, %v", review, err)
	}
	if code, _, _ := w.reviewRun("approve", "no-slash"); code == 0 {
		t.Fatal("a malformed TASK was accepted")
	}
}

// "heddle demo review" tells its whole story and ends with the manifest.
func TestReviewDemo(t *testing.T) {
	var out bytes.Buffer
	if err := runReviewDemo(context.Background(), t.TempDir(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	wantContains(t, "demo review", out.String(),
		"approve implementation too early → refused: it is PENDING; legal now: [suspend cancel]",
		`reject implementation with feedback "also accept internationalised domains" → PENDING`,
		"implementation: rework, run 2",
		"tests started after the approval",
		`"cumulative_cost": 34`,
		`"status": "SUCCESS"`)
}
