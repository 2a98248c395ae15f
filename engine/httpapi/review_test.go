package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The review task routes through the Go client: a task created, worked,
// reviewed and approved; an illegal command answered 409 with the state and
// the legal commands, in JSON and through the client as a ReviewStateError;
// the manifest read back.
func TestReviewRoutes(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hostOf(hs.URL)}})
	ctx := context.Background()

	res, err := c.CreateReview(ctx, engine.CreateReview{Job: "email", Phase: "requirements", Queue: "q", Type: "analyse",
		JobDescription: "validate e-mail"})
	if err != nil || res.State != engine.ReviewPending {
		t.Fatalf("create = %+v, %v", res, err)
	}
	id := res.Review
	_, err = c.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: engine.ReviewOpApprove, By: "ann"})
	var se *engine.ReviewStateError
	if !errors.As(err, &se) || !errors.Is(err, engine.ErrIllegalReviewCommand) || se.State != engine.ReviewPending ||
		!slices.Equal(se.Legal, []engine.ReviewOp{engine.ReviewOpSuspend, engine.ReviewOpCancel}) {
		t.Fatalf("approve while PENDING through the client: %v (%+v)", err, se)
	}
	raw := postJSON(t, hs.URL+"/v1/tasks/approve", map[string]any{"task_id": id, "by": "ann"}, nil)
	body := errorBodyOf(t, raw)
	if raw.status != http.StatusConflict || body.Name != "illegal_task_command" || body.Code != engine.ReviewStateCode ||
		body.ReviewState != "PENDING" || !slices.Equal(body.LegalCommands, []string{"suspend", "cancel"}) {
		t.Fatalf("409 body = %d %+v", raw.status, body)
	}

	claimed, err := c.ClaimReviews(ctx, engine.ClaimReviews{Queue: "q", Owner: "w", Max: 1, LeaseMS: 10_000})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	if _, err := c.ReviewHeartbeat(ctx, engine.ReviewHeartbeat{Leases: []engine.ReviewLeaseRef{claimed[0].Lease()}, LeaseMS: 10_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: claimed[0].Lease(),
		Op: engine.ReviewReportOutput, Output: []byte("rules"), Cost: 3, Summary: "analysed"}); err != nil {
		t.Fatal(err)
	}
	var step engine.ReviewResult
	if raw := postJSON(t, hs.URL+"/v1/tasks/step", map[string]any{"job_id": "email", "phase": "requirements", "by": "ann"}, &step); raw.status != http.StatusOK || step.State != engine.ReviewReviewing {
		t.Fatalf("step over JSON: %d %s", raw.status, raw.body)
	}
	rv, err := c.ClaimReviews(ctx, engine.ClaimReviews{Role: engine.ReviewRoleReview, Queue: "q", Owner: "r", Max: 1, LeaseMS: 10_000})
	if err != nil || len(rv) != 1 || string(rv[0].Output) != "rules" {
		t.Fatalf("review claim = %+v, %v", rv, err)
	}
	if _, err := c.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: rv[0].Lease(),
		Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove, Summary: "complete"}}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: engine.ReviewOpApprove, By: "ann"}); err != nil || r.State != engine.ReviewSuccess {
		t.Fatalf("approve = %+v, %v", r, err)
	}
	// A stale lease holder is refused, and the sentinel crosses the wire.
	_, err = c.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: rv[0].Lease(),
		Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove}})
	if !errors.Is(err, engine.ErrStaleReviewAttempt) {
		t.Fatalf("stale verdict: %v", err)
	}
	if _, err := c.DescribeReview(ctx, engine.ReviewTarget{ID: 99}); !errors.Is(err, engine.ErrUnknownReview) {
		t.Fatalf("unknown task: %v", err)
	}
	got, err := c.DescribeReview(ctx, engine.ReviewTarget{Job: "email", Phase: "requirements"})
	if err != nil || got.ID != id || got.State != engine.ReviewSuccess || got.DecidedBy != "ann" {
		t.Fatalf("describe = %+v, %v", got, err)
	}
	hist, err := c.ReviewHistory(ctx, id)
	if err != nil || len(hist) != 7 || hist[len(hist)-1].Type != engine.ReviewEventApproved {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	list, err := c.ListReviews(ctx, "email")
	if err != nil || len(list) != 1 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	m, err := c.ReviewManifest(ctx, "email")
	if err != nil || m.JobID != "email" || m.Status != engine.ReviewSuccess || m.Metrics.CumulativeCost != 3 ||
		len(m.History) != 1 || m.History[0].Summary != "complete" || m.Description != "validate e-mail" {
		t.Fatalf("manifest = %+v, %v", m, err)
	}
	// The manifest's JSON has the origin model's keys.
	raw = doRaw(t, http.MethodGet, hs.URL+"/v1/manifests/email", nil, nil)
	for _, k := range []string{`"job_id":"email"`, `"status":"SUCCESS"`, `"current_phase":"requirements"`,
		`"cumulative_cost":3`, `"cumulative_time_seconds"`, `"history":[{"phase":"requirements","status":"SUCCESS","summary":"complete"`} {
		if !strings.Contains(string(raw.body), k) {
			t.Errorf("manifest JSON lacks %s: %s", k, raw.body)
		}
	}
}

