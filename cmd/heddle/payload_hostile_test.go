package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/payloadview"
)

// deepJSONPayload is JSON nested depth levels: 20 KB at 10,000 levels, the
// most encoding/json reads. Indented, as -o json prints documents, each
// level costs two bytes on every line within it: 200 MB for this one.
func deepJSONPayload(depth int) []byte {
	return append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
}

// TestCLIHostilePayloads stores deeply nested JSON as a run's input, a
// signal, its step's question and another run's result, and prints them
// with history, describe and step list, for people and as JSON. Before the
// fix -o json embedded the payload and indented it: at 9,990 levels
// (20 KB) the history document was 600 MB and the process took 1.9 GB; at
// 10,000 the command failed ("exceeded max depth"), so the run's history
// could not be printed at all. Now such a payload is given in base64, and
// a line for people says so; the API gives such a question as a string.
func TestCLIHostilePayloads(t *testing.T) {
	w := newWFEnvInMemory(t)
	for _, depth := range []int{9_990, 10_000} {
		checkCLIHostilePayload(t, w, depth)
	}
}

func checkCLIHostilePayload(t *testing.T, w *wfEnv, depth int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := deepJSONPayload(depth)
	id := fmt.Sprintf("deep-%d", depth)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	cr, err := w.e.Create(ctx, engine.CreateJob{WorkflowID: id, Type: "Deep", Queue: id, Input: p})
	must("start", err)
	_, err = w.e.Signal(ctx, engine.Signal{Target: engine.Target{Job: cr.Job}, Name: "poke", Payload: p})
	must("signal", err)
	jobs, err := w.e.Claim(ctx, engine.Claim{Queue: id, Owner: "w", Max: 1, LeaseMS: 600_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %+v, %v", jobs, err)
	}
	ref := jobs[0].Lease()
	_, err = w.e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Ask", LeaseMS: 600_000})
	must("lease a step", err)
	_, err = w.e.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Ask", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: p})
	must("ask a person", err)
	_, err = w.e.Create(ctx, engine.CreateJob{WorkflowID: id + "-done", Type: "Deep", Queue: id + "-done"})
	must("start the second run", err)
	jobs, err = w.e.Claim(ctx, engine.Claim{Queue: id + "-done", Owner: "w", Max: 1, LeaseMS: 600_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim the second run: %+v, %v", jobs, err)
	}
	_, err = w.e.Complete(ctx, engine.Complete{LeaseRef: jobs[0].Lease(), Result: p})
	must("complete", err)

	placeholder := fmt.Sprintf("<%d bytes of JSON nested deeper than 32 levels; see -o json>", len(p))
	for _, tc := range []struct {
		what string
		out  string
		want string
	}{
		{"history", w.ok("history", id), placeholder},
		{"history --full", w.ok("history", id, "--full"), placeholder},
		{"describe of the completed run", w.ok("describe", id+"-done"), placeholder},
		// The API gives a question nested that deep as a JSON string.
		{"step list", w.cliOK("step", "list", id), `asks: "[[[[`},
		{"describe of the asking run", w.ok("describe", id), `asks "[[[[`},
	} {
		wantContains(t, tc.what, tc.out, tc.want)
		if len(tc.out) > 64<<10 {
			t.Errorf("%s printed %d bytes", tc.what, len(tc.out))
		}
	}

	var hist wfHistoryOutput
	out := w.ok("history", id, "-o", "json")
	if len(out) > 1<<20 {
		t.Fatalf("history -o json printed %d bytes", len(out))
	}
	wfDecodeOne(t, out, &hist)
	var inBase64 int
	for _, ev := range hist.Events {
		if ev.Payload != nil && payloadview.JSONDepth(ev.Payload) > payloadview.DefaultMaxDepth {
			t.Errorf("event %d embeds JSON nested %d levels", ev.Seq, payloadview.JSONDepth(ev.Payload))
		}
		if bytes.Equal(ev.PayloadBase64, p) {
			inBase64++
		}
	}
	if inBase64 < 3 { // the input, the signal, the question
		t.Errorf("%d events give the payload in payload_base64, want 3 or more", inBase64)
	}
	var doc wfJobDoc
	out = w.ok("describe", id+"-done", "-o", "json")
	wfDecodeOne(t, out, &doc)
	if doc.Result != nil || !bytes.Equal(doc.ResultBase64, p) || len(out) > 1<<20 {
		t.Errorf("describe -o json: result %.40q, %d bytes of result_base64, %d bytes printed", doc.Result, len(doc.ResultBase64), len(out))
	}
	out = w.cliOK("step", "list", id, "-o", "json")
	if len(out) > 1<<20 || !strings.Contains(out, `"question": "[[[[`) {
		t.Errorf("step list -o json: %d bytes, %.300s", len(out), out)
	}
}

func TestWFEmbeddable(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want bool
	}{
		{[]byte(`{"a":[1,2]}`), true},
		{deepJSONPayload(payloadview.DefaultMaxDepth), true},
		{deepJSONPayload(payloadview.DefaultMaxDepth + 1), false},
		{[]byte(`not json`), false},
		{nil, false},
	} {
		if got := wfEmbeddable(tc.in); got != tc.want {
			t.Errorf("wfEmbeddable(%.40q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzPayloadText: whatever a payload holds, the line for people is
// bounded by its width, and the fields of a JSON document give it back.
func FuzzPayloadText(f *testing.F) {
	f.Add([]byte(`{"a": 1}`), 20)
	f.Add(deepJSONPayload(40), 20)
	f.Add(deepJSONPayload(300), 0)
	f.Add([]byte{0x91, 0xdd, 0xff, 0xff, 0xff, 0xff}, 10)
	f.Add([]byte("text \x00 with a NUL"), 5)
	f.Fuzz(func(t *testing.T, p []byte, width int) {
		width %= 200
		s := wfPayloadText(p, width)
		if width > 0 && !strings.HasPrefix(s, "<") && len([]rune(s)) > width {
			t.Fatalf("%q at width %d: %d runes", p, width, len([]rune(s)))
		}
		raw, b := wfPayloadFields(p)
		switch {
		case raw != nil && (b != nil || !wfEmbeddable(p)):
			t.Fatalf("%q: embedded %q and base64 %q", p, raw, b)
		case raw == nil && !bytes.Equal(b, p) && len(p) > 0:
			t.Fatalf("%q: base64 field %q", p, b)
		}
	})
}
