package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// awaitingReview moves a new task of job to APPROVAL_REQUIRED (verdict
// approve) or INTERVENTION_REQUIRED (verdict intervene) on e.
func awaitingReview(t *testing.T, e *embedded.Engine, job, queue string, v engine.Verdict) engine.ReviewID {
	t.Helper()
	ctx := context.Background()
	res, err := e.CreateReview(ctx, engine.CreateReview{Job: job, Phase: "draft", Queue: queue, Type: "write", AutoReview: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.ClaimReviews(ctx, engine.ClaimReviews{Queue: queue, Owner: "w", Max: 1, LeaseMS: 60_000})
	if err != nil || len(w) != 1 {
		t.Fatalf("work claim: %+v, %v", w, err)
	}
	if _, err := e.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: w[0].Lease(),
		Op: engine.ReviewReportOutput, Output: []byte("text")}); err != nil {
		t.Fatal(err)
	}
	rv, err := e.ClaimReviews(ctx, engine.ClaimReviews{Role: engine.ReviewRoleReview, Queue: queue, Owner: "r", Max: 1, LeaseMS: 60_000})
	if err != nil || len(rv) != 1 {
		t.Fatalf("review claim: %+v, %v", rv, err)
	}
	if _, err := e.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: rv[0].Lease(),
		Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: v, Summary: "looked"}}); err != nil {
		t.Fatal(err)
	}
	return res.Review
}

// GET /v1/tasks/awaiting lists the tasks awaiting a person across jobs in
// snake_case JSON, filtered and paged, to any role that may read and to no
// caller without a token; a bad filter is a 400 naming it.
func TestAwaitingReviewsRoute(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e, Tokens: testTokens(t)})
	a := awaitingReview(t, e, "order-1", "qa", engine.VerdictApprove)
	b := awaitingReview(t, e, "order-2", "qb", engine.VerdictIntervene)
	if _, err := e.CreateReview(context.Background(), engine.CreateReview{Job: "order-3", Phase: "p", Queue: "qc", Type: "write"}); err != nil {
		t.Fatal(err)
	}
	auth := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	raw := doRaw(t, http.MethodGet, hs.URL+"/v1/tasks/awaiting", nil, auth(readerToken))
	if raw.status != http.StatusOK {
		t.Fatalf("reader: %d %s", raw.status, raw.body)
	}
	for _, k := range []string{`"tasks":[{"task_id":1,"job_id":"order-1","phase":"draft"`, `"status":"APPROVAL_REQUIRED"`,
		`"status":"INTERVENTION_REQUIRED"`, `"next":0`} {
		if !strings.Contains(string(raw.body), k) {
			t.Errorf("JSON lacks %s: %s", k, raw.body)
		}
	}
	if strings.Contains(string(raw.body), "order-3") {
		t.Errorf("a PENDING task is listed: %s", raw.body)
	}
	if raw := doRaw(t, http.MethodGet, hs.URL+"/v1/tasks/awaiting", nil, nil); raw.status != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", raw.status, raw.body)
	}
	raw = doRaw(t, http.MethodGet, hs.URL+"/v1/tasks/awaiting?state=RUNNING", nil, auth(readerToken))
	if body := errorBodyOf(t, raw); raw.status != http.StatusBadRequest || !strings.Contains(body.Message, "RUNNING does not await a person") {
		t.Errorf("state=RUNNING: %d %+v", raw.status, body)
	}
	raw = doRaw(t, http.MethodGet, hs.URL+"/v1/tasks/awaiting?state=LATE", nil, auth(readerToken))
	if body := errorBodyOf(t, raw); raw.status != http.StatusBadRequest || !strings.Contains(body.Message, `"LATE"`) {
		t.Errorf("state=LATE: %d %+v", raw.status, body)
	}

	c := newClient(t, ClientConfig{Addrs: []string{hostOf(hs.URL)}, Token: readerToken})
	ctx := context.Background()
	for _, tc := range []struct {
		q    engine.AwaitingQuery
		want []engine.ReviewID
		next engine.ReviewID
	}{
		{engine.AwaitingQuery{}, []engine.ReviewID{a, b}, 0},
		{engine.AwaitingQuery{State: engine.ReviewInterventionRequired}, []engine.ReviewID{b}, 0},
		{engine.AwaitingQuery{Queue: "qa"}, []engine.ReviewID{a}, 0},
		{engine.AwaitingQuery{Type: "nobody"}, nil, 0},
		{engine.AwaitingQuery{Limit: 1}, []engine.ReviewID{a}, a},
		{engine.AwaitingQuery{Limit: 1, After: a}, []engine.ReviewID{b}, 0},
	} {
		p, err := c.ListAwaitingReviews(ctx, tc.q)
		if err != nil {
			t.Fatalf("%+v: %v", tc.q, err)
		}
		var got []engine.ReviewID
		for _, tk := range p.Reviews {
			got = append(got, tk.ID)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1])) || p.Next != tc.next {
			t.Errorf("%+v: %v next %d, want %v next %d", tc.q, got, p.Next, tc.want, tc.next)
		}
	}
	if _, err := c.ListAwaitingReviews(ctx, engine.AwaitingQuery{Limit: 5000}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Errorf("limit 5000 through the client: %v", err)
	}
}