// A task claim with a wait is a long poll: it answers once a task it may
// claim is created, and empty (asked again by the client) before that.
func TestReviewClaimLongPoll(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hostOf(hs.URL)}, PollWait: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan []engine.ClaimedReview, 1)
	go func() {
		ts, err := c.ClaimReviewsWait(ctx, engine.ClaimReviews{Queue: "lp", Owner: "w", Max: 1, LeaseMS: 10_000})
		if err != nil {
			t.Errorf("long poll: %v", err)
		}
		got <- ts
	}()
	time.Sleep(150 * time.Millisecond) // a few empty polls first
	if _, err := e.CreateReview(ctx, engine.CreateReview{Job: "lp", Phase: "p", Queue: "lp", Type: "w"}); err != nil {
		t.Fatal(err)
	}
	ts := <-got
	if len(ts) != 1 || ts[0].Phase != "p" || ts[0].Attempt != 1 {
		t.Fatalf("claimed %+v", ts)
	}
}

// A review task's creator and deciders are who the token names, whatever
// the body's by says; on a server without tokens, where callers have no
// name, the body's by is kept (the CLI's --by).
func TestReviewByIsTheCaller(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	tk := &Tokens{}
	if err := tk.Add("carl", RoleClient, "carl-token"); err != nil {
		t.Fatal(err)
	}
	_, hs := serve(t, ServerConfig{Service: e, Tokens: tk})
	c := newClient(t, ClientConfig{Addrs: []string{hostOf(hs.URL)}, Token: "carl-token"})
	ctx := context.Background()
	res, err := c.CreateReview(ctx, engine.CreateReview{Job: "j", Phase: "p", Queue: "q", Type: "t", By: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: res.Review}, Op: engine.ReviewOpSuspend, By: "mallory"}); err != nil {
		t.Fatal(err)
	}
	hist, err := e.ReviewHistory(ctx, res.Review)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history %+v, %v", hist, err)
	}
	for _, ev := range hist {
		if ev.By != "carl" {
			t.Errorf("%s is recorded as by %q, want the token's name carl", ev.Type, ev.By)
		}
	}

	// Without tokens the caller has no name: the body's by stands.
	e2 := openEngine(t, engine.Limits{})
	_, hs2 := serve(t, ServerConfig{Service: e2})
	c2 := newClient(t, ClientConfig{Addrs: []string{hostOf(hs2.URL)}})
	res, err = c2.CreateReview(ctx, engine.CreateReview{Job: "j", Phase: "p", Queue: "q", Type: "t", By: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if hist, err := e2.ReviewHistory(ctx, res.Review); err != nil || len(hist) != 1 || hist[0].By != "ann" {
		t.Fatalf("a token-less server's task: %+v, %v", hist, err)
	}
}

// The errors about review task bodies name the bodies and their fields as
// they were named before the Go types were renamed from Task to Review: the
// texts are on the wire.
func TestReviewErrorsKeepTheirWireNames(t *testing.T) {
	f := newBadFixture(t)
	h := map[string]string{"Content-Type": contentJSON, "Authorization": "Bearer " + testToken}
	cases := []struct {
		path    string
		body    []byte
		message string
	}{
		{"/v1/tasks", nil, "body is empty; want a CreateTask"},
		{"/v1/tasks/approve", []byte(`{"op": `), "not a valid JSON TaskCommand"},
		{"/v1/tasks/claim", nil, "want a ClaimTasks"},
		{"/v1/tasks/report", []byte(`{"attempt": 1, "op": 1}`), "TaskReport.Task is required"},
		{"/v1/tasks/heartbeat", nil, "want a TaskHeartbeat"},
		{"/v1/tasks", []byte(`{"job_id": "j", "queue": "q", "type": "t"}`), "CreateTask.Phase is required"},
	}
	for _, tc := range cases {
		r := doRaw(t, "POST", f.url+tc.path, tc.body, h)
		if b := errorBodyOf(t, r); r.status != http.StatusBadRequest || !strings.Contains(b.Message, tc.message) {
			t.Errorf("POST %s: %d %q, want 400 containing %q", tc.path, r.status, b.Message, tc.message)
		}
	}
}
