package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// seedAsking makes a run whose step 2 (activity Confirm) waits for a
// person's answer to "ship to 12 Elm St?".
func seedAsking(v *env) engine.JobID {
	v.t.Helper()
	ctx := context.Background()
	id := v.create(engine.CreateJob{WorkflowID: "order-ask", Type: "Order", Queue: "orders"})
	jobs, err := v.e.Claim(ctx, engine.Claim{Queue: "orders", Owner: "w", Max: 1, LeaseMS: 600_000})
	if err != nil || len(jobs) != 1 {
		v.t.Fatalf("claim: %+v, %v", jobs, err)
	}
	ref := jobs[0].Lease()
	if _, err := v.e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "2", Name: "Confirm", LeaseMS: 600_000}); err != nil {
		v.t.Fatal(err)
	}
	if _, err := v.e.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: "2", Name: "Confirm", StepAttempt: 1,
		Outcome: engine.OutcomeNeedsUser, Payload: []byte("ship to 12 Elm St?")}); err != nil {
		v.t.Fatal(err)
	}
	return id
}

func (v *env) stepState(id engine.JobID, step string) engine.StepState {
	v.t.Helper()
	infos, err := v.e.QuerySteps(context.Background(), engine.StepsQuery{Target: engine.Target{Job: id}})
	if err != nil {
		v.t.Fatal(err)
	}
	for _, s := range infos {
		if s.Step == step {
			return s.State
		}
	}
	v.t.Fatalf("run %d has no step %s: %+v", id, step, infos)
	return 0
}

// TestAnswerForm answers a step that waits for a person from the run's
// page: the step leaves NEEDS_USER, and the page says so; an empty answer
// and a second answer are refused with why, and a reader gets no form.
func TestAnswerForm(t *testing.T) {
	role := "client"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	id := seedAsking(v)
	page := fmt.Sprintf("/ui/runs/%d", id)
	_, body, _ := v.get(page)
	wantIn(t, "the run page", body, `id="answer-form-2"`, `action="`+page+`/steps/2/answer"`, `id="answer-2"`, "ship to 12 Elm St?")

	csrf := v.csrf(page)
	code, body, _ := v.post(page+"/steps/2/answer", url.Values{csrfField: {csrf}, "answer": {""}})
	if code != http.StatusBadRequest {
		t.Errorf("an empty answer: HTTP %d", code)
	}
	wantIn(t, "an empty answer", body, "An answer needs some text")
	if s := v.stepState(id, "2"); s != engine.StepNeedsUser {
		t.Fatalf("an empty answer moved the step to %s", s)
	}

	code, _, loc := v.post(page+"/steps/2/answer", url.Values{csrfField: {csrf}, "answer": {"yes, to the back door"}})
	if code != http.StatusSeeOther || loc != page+"?done=answer" {
		t.Fatalf("the answer: HTTP %d to %q", code, loc)
	}
	if s := v.stepState(id, "2"); s == engine.StepNeedsUser {
		t.Fatal("the step still waits for an answer")
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the page after the answer", body, `id="flash">Answer sent`, `data-type="step_answered"`)
	wantNotIn(t, "the page after the answer", body, `id="answer-form-2"`)

	code, body, _ = v.post(page+"/steps/2/answer", url.Values{csrfField: {csrf}, "answer": {"again"}})
	if code != http.StatusConflict {
		t.Errorf("a second answer: HTTP %d", code)
	}
	wantIn(t, "a second answer", body, "Step 2 does not wait for an answer now")

	role = "reader"
	id2 := v.create(engine.CreateJob{WorkflowID: "order-ask-2", Type: "Order", Queue: "other"})
	_, body, _ = v.get(fmt.Sprintf("/ui/runs/%d", id2))
	wantNotIn(t, "a reader's run page", body, `class="inline answer-form"`)
	code, body, _ = v.post(fmt.Sprintf("/ui/runs/%d/steps/2/answer", id), url.Values{csrfField: {v.csrf("/ui/signin")}, "answer": {"x"}})
	if code != http.StatusForbidden {
		t.Errorf("a reader's answer: HTTP %d", code)
	}
	wantIn(t, "a reader's answer", body, "The reader role may not answer runs.")
}

// TestQueryFormRefusals: the query form says what is wrong before it asks
// a worker (a reader may not ask; a query needs a name, and its argument
// is JSON), and the page that shows an answer does not refresh itself.
func TestQueryFormRefusals(t *testing.T) {
	role := "client"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	id := v.create(engine.CreateJob{WorkflowID: "q-1", Type: "Order", Queue: "orders"})
	page := fmt.Sprintf("/ui/runs/%d", id)
	_, body, _ := v.get(page)
	wantIn(t, "a client's run page", body, `id="query-form"`, `id="stack-trace"`, `data-refresh="2000"`)
	csrf := v.csrf(page)
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"name": {""}}, "A query needs a name"},
		{url.Values{"name": {"progress"}, "arg": {"not json"}}, "The argument is not JSON"},
	} {
		c.form.Set(csrfField, csrf)
		code, body, _ := v.post(page+"/query", c.form)
		if code != http.StatusOK {
			t.Errorf("query %v: HTTP %d", c.form, code)
		}
		wantIn(t, fmt.Sprintf("query %v", c.form), body, `id="query-error">`+c.want, `data-refresh="0"`, `id="live-page"`)
	}
	role = "reader"
	_, body, _ = v.get(page)
	wantNotIn(t, "a reader's run page", body, `id="query-form"`)
	code, body, _ := v.post(page+"/query", url.Values{csrfField: {v.csrf("/ui/signin")}, "stack": {"1"}})
	if code != http.StatusForbidden {
		t.Errorf("a reader's query: HTTP %d", code)
	}
	wantIn(t, "a reader's query", body, "The reader role may not ask runs queries.")
}

