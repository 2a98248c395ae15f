package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// Reset over HTTP: the Client's Reset and a JSON body with the reset type
// by name both start a new run and answer its id; a point that is no turn
// boundary is a 400 invalid_command whose message names the valid points
// and carries the error's code.
func TestResetOverHTTP(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx := context.Background()
	a, err := c.Create(ctx, engine.CreateJob{WorkflowID: "a", Type: "T", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Reset(ctx, engine.ResetJob{Target: engine.Target{WorkflowID: "a"}, Type: engine.ResetFirstWorkflowTask, Reason: "ops"})
	if err != nil || r.BaseJob != a.Job || r.Job == a.Job || r.Seq != 1 || len(r.Terminated) != 1 {
		t.Fatalf("Reset = %+v, %v", r, err)
	}
	old, err := c.Describe(ctx, engine.Target{Job: a.Job})
	if err != nil || old.Status != engine.StatusTerminated || old.ResetNewRunID != r.Job {
		t.Fatalf("the base run after the reset: %+v, %v", old, err)
	}
	_, err = c.Reset(ctx, engine.ResetJob{Target: engine.Target{Job: r.Job}, Seq: 2})
	if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), "valid event ids (1): 1") || !strings.Contains(err.Error(), engine.ResetPointCode) {
		t.Fatalf("reset to a point that is no turn boundary: %v", err)
	}

	raw := doRaw(t, "POST", hs.URL+"/v1/jobs/reset", []byte(`{"workflow_id": "a", "reset_type": "LastWorkflowTask", "reason": "again", "exclude_signals": true}`),
		map[string]string{"Content-Type": "application/json"})
	if raw.status != 200 {
		t.Fatalf("JSON reset: %d %s", raw.status, raw.body)
	}
	var got map[string]any
	if err := json.Unmarshal(raw.body, &got); err != nil {
		t.Fatal(err)
	}
	if got["base_job_id"] != float64(r.Job) || got["event_id"] != float64(1) || got["job_id"] == nil {
		t.Fatalf("JSON answer %s", raw.body)
	}
	raw = doRaw(t, "POST", hs.URL+"/v1/jobs/reset", []byte(`{"workflow_id": "a", "reset_type": "Sometime"}`), map[string]string{"Content-Type": "application/json"})
	if raw.status != 400 || !strings.Contains(string(raw.body), "unknown reset type") {
		t.Fatalf("unknown reset type: %d %s", raw.status, raw.body)
	}
}
