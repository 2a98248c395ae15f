package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// Every Service method works through Client and Server, and answers what
// the engine answers.
func TestClientCoversTheService(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	var s engine.Service = newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	claimOne := func(queue string) engine.ClaimedJob {
		t.Helper()
		jobs, err := s.Claim(ctx, engine.Claim{Queue: queue, Owner: "w", Max: 1, LeaseMS: 60_000})
		must(err)
		if len(jobs) != 1 {
			t.Fatalf("claimed %v", jobs)
		}
		return jobs[0]
	}

	cr, err := s.Create(ctx, engine.CreateJob{WorkflowID: "svc/1", Type: "T", Queue: "q", Input: []byte(`[1]`), Draft: true})
	must(err)
	tgt := engine.Target{WorkflowID: "svc/1"}
	_, err = s.Activate(ctx, engine.Activate{Target: tgt})
	must(err)
	_, err = s.Suspend(ctx, engine.Suspend{Target: tgt, Reason: "look"})
	must(err)
	st, err := s.Resume(ctx, engine.Resume{Target: engine.Target{Job: cr.Job}})
	must(err)
	if st.Status != engine.StatusQueued {
		t.Fatalf("resumed into %s", st.Status)
	}
	j := claimOne("q")
	ref := j.Lease()
	hb, err := s.Heartbeat(ctx, engine.Heartbeat{Leases: []engine.LeaseRef{ref}, LeaseMS: 60_000})
	must(err)
	if len(hb.Refused) != 0 {
		t.Fatalf("heartbeat refused %v", hb.Refused)
	}
	_, err = s.Append(ctx, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "marker", Name: "m"}}})
	must(err)
	ar, err := s.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: "a/1", Type: "activity_completed", Payload: []byte(`["ok"]`)})
	must(err)
	wr, err := s.Wait(ctx, engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}}, SeenSeq: ar.LastSeq})
	must(err)
	if wr.Woken || wr.Status != engine.StatusWaiting {
		t.Fatalf("wait: %+v", wr)
	}
	sr, err := s.Signal(ctx, engine.Signal{Target: tgt, Name: "go", Payload: []byte(`[2]`)})
	must(err)
	if !sr.Woke {
		t.Fatal("the signal did not wake the job")
	}
	_, err = s.RequestCancel(ctx, engine.RequestCancel{Target: tgt, Reason: "please"})
	must(err)
	j = claimOne("q")
	next, err := s.ContinueAsNew(ctx, engine.ContinueAsNew{LeaseRef: j.Lease(), Input: []byte(`[3]`)})
	must(err)
	j = claimOne("q")
	if j.Job != next.Job {
		t.Fatalf("claimed %d, want the new run %d", j.Job, next.Job)
	}
	_, err = s.Requeue(ctx, engine.Requeue{LeaseRef: j.Lease(), Reason: "again"})
	must(err)
	j = claimOne("q")
	_, err = s.Fail(ctx, engine.Fail{LeaseRef: j.Lease(), Error: []byte(`"boom"`)})
	must(err)

	// Reads.
	eff, err := s.Effect(ctx, cr.Job, "a/1")
	must(err)
	if eff == nil || eff.CommittedSeq != ar.LastSeq || eff.Attempt != ref.Attempt {
		t.Fatalf("effect %+v", eff)
	}
	if eff, err := s.Effect(ctx, cr.Job, "nothing"); err != nil || eff != nil {
		t.Fatalf("a missing effect: %+v, %v", eff, err)
	}
	want, err := e.History(ctx, cr.Job, 0, 0)
	must(err)
	got, err := s.History(ctx, cr.Job, 0, 0)
	must(err)
	if gb, wb := mustJSONString(t, got), mustJSONString(t, want); gb != wb {
		t.Fatalf("history over HTTP\n%s\nwant\n%s", gb, wb)
	}
	page, err := s.History(ctx, cr.Job, 2, 3)
	must(err)
	if len(page.Events) != 3 || page.Events[0].Seq != 3 || page.Next != 5 {
		t.Fatalf("history page %+v", page)
	}
	lp, err := s.List(ctx, engine.ListQuery{Status: engine.StatusFailed, Type: "T", Queue: "q"})
	must(err)
	if len(lp.Jobs) != 1 || lp.Jobs[0].ID != next.Job {
		t.Fatalf("list of failed jobs %+v", lp)
	}
	lp, err = s.List(ctx, engine.ListQuery{Limit: 1, Order: engine.ListStartAsc})
	must(err)
	if len(lp.Jobs) != 1 || lp.Next != cr.Job {
		t.Fatalf("first page %+v", lp)
	}
	lp, err = s.List(ctx, engine.ListQuery{After: lp.Next})
	must(err)
	if len(lp.Jobs) != 1 || lp.Jobs[0].ID != next.Job || lp.Next != 0 {
		t.Fatalf("second page %+v", lp)
	}
	closed, err := s.WaitClosed(ctx, engine.Target{Job: cr.Job})
	must(err)
	if closed.Status != engine.StatusCompleted {
		t.Fatalf("first run %s", closed.Status)
	}
	d, err := s.Describe(ctx, tgt)
	must(err)
	if d.ID != next.Job || d.Status != engine.StatusFailed {
		t.Fatalf("describe %+v", d)
	}
	_, err = s.Cancel(ctx, engine.Cancel{Target: tgt})
	if err == nil {
		t.Fatal("cancelled a failed run")
	}
	if _, err := s.Describe(ctx, engine.Target{}); err == nil {
		t.Fatal("described an empty target")
	}
}