// TestCompactHistory: an activity tried three times shows as one entry
// with its tries and its last failure; the leases and the retry timers are
// left out, and the full view beside it still shows every event.
func TestCompactHistory(t *testing.T) {
	v := newEnv(t, envOptions{})
	ctx := context.Background()
	id := v.create(engine.CreateJob{WorkflowID: "retries", Type: "Order", Queue: "orders"})
	claim := func() engine.LeaseRef {
		jobs, err := v.e.Claim(ctx, engine.Claim{Queue: "orders", Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %+v, %v", jobs, err)
		}
		return jobs[0].Lease()
	}
	ref := claim()
	// Each failed try: the worker waits out the retry delay on a timer of
	// its own (retry:<step>:<try>), which fires and wakes the run, and a
	// worker takes it again, as the SDK does.
	for try := 1; try <= 2; try++ {
		timer := replay.RetryTimerPrefix + "1:" + fmt.Sprint(try)
		fail := fmt.Sprintf(`{"attempt":%d,"message":"card declined %d"}`, try, try)
		fire := v.clk.Now().Add(time.Second).UnixMilli()
		if _, err := v.e.Wait(ctx, engine.Wait{LeaseRef: ref, SeenSeq: v.describe(id).LastSeq,
			Spec:   engine.WaitSpec{AnySignal: true, Signals: []string{"ship"}, Timers: []engine.Timer{{ID: timer, FireMS: fire}}},
			Events: []engine.NewEvent{{Type: engine.EventActivityAttemptFailed, Step: "1", Name: "Charge", Payload: []byte(fail)}}}); err != nil {
			t.Fatal(err)
		}
		v.clk.Advance(time.Second)
		if _, err := v.e.Propose(ctx, &engine.FireTimers{Max: 10}); err != nil {
			t.Fatal(err)
		}
		ref = claim()
	}
	if _, err := v.e.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, Name: "Charge", Payload: []byte(`["paid"]`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.e.Signal(ctx, engine.Signal{Target: engine.Target{Job: id}, Name: "ship"}); err != nil {
		t.Fatal(err)
	}

	page := fmt.Sprintf("/ui/runs/%d", id)
	_, full, _ := v.get(page)
	wantIn(t, "the full history", full, `id="view-full" aria-current="page"`, `href="`+page+`?view=compact" id="view-compact"`,
		`data-type="job_leased"`, `data-type="job_waiting"`, `data-type="timer_fired"`, `<span class="tag name" title="timer retry:1:2">retry of activity Charge, try 3</span>`,
		"retry of activity Charge, try 3,")
	_, compact, _ := v.get(page + "?view=compact")
	wantIn(t, "the compact history", compact, `id="view-compact" aria-current="page"`, `id="compact"`,
		`<span class="type">activity Charge</span>`, "completed after 3 tries", "3 events",
		`<span class="type">signal ship</span>`, `<span class="type">run started Order</span>`)
	wantNotIn(t, "the compact history", compact, `data-type="job_leased"`, `job_waiting`, `wait_completed`, "retry:1:", "retry of", "card declined 1")
	// Each entry once, in the order of its first event.
	var titles []string
	for _, part := range strings.Split(compact, `<span class="type">`)[1:] {
		title, _, _ := strings.Cut(part, "<")
		titles = append(titles, title)
	}
	if got := strings.Join(titles, ", "); got != "run started Order, activity Charge, signal ship" {
		t.Errorf("the compact history's entries: %s", got)
	}
}

// TestFailureStack: a failed run whose failure carries a panic's stack
// shows its chain of errors and the stack as lines of text, not as one
// JSON string with escaped newlines.
func TestFailureStack(t *testing.T) {
	v := newEnv(t, envOptions{})
	ctx := context.Background()
	id := v.create(engine.CreateJob{WorkflowID: "panics", Type: "Order", Queue: "orders"})
	jobs, err := v.e.Claim(ctx, engine.Claim{Queue: "orders", Owner: "w", Max: 1, LeaseMS: 60_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %+v, %v", jobs, err)
	}
	stack := "goroutine 7 [running]:\nexample.com/shop.Charge(...)\n\t/src/shop/charge.go:42 +0x1d"
	f := converter.Failure{Message: "activity error", Kind: "activity", Type: "ActivityError",
		Cause: &converter.Failure{Message: "runtime error: index out of range [3] with length 3", Kind: "panic", Type: "PanicError", StackTrace: stack}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.e.Fail(ctx, engine.Fail{LeaseRef: jobs[0].Lease(), Error: b}); err != nil {
		t.Fatal(err)
	}
	_, body, _ := v.get(fmt.Sprintf("/ui/runs/%d", id))
	wantIn(t, "the failed run's page", body, `id="outcome-failure"`, `<strong class="failure-message">activity error</strong>`,
		`caused by</span> <strong class="failure-message">runtime error: index out of range [3] with length 3</strong>`,
		`<pre class="payload stack">`+stack+`</pre>`, `id="outcome-stored"`)
	wantIn(t, "the failed run's timeline", body, `class="stack-trace"`)
}
