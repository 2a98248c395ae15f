package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The step and resource commands and reads work through Client and
// Server, and their refusals keep their sentinels and codes across the
// wire.
func TestClientSteps(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	s := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.AddResource(ctx, engine.AddResource{ID: "phone-1", Capabilities: []string{"sms"}, Labels: map[string]string{"carrier": "a"}, Capacity: 1})
	must(err)
	if _, err := s.AddResource(ctx, engine.AddResource{ID: "phone-1", Capacity: 1}); !errors.Is(err, engine.ErrResourceExists) {
		t.Fatalf("adding twice: %v", err)
	}
	_, err = s.Create(ctx, engine.CreateJob{WorkflowID: "st/1", Type: "T", Queue: "q"})
	must(err)
	jobs, err := s.Claim(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
	must(err)
	ref := jobs[0].Lease()
	lr, err := s.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "SendCode", LeaseMS: 30_000, Capabilities: []string{"sms"}})
	must(err)
	if !lr.Granted || lr.Resource != "phone-1" || lr.Labels["carrier"] != "a" || lr.State != engine.StepLeased {
		t.Fatalf("lease: %+v", lr)
	}
	_, err = s.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 60_000})
	must(err)
	_, err = s.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 7, LeaseMS: 60_000})
	var re *RemoteError
	if !errors.Is(err, engine.ErrStaleAttempt) || !errors.As(err, &re) || re.Code() != engine.StaleStepCode {
		t.Fatalf("a stale try's heartbeat: %v", err)
	}
	_, err = s.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "SendCode", StepAttempt: 1,
		Outcome: engine.OutcomeNeedsUser, Payload: []byte(`"which code?"`)})
	must(err)
	steps, err := s.Steps(ctx, engine.Target{WorkflowID: "st/1"})
	must(err)
	if len(steps) != 1 || steps[0].State != engine.StepNeedsUser || string(steps[0].Question) != `"which code?"` || steps[0].Resource != "phone-1" {
		t.Fatalf("steps: %+v", steps)
	}
	if _, err := s.DrainResource(ctx, engine.DrainResource{ID: "phone-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveResource(ctx, engine.RemoveResource{ID: "phone-1"}); !errors.Is(err, engine.ErrResourceBusy) {
		t.Fatalf("removing a busy resource: %v", err)
	}
	ans, err := s.AnswerStep(ctx, engine.AnswerStep{Target: engine.Target{WorkflowID: "st/1"}, Step: "1", Answer: []byte(`"123456"`)})
	must(err)
	if ans.State != engine.StepRunning || ans.StepAttempt != 2 {
		t.Fatalf("answer: %+v", ans)
	}
	if _, err := s.AnswerStep(ctx, engine.AnswerStep{Target: engine.Target{WorkflowID: "st/1"}, Step: "1"}); !errors.Is(err, engine.ErrStepState) {
		t.Fatalf("a second answer: %v", err)
	}
	rs, err := s.Resources(ctx)
	must(err)
	if len(rs) != 1 || !rs[0].Drained || len(rs[0].Holders) != 1 {
		t.Fatalf("resources: %+v", rs)
	}
}

// The JSON a person or a script sends and reads: step states by name,
// lists never null.
func TestStepsJSON(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	var rr engine.ResourceResult
	if r := postJSON(t, hs.URL+"/v1/resources", map[string]any{"id": "gpu-1", "capabilities": []string{"cuda"}, "capacity": 2}, &rr); r.status != http.StatusOK {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	r := doRaw(t, http.MethodGet, hs.URL+"/v1/resources", nil, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"id":"gpu-1"`) || !strings.Contains(string(r.body), `"capacity":2`) {
		t.Fatalf("resources: %d %s", r.status, r.body)
	}
	if _, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: "j", Type: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	r = doRaw(t, http.MethodGet, hs.URL+"/v1/workflows/j/steps", nil, nil)
	if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"steps":[]}` {
		t.Fatalf("steps of a new job: %d %s", r.status, r.body)
	}
	jobs, err := e.Claim(context.Background(), engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	var lr map[string]any
	body := map[string]any{"job_id": jobs[0].Job, "attempt": jobs[0].Attempt, "lease_token": jobs[0].LeaseToken, "step": "1", "name": "Train", "lease_ms": 5000, "capabilities": []string{"cuda"}}
	if r := postJSON(t, hs.URL+"/v1/jobs/lease-step", body, &lr); r.status != http.StatusOK || lr["state"] != "LEASED" || lr["resource"] != "gpu-1" {
		t.Fatalf("lease-step: %d %s", r.status, r.body)
	}
	r = doRaw(t, http.MethodGet, hs.URL+"/v1/workflows/j/steps", nil, nil)
	var page struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Steps) != 1 || page.Steps[0]["state"] != "LEASED" ||
		page.Steps[0]["worker"] != "w" {
		t.Fatalf("steps: %v %s", err, r.body)
	}
	if av, ok := page.Steps[0]["avoid"].([]any); !ok || len(av) != 0 {
		t.Fatalf("the avoid-list is not []: %s", r.body)
	}
	if r := postJSON(t, hs.URL+"/v1/jobs/answer-step", map[string]any{"workflow_id": "j", "step": "1", "answer": "eWVz"}, nil); r.status != http.StatusConflict {
		t.Fatalf("answering a step that asks nothing: %d %s", r.status, r.body)
	} else if b := errorBodyOf(t, r); b.Name != "step_state" || b.Code != engine.StepStateCode {
		t.Fatalf("error body %+v", b)
	}
}
