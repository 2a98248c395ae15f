package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// "heddle task list" without a job lists the tasks of every job awaiting a
// person, as a table, JSON or JSON lines, filtered and paged; bad flags
// exit non-zero naming them.
func TestReviewListAwaiting(t *testing.T) {
	w := newWFEnvInMemory(t)
	ctx := context.Background()
	toReview := func(job, queue string) {
		t.Helper()
		if _, err := w.e.CreateReview(ctx, engine.CreateReview{Job: job, Phase: "draft", Queue: queue, Type: "write"}); err != nil {
			t.Fatal(err)
		}
		c, err := w.e.ClaimReviews(ctx, engine.ClaimReviews{Queue: queue, Owner: "agent", Max: 1, LeaseMS: 60_000})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim = %+v, %v", c, err)
		}
		if _, err := w.e.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: c[0].Lease(),
			Op: engine.ReviewReportOutput, Output: []byte(`"text"`)}); err != nil {
			t.Fatal(err)
		}
	}
	toReview("order-1", "qa")
	if _, err := w.e.CreateReview(ctx, engine.CreateReview{Job: "order-2", Phase: "idle", Queue: "qz", Type: "write"}); err != nil {
		t.Fatal(err)
	}
	toReview("order-3", "qb")
	must := func(args ...string) string {
		t.Helper()
		code, out, errs := w.reviewRun(args...)
		if code != 0 {
			t.Fatalf("task %v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	out := must("list")
	wantContains(t, "list", out, "JOB", "order-1", "order-3", "REVIEW_REQUIRED", "suspend cancel step")
	if strings.Contains(out, "order-2") {
		t.Errorf("a PENDING task is listed:\n%s", out)
	}
	var ts []engine.Review
	wfDecodeOne(t, must("list", "-t", "qb", "-o", "json"), &ts)
	if len(ts) != 1 || ts[0].Job != "order-3" || ts[0].State != engine.ReviewReviewRequired {
		t.Fatalf("list -t qb -o json = %+v", ts)
	}
	lines := strings.Split(strings.TrimSpace(must("list", "--state", "review_required", "-o", "jsonl")), "\n")
	if len(lines) != 2 || !json.Valid([]byte(lines[0])) {
		t.Fatalf("jsonl = %q", lines)
	}
	code, out, errs := w.reviewRun("list", "--limit", "1")
	if code != 0 || !strings.Contains(out, "order-1") || strings.Contains(out, "order-3") || !strings.Contains(errs, "--cursor 1") {
		t.Fatalf("--limit 1: exit %d\n%s%s", code, out, errs)
	}
	wantContains(t, "second page", must("list", "--limit", "1", "--cursor", "1"), "order-3")
	for _, bad := range [][]string{
		{"list", "--state", "RUNNING"},
		{"list", "--limit", "0"},
		{"list", "--cursor", "x"},
		{"list", "order-1", "--state", "REVIEW_REQUIRED"},
		{"list", "order-1", "--limit", "5"},
		{"list", "a", "b"},
	} {
		if code, _, errs := w.reviewRun(bad...); code == 0 || errs == "" {
			t.Errorf("task %v: exit %d, stderr %q", bad, code, errs)
		}
	}
}