func mustJSONString(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A person with curl speaks JSON: snake_case keys, payloads in base64,
// statuses and reuse policies by name, in requests and answers alike.
func TestJSONForPeople(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	var cr engine.CreateResult
	r := postJSON(t, hs.URL+"/v1/jobs", json.RawMessage(`{"workflow_id": "hello", "type": "Greet", "queue": "q", "input": "WyJ3b3JsZCJd", "reuse_policy": "reject-duplicate"}`), &cr)
	if r.status != http.StatusOK || cr.WorkflowID != "hello" || !strings.Contains(string(r.body), `"workflow_id":"hello"`) {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	r = doRaw(t, "POST", hs.URL+"/v1/jobs", []byte(`{"workflow_id": "hello", "type": "Greet", "queue": "q", "reuse_policy": "reject-duplicate"}`), map[string]string{"Content-Type": contentJSON})
	if r.status != http.StatusConflict {
		t.Fatalf("a second start under reject-duplicate: %d %s", r.status, r.body)
	}
	var claimed engine.ClaimResult
	postJSON(t, hs.URL+"/v1/jobs/claim", json.RawMessage(`{"queue": "q", "owner": "me", "max": 1, "lease_ms": 60000}`), &claimed)
	if len(claimed.Jobs) != 1 {
		t.Fatalf("claim: %+v", claimed)
	}
	var st engine.StatusResult
	r = postJSON(t, hs.URL+"/v1/jobs/complete", map[string]any{"job_id": cr.Job, "attempt": claimed.Jobs[0].Attempt, "lease_token": claimed.Jobs[0].LeaseToken, "result": []byte(`"hi"`)}, &st)
	if r.status != http.StatusOK || st.Status != engine.StatusCompleted || !strings.Contains(string(r.body), `"status":"Completed"`) {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	r = doRaw(t, "GET", hs.URL+"/v1/jobs?status=Completed", nil, nil)
	var lp engine.ListPage
	if err := json.Unmarshal(r.body, &lp); err != nil || len(lp.Jobs) != 1 || lp.Jobs[0].WorkflowID != "hello" {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	r = doRaw(t, "GET", hs.URL+"/v1/workflows/hello", nil, nil)
	var j engine.Job
	if err := json.Unmarshal(r.body, &j); err != nil || j.Status != engine.StatusCompleted || r.header.Get("Content-Type") != contentJSON {
		t.Fatalf("describe: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
}
