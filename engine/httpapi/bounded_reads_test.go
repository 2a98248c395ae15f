package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The history and steps routes take max_payload_bytes and
// max_question_bytes (and step): the answers are the engine's
// QueryHistory and QuerySteps, in JSON and through the Go client
// (msgpack), and the payloads left out are told by their length.
func TestBoundedHistoryAndStepsOverHTTP(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	big := bytes.Repeat([]byte{0xff}, 200<<10)
	small := []byte(`"hi"`)
	cr, err := c.Create(ctx, engine.CreateJob{Type: "T", Queue: "q", Input: big})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{small, big} {
		if _, err := c.Signal(ctx, engine.Signal{Target: engine.Target{Job: cr.Job}, Name: "s", Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.Claim(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v", err)
	}
	ref := jobs[0].Lease()
	for step, q := range map[string][]byte{"1": small, "2": big} {
		if _, err := c.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: step, Name: "Ask", LeaseMS: 60_000}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: step, Name: "Ask", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: q}); err != nil {
			t.Fatal(err)
		}
	}

	hq := engine.HistoryQuery{Job: cr.Job, Limit: engine.MaxPage, MaxPayloadBytes: 1 << 10}
	want, err := e.QueryHistory(ctx, hq)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.QueryHistory(ctx, hq)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("the client's QueryHistory: %v\n got %+v\nwant %+v", err, got, want)
	}
	sq := engine.StepsQuery{Target: engine.Target{Job: cr.Job}, MaxQuestionBytes: 1 << 10}
	wantSteps, err := e.QuerySteps(ctx, sq)
	if err != nil {
		t.Fatal(err)
	}
	gotSteps, err := c.QuerySteps(ctx, sq)
	if err != nil || !reflect.DeepEqual(gotSteps, wantSteps) {
		t.Errorf("the client's QuerySteps: %v\n got %+v\nwant %+v", err, gotSteps, wantSteps)
	}
	one, err := c.QuerySteps(ctx, engine.StepsQuery{Target: engine.Target{Job: cr.Job}, Step: "2"})
	if err != nil || len(one) != 1 || one[0].Step != "2" || len(one[0].Question) < len(big) {
		t.Errorf("step 2 alone: %+v, %v", one, err)
	}

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	code, body := get(fmt.Sprintf("/v1/jobs/%d/history?limit=1000&max_payload_bytes=1024", cr.Job))
	if code != http.StatusOK || strings.Count(body, fmt.Sprintf(`"elided_payload_bytes":%d`, len(big))) != 3 || len(body) > 64<<10 {
		t.Errorf("history with max_payload_bytes: HTTP %d, %d bytes: %.1000s", code, len(body), body)
	}
	code, body = get(fmt.Sprintf("/v1/jobs/%d/steps?max_question_bytes=1024", cr.Job))
	if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf(`"elided_question_bytes":%d`, len(big))) || !strings.Contains(body, `"question":"hi"`) || len(body) > 64<<10 {
		t.Errorf("steps with max_question_bytes: HTTP %d, %d bytes: %.1000s", code, len(body), body)
	}
	for _, q := range []string{"max_payload_bytes=-1", "max_payload_bytes=x", "max_payload_bytes=99999999999", "max_payload_bytes=10&wait=1s"} {
		if code, body := get(fmt.Sprintf("/v1/jobs/%d/history?%s", cr.Job, q)); code != http.StatusBadRequest || !strings.Contains(body, "max_payload_bytes") {
			t.Errorf("history?%s: HTTP %d %s", q, code, body)
		}
	}
	if code, body := get(fmt.Sprintf("/v1/jobs/%d/steps?max_question_bytes=-5", cr.Job)); code != http.StatusBadRequest || !strings.Contains(body, "max_question_bytes") {
		t.Errorf("steps?max_question_bytes=-5: HTTP %d %s", code, body)
	}

	// A service without the bounded reads says so; without the new
	// parameters it answers as before.
	_, plain := serve(t, ServerConfig{Service: struct{ engine.Service }{e}})
	pc := newClient(t, ClientConfig{Addrs: []string{plain.URL}})
	if _, err := pc.QueryHistory(ctx, hq); !errors.Is(err, ErrNoRoute) {
		t.Errorf("QueryHistory from a service without it: %v, want ErrNoRoute", err)
	}
	if _, err := pc.QuerySteps(ctx, sq); !errors.Is(err, ErrNoRoute) {
		t.Errorf("QuerySteps from a service without it: %v, want ErrNoRoute", err)
	}
	if page, err := pc.QueryHistory(ctx, engine.HistoryQuery{Job: cr.Job, Limit: 2}); err != nil || len(page.Events) != 2 || len(page.Events[0].Payload) != len(big) {
		t.Errorf("QueryHistory without a bound: %+v, %v", page, err)
	}
}
