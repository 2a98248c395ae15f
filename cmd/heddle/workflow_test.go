package main

// These tests drive "heddle workflow" through run, as the binary would be
// driven, against a real HTTP API over an in-memory engine with a worker.
// They wait for outcomes (WaitClosed, --wait), never for amounts of time:
// the context deadlines only stop a hung test.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// wfTestQueue has a worker; wfIdleQueue has none, so its runs stay Queued.
const (
	wfTestQueue = "wfq"
	wfIdleQueue = "idle"
)

// wfGreet completes at once with a greeting.
func wfGreet(ctx workflow.Context, name string) (string, error) { return "hello, " + name, nil }

// wfRefuse fails for good with an application error.
func wfRefuse(ctx workflow.Context, why string) (string, error) {
	return "", workflow.NewApplicationError("refused: "+why, "Refusal", true)
}

// wfGate waits for the signal "go" and returns its value, or ends
// cancelled when its cancellation is requested first. Its query "state"
// says what it waits for, with the query's argument appended.
func wfGate(ctx workflow.Context) (string, error) {
	var got string
	cancelled := false
	err := workflow.SetQueryHandler(ctx, "state", func(suffix string) (string, error) {
		return "waiting for go" + suffix, nil
	})
	if err != nil {
		return "", err
	}
	workflow.NewSelector(ctx).
		AddReceive(workflow.GetSignalChannel(ctx, "go"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &got) }).
		AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { cancelled = true }).
		Select(ctx)
	if cancelled {
		return "", workflow.ErrCanceled
	}
	return got, nil
}

// startWFWorker starts a worker of wfTestQueue through c with the test
// workflows, which also answers the queries the nodes at addrs broker, as
// a worker process ("heddle worker") does; the test's cleanup stops it.
func startWFWorker(t *testing.T, c client.Client, addrs []string, token string) worker.Worker {
	t.Helper()
	w := worker.New(c, wfTestQueue, worker.Options{OnError: func(job engine.JobID, err error) {
		t.Errorf("worker, job %d: %v", job, err)
	}})
	w.RegisterWorkflowWithName(wfGreet, "Greet")
	w.RegisterWorkflowWithName(wfRefuse, "Refuse")
	w.RegisterWorkflowWithName(wfGate, "Gate")
	registerParityWorkflows(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	// Queries reach the worker through the API, as they reach a remote
	// worker process ("heddle worker").
	qc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	qctx, stopQueries := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Until the test ends, ServeQueries may only return its context's
		// error; t.Errorf is safe from this goroutine, which ends before
		// the test does.
		if err := qc.ServeQueries(qctx, wfTestQueue, wfAnswerWith(w)); qctx.Err() == nil || !errors.Is(err, context.Canceled) {
			t.Errorf("ServeQueries: %v", err)
		}
	}()
	t.Cleanup(func() {
		stopQueries()
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("stop the worker: %v", err)
		}
	})
	return w
}

// wfEnv is a node serving the HTTP API, with a worker on wfTestQueue that
// also answers queries.
type wfEnv struct {
	t    *testing.T
	e    *embedded.Engine
	addr string
}

// newWFEnv starts what "heddle dev" runs (startDev: an engine in a fresh
// directory, the HTTP API on a free loopback port) and a worker.
func newWFEnv(t *testing.T, token string) *wfEnv {
	t.Helper()
	return startWFEnv(t, embedded.Config{Dir: t.TempDir()}, token)
}

// newWFEnvInMemory is newWFEnv over an in-memory store, for the tests that
// write a thousand records and would wait on the disk's syncs.
func newWFEnvInMemory(t *testing.T) *wfEnv {
	t.Helper()
	return startWFEnv(t, embedded.Config{InMemory: true}, "")
}

func startWFEnv(t *testing.T, cfg embedded.Config, token string) *wfEnv {
	t.Helper()
	t.Setenv("HEDDLE_ADDR", "")
	t.Setenv("HEDDLE_TOKEN", "")
	d, err := startDev(cfg, "127.0.0.1:0", &security{token: token}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.close(); err != nil {
			t.Errorf("close the dev server: %v", err)
		}
	})
	startWFWorker(t, client.New(d.engine), []string{d.api.addr()}, token)
	return &wfEnv{t: t, e: d.engine, addr: d.api.addr()}
}

// run runs "heddle workflow VERB --addr ADDR ARGS...".
func (w *wfEnv) run(verb string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"workflow", verb, "--addr", w.addr}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// ok runs a command that must succeed and returns its stdout.
func (w *wfEnv) ok(verb string, args ...string) string {
	w.t.Helper()
	code, out, errs := w.run(verb, args...)
	if code != 0 {
		w.t.Fatalf("workflow %s %v: exit %d\nstdout:\n%s\nstderr:\n%s", verb, args, code, out, errs)
	}
	return out
}

// json runs a command with --json that must succeed and decodes its stdout,
// which must be exactly one JSON document, into v.
func (w *wfEnv) json(v any, verb string, args ...string) {
	w.t.Helper()
	out := w.ok(verb, append(args, "--json")...)
	wfDecodeOne(w.t, out, v)
}

func wfDecodeOne(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not the expected JSON document: %v\n%s", err, out)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout holds more than one JSON document:\n%s", out)
	}
}

// closed waits for the run of workflow id to end and returns it.
func (w *wfEnv) closed(id string) *engine.Job {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := w.e.WaitClosed(ctx, engine.Target{WorkflowID: id})
	if err != nil {
		w.t.Fatalf("waiting for %s: %v", id, err)
	}
	return j
}

// wfCompactString is JSON without the indentation --json prints it with.
func wfCompactString(raw json.RawMessage) string { return string(wfCompact(raw)) }

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, got)
		}
	}
}

func TestWorkflowStart(t *testing.T) {
	w := newWFEnv(t, "")

	out := w.ok("start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-1", "--input", `"ada"`, "--wait")
	wantContains(t, "start --wait", out, "Workflow ID  greet-1\n", "Job ID       ", "Status       Completed\n", `Result       "hello, ada"`)

	var s wfStartOutput
	w.json(&s, "start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-2", "--input", ` "bob" `, "--wait")
	if s.WorkflowID != "greet-2" || s.JobID == 0 || s.Existing || s.Outcome == nil {
		t.Fatalf("start --wait --json = %+v", s)
	}
	if o := s.Outcome; o.Status != "Completed" || string(o.Result) != `"hello, bob"` || o.JobID != s.JobID || o.Failure != nil {
		t.Errorf("outcome = %+v, result %s", o, o.Result)
	}

	// A failed workflow: its failure is printed and the exit status is 1.
	code, out, errs := w.run("start", "--type", "Refuse", "--queue", wfTestQueue, "--id", "refuse-1", "--input", `"no stock"`, "--wait")
	if code != 1 {
		t.Errorf("start --wait of a failing workflow: exit %d, want 1", code)
	}
	wantContains(t, "start --wait of a failing workflow", out, "Status       Failed\n", "Failure      refused: no stock [Refusal] (non-retryable)")
	wantContains(t, "its stderr", errs, "workflow refuse-1 ended Failed")
	code, out, _ = w.run("start", "--type", "Refuse", "--queue", wfTestQueue, "--input", `"late"`, "--wait", "--json")
	if code != 1 {
		t.Errorf("start --wait --json of a failing workflow: exit %d, want 1", code)
	}
	s = wfStartOutput{}
	wfDecodeOne(t, out, &s)
	if f := s.Outcome.Failure; s.Outcome.Status != "Failed" || f == nil || f.Message != "refused: late" || f.Type != "Refusal" || !f.NonRetryable {
		t.Errorf("failed outcome = %+v, failure %+v", s.Outcome, f)
	}
	if !strings.HasPrefix(s.WorkflowID, "job-") {
		t.Errorf("a start without --id got workflow id %q, want the engine's job-<id>", s.WorkflowID)
	}

	// Without --wait: the ids only. Reuse policies decide a second start.
	out = w.ok("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-1", "--execution-timeout", "1h")
	wantContains(t, "start", out, "Workflow ID  idle-1\nJob ID       ")
	first, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(strings.Split(out, "\n")[1], "Job ID")), 10, 64)
	s = wfStartOutput{}
	w.json(&s, "start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-1", "--reuse-policy", "return-existing")
	if s.JobID != first || !s.Existing || s.Outcome != nil {
		t.Errorf("return-existing start = %+v, want job %d, existing", s, first)
	}
	out = w.ok("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-1", "--reuse-policy", "RETURN_EXISTING")
	wantContains(t, "return-existing start", out, "Note         an identical run was open")
	code, _, errs = w.run("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-1", "--reuse-policy", "reject-duplicate")
	if code != 1 || !strings.Contains(errs, "workflow already exists") {
		t.Errorf("reject-duplicate start: exit %d, stderr %q", code, errs)
	}
	var d wfJobDoc
	w.json(&d, "describe", "idle-1")
	if d.Deadline == "" {
		t.Errorf("--execution-timeout set no deadline: %+v", d)
	}
}

func TestWorkflowDescribe(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-1", "--input", `"ada"`, "--wait")

	// Flags may come before or after ID.
	out := w.ok("describe", "greet-1")
	wantContains(t, "describe", out, "Workflow ID  greet-1\n", "Type         Greet\n", "Queue        wfq\n",
		"Status       Completed\n", "Run attempt  1\n", "Task attempt 1 (claims of this run by a worker)\n", "Created      ", "Closed       ", `Result       "hello, ada"`)
	var d wfJobDoc
	w.json(&d, "describe", "greet-1")
	if d.WorkflowID != "greet-1" || d.Type != "Greet" || d.Queue != wfTestQueue || d.Status != "Completed" ||
		d.Attempt != 1 || string(d.Result) != `"hello, ada"` || d.CloseEvent != "job_completed" || d.HistoryLength == 0 {
		t.Errorf("describe --json = %+v", d)
	}
	for _, ts := range []string{d.CreatedAt, d.UpdatedAt, d.ClosedAt} {
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("time %q is not RFC 3339: %v", ts, err)
		}
	}
	// A numeric ID is a job id.
	var byJob wfJobDoc
	w.json(&byJob, "describe", "--json", strconv.FormatUint(d.JobID, 10))
	if byJob.WorkflowID != "greet-1" || byJob.JobID != d.JobID {
		t.Errorf("describe by job id %d = %+v", d.JobID, byJob)
	}
	// ... unless no job has it and a workflow does.
	w.ok("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "4711")
	var numeric wfJobDoc
	w.json(&numeric, "describe", "4711")
	if numeric.WorkflowID != "4711" || numeric.Status != "Queued" {
		t.Errorf("describe of numeric workflow id 4711 = %+v", numeric)
	}
	out = w.ok("describe", "4711")
	wantContains(t, "describe of a queued run", out, "Status       Queued\n", "Task attempt 0 ")
	if strings.Contains(out, "Result") || strings.Contains(out, "Closed") {
		t.Errorf("an open run shows a result or a close:\n%s", out)
	}

	// A failed run shows its failure.
	w.run("start", "--type", "Refuse", "--queue", wfTestQueue, "--id", "refuse-1", "--input", `"no"`, "--wait")
	out = w.ok("describe", "refuse-1")
	wantContains(t, "describe of a failed run", out, "Status       Failed\n", "Failure      refused: no [Refusal] (non-retryable)")
	d = wfJobDoc{}
	w.json(&d, "describe", "refuse-1")
	if d.Failure == nil || d.Failure.Message != "refused: no" || d.Result != nil {
		t.Errorf("describe --json of a failed run = %+v", d)
	}
}

func TestWorkflowSignal(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Gate", "--queue", wfTestQueue, "--id", "gate-1")
	out := w.ok("signal", "gate-1", "go", "--input", `"open sesame"`)
	wantContains(t, "signal", out, "Signal go sent to workflow gate-1 (job ", " as event ")
	w.closed("gate-1")
	var d wfJobDoc
	w.json(&d, "describe", "gate-1")
	if d.Status != "Completed" || string(d.Result) != `"open sesame"` {
		t.Errorf("the gate did not return the signal's value: %+v, result %s", d, d.Result)
	}

	var s wfStartOutput
	w.json(&s, "start", "--type", "Gate", "--queue", wfTestQueue, "--id", "gate-2")
	var sig wfSignalOutput
	w.json(&sig, "signal", strconv.FormatUint(s.JobID, 10), "go", "--input", `{"k": [1, 2]}`)
	if sig.WorkflowID != "gate-2" || sig.JobID != s.JobID || sig.Signal != "go" || sig.Seq == 0 {
		t.Errorf("signal --json = %+v", sig)
	}
	w.closed("gate-2")
	d = wfJobDoc{}
	w.json(&d, "describe", "gate-2")
	// The gate decodes the value into a string: an object does not fit, so
	// the run fails, which shows the value arrived as the SDK encodes it.
	if d.Status != "Failed" || d.Failure == nil || !strings.Contains(d.Failure.Message, "string") {
		t.Errorf("gate-2 = %+v, failure %+v", d, d.Failure)
	}
	var h wfHistoryOutput
	w.json(&h, "history", "gate-2")
	found := false
	for _, ev := range h.Events {
		if ev.Type == string(engine.EventSignalReceived) {
			found = true
			if ev.Name != "go" || wfCompactString(ev.Payload) != `[{"k":[1,2]}]` {
				t.Errorf("signal event = %+v, payload %s", ev, ev.Payload)
			}
		}
	}
	if !found {
		t.Errorf("no signal_received in %+v", h.Events)
	}
}

func TestWorkflowCancelAndTerminate(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Gate", "--queue", wfTestQueue, "--id", "gate-1")
	out := w.ok("cancel", "gate-1", "--reason", "no longer needed")
	wantContains(t, "cancel", out, "Cancel requested for workflow gate-1 (job ")
	if j := w.closed("gate-1"); j.Status != engine.StatusCancelled {
		t.Errorf("gate-1 ended %s after a cancel request", j.Status)
	}
	var s wfStartOutput
	w.json(&s, "start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-1")
	var stop wfStopOutput
	w.json(&stop, "cancel", "idle-1")
	if stop.WorkflowID != "idle-1" || stop.JobID != s.JobID || stop.Status != "Queued" || stop.Seq == 0 {
		t.Errorf("cancel --json = %+v", stop)
	}
	var d wfJobDoc
	w.json(&d, "describe", "idle-1")
	if !d.CancelRequested {
		t.Errorf("describe after cancel: %+v", d)
	}

	// Terminate ends the run at once, even with no worker to run its code.
	out = w.ok("terminate", "idle-1", "--reason", "stuck")
	wantContains(t, "terminate", out, fmt.Sprintf("Terminated workflow idle-1 (job %d): Terminated, event ", s.JobID))
	d = wfJobDoc{}
	w.json(&d, "describe", "idle-1")
	if d.Status != "Terminated" || d.CloseEvent != "job_terminated" || d.CloseReason != "stuck" {
		t.Errorf("describe after terminate: %+v", d)
	}
	out = w.ok("describe", "idle-1")
	wantContains(t, "describe after terminate", out, "Closed by    job_terminated (stuck)")
	w.json(&s, "start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-2")
	stop = wfStopOutput{}
	w.json(&stop, "terminate", strconv.FormatUint(s.JobID, 10))
	if stop.WorkflowID != "idle-2" || stop.JobID != s.JobID || stop.Status != "Terminated" {
		t.Errorf("terminate --json = %+v", stop)
	}
	// A closed run refuses both, with the server's message.
	for _, verb := range []string{"cancel", "terminate"} {
		code, _, errs := w.run(verb, "idle-2")
		if code != 1 || !strings.Contains(errs, "heddle workflow "+verb+": ") || !strings.Contains(errs, "already ended Terminated: only an open run can be") {
			t.Errorf("%s of a closed run: exit %d, stderr %q", verb, code, errs)
		}
	}
}

func TestWorkflowHistory(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-1", "--input", `"ada"`, "--wait")

	out := w.ok("history", "greet-1")
	wantContains(t, "history", out, "Workflow greet-1, job ", "(Greet on wfq): Completed, ", "TIME is since then",
		"SEQ", "EVENT", "DETAILS", "job_created", `["ada"]`, "job_leased", "lease until +", "job_completed", `["hello, ada"]`)
	var h wfHistoryOutput
	w.json(&h, "history", "greet-1")
	if h.WorkflowID != "greet-1" || h.Status != "Completed" || len(h.Events) < 3 || h.NextAfter != 0 {
		t.Fatalf("history --json = %+v", h)
	}
	for i, ev := range h.Events {
		if ev.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
	}
	if ev := h.Events[0]; ev.Type != "job_created" || wfCompactString(ev.Payload) != `["ada"]` {
		t.Errorf("first event = %+v", ev)
	}
	last := h.Events[len(h.Events)-1]
	if last.Type != "job_completed" || wfCompactString(last.Payload) != `["hello, ada"]` || last.Attempt != 1 {
		t.Errorf("last event = %+v", last)
	}

	// A window: --after and --limit, with the cursor of what follows.
	var win wfHistoryOutput
	w.json(&win, "history", "greet-1", "--after", "1", "--limit", "1")
	if len(win.Events) != 1 || win.Events[0].Seq != 2 || win.NextAfter != 2 {
		t.Errorf("history --after 1 --limit 1 = %+v", win)
	}
	win = wfHistoryOutput{}
	w.json(&win, "history", "greet-1", "--after", "1", "--limit", "2")
	if len(win.Events) != 2 || win.Events[1].Seq != 3 || win.NextAfter != 0 {
		t.Errorf("history --after 1 --limit 2 (to the end) = %+v", win)
	}
	out = w.ok("history", "greet-1", "--limit", "1")
	wantContains(t, "history --limit 1", out, "More events follow: next with --after 1")
	out = w.ok("history", "greet-1", "--after", "999")
	wantContains(t, "history past the end", out, "No events in this range.")
}

// History pages through every event by default, more than one API page.
func TestWorkflowHistoryPages(t *testing.T) {
	w := newWFEnvInMemory(t)
	var s wfStartOutput
	w.json(&s, "start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-1")
	ctx := context.Background()
	const signals = engine.MaxPage + 5
	for i := range signals {
		if _, err := w.e.Signal(ctx, engine.Signal{Target: engine.Target{Job: engine.JobID(s.JobID)}, Name: "tick", Payload: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	var h wfHistoryOutput
	w.json(&h, "history", "idle-1")
	if len(h.Events) != signals+1 || h.NextAfter != 0 {
		t.Fatalf("history of %d events printed %d, next_after %d", signals+1, len(h.Events), h.NextAfter)
	}
	for i, ev := range h.Events {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	var win wfHistoryOutput
	w.json(&win, "history", "idle-1", "--limit", strconv.Itoa(engine.MaxPage+2))
	if len(win.Events) != engine.MaxPage+2 || win.NextAfter != engine.MaxPage+2 {
		t.Errorf("history --limit %d: %d events, next_after %d", engine.MaxPage+2, len(win.Events), win.NextAfter)
	}
	out := w.ok("history", "idle-1")
	if n := strings.Count(out, "signal_received"); n != signals {
		t.Errorf("text history shows %d signals, want %d", n, signals)
	}
}

func TestWorkflowList(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-1", "--input", `"ada"`, "--wait")
	w.ok("start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-2", "--input", `"bob"`, "--wait")
	w.ok("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "idle-1")

	out := w.ok("list")
	wantContains(t, "list", out, "WORKFLOW ID", "STATUS", "CREATED", "greet-1", "greet-2", "idle-1", "Completed", "Queued")
	if strings.Contains(out, "page-token") || strings.Index(out, "idle-1") > strings.Index(out, "greet-1") {
		t.Errorf("a short list, newest first, printed a page token or another order:\n%s", out)
	}
	var l wfListOutput
	w.json(&l, "list", "--status", "completed")
	if len(l.Workflows) != 2 || l.NextPageToken != "" || l.Order != "start_desc" {
		t.Fatalf("list --status completed = %+v", l)
	}
	for _, d := range l.Workflows {
		if d.Status != "Completed" || d.Type != "Greet" {
			t.Errorf("list --status completed has %+v", d)
		}
	}
	l = wfListOutput{}
	w.json(&l, "list", "--queue", wfIdleQueue)
	if len(l.Workflows) != 1 || l.Workflows[0].WorkflowID != "idle-1" {
		t.Errorf("list --queue idle = %+v", l)
	}

	// Paging: each page names the tokens of the pages after and before it.
	page := func(args ...string) wfListOutput {
		var p wfListOutput
		w.json(&p, "list", args...)
		return p
	}
	ids := func(p wfListOutput) (s []string) {
		for _, d := range p.Workflows {
			s = append(s, d.WorkflowID)
		}
		return s
	}
	var seen []string
	var pages []wfListOutput
	for p := page("--type", "Greet", "--limit", "1"); ; p = page("--type", "Greet", "--limit", "1", "--page-token", p.NextPageToken) {
		pages = append(pages, p)
		seen = append(seen, ids(p)...)
		if p.NextPageToken == "" {
			break
		}
	}
	if strings.Join(seen, ",") != "greet-2,greet-1" || pages[0].PrevPageToken != "" || pages[1].PrevPageToken == "" {
		t.Errorf("paging by one, newest first, saw %v (%+v)", seen, pages)
	}
	back := page("--type", "Greet", "--limit", "1", "--page-token", pages[1].PrevPageToken)
	if strings.Join(ids(back), ",") != "greet-2" || back.PrevPageToken != "" || back.NextPageToken == "" {
		t.Errorf("back a page: %+v", back)
	}
	out = w.ok("list", "--limit", "1")
	wantContains(t, "list --limit 1", out, "idle-1", "Next page: --page-token ")
	next := out[strings.Index(out, "--page-token ")+len("--page-token "):]
	next = strings.TrimSpace(next)
	out = w.ok("list", "--limit", "1", "--page-token", next)
	wantContains(t, "list --limit 1, page 2", out, "greet-2", "Next page: --page-token ", "Previous page: --page-token ")
	// The first cursor (a job id) still pages oldest first.
	oldest := page("--type", "Greet", "--limit", "1", "--order", "start_asc")
	after := page("--type", "Greet", "--limit", "1", "--cursor", strconv.FormatUint(oldest.Workflows[0].JobID, 10))
	if strings.Join(append(ids(oldest), ids(after)...), ",") != "greet-1,greet-2" || after.NextCursor != "" {
		t.Errorf("paging oldest first: %+v then %+v", oldest, after)
	}

	// --query joins the other filters, in heddle's terms or Temporal's.
	for _, q := range []string{"id=greet-*,idle-1 status!=Running", `WorkflowId STARTS_WITH "greet-" AND ExecutionStatus != "Running"`,
		`(WorkflowId = "greet-1" OR WorkflowId = "greet-2") AND ExecutionStatus = "Completed" ORDER BY StartTime ASC`} {
		seen = nil
		for p := page("--query", q, "--limit", "1", "--order", "start_asc"); ; p = page("--query", q, "--limit", "1", "--order", "start_asc", "--page-token", p.NextPageToken) {
			seen = append(seen, ids(p)...)
			if p.NextPageToken == "" {
				break
			}
		}
		if strings.Join(seen, ",") != "greet-1,greet-2" {
			t.Errorf("paging --query %s by one saw %v", q, seen)
		}
	}
	out = w.ok("list", "-q", "queue="+wfIdleQueue+" created>=-1h", "--type", "Gate")
	wantContains(t, "list -q", out, "idle-1")
	if strings.Contains(out, "greet") {
		t.Errorf("list -q queue=idle listed other runs:\n%s", out)
	}

	out = w.ok("list", "--type", "Nothing")
	wantContains(t, "an empty list", out, "No workflows.")
	code, out, _ := w.run("list", "--type", "Nothing", "--json")
	if code != 0 || !strings.Contains(out, `"workflows": []`) {
		t.Errorf("an empty list --json: exit %d, %s", code, out)
	}
}

// The token comes from --token or $HEDDLE_TOKEN; a missing one is the
// server's refusal.
func TestWorkflowToken(t *testing.T) {
	w := newWFEnv(t, "s3cret")
	code, _, errs := w.run("list")
	if code != 1 || !strings.Contains(errs, "unauthorized") {
		t.Errorf("list without a token: exit %d, stderr %q", code, errs)
	}
	w.ok("list", "--token", "s3cret")
	t.Setenv("HEDDLE_TOKEN", "s3cret")
	w.ok("list")
	// And the address from $HEDDLE_ADDR.
	t.Setenv("HEDDLE_ADDR", w.addr)
	var out bytes.Buffer
	if code := run([]string{"workflow", "list", "--json"}, &out, io.Discard); code != 0 {
		t.Errorf("list with $HEDDLE_ADDR: exit %d", code)
	}
}

// Bad input exits 2 with a message naming the flag or argument; a server's
// refusal exits 1 with the server's message.
func TestWorkflowBadInput(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-1", "--input", `"ada"`, "--wait")
	start := []string{"start", "--type", "Greet", "--queue", wfTestQueue}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr []string
	}{
		{[]string{"start", "--queue", "q"}, 2, []string{"heddle workflow start: --type is required", `Run "heddle workflow start --help"`}},
		{[]string{"start", "--type", "T"}, 2, []string{"-t/--task-queue is required"}},
		{append(start, "--input", `{"a":`), 2, []string{"-input", "not JSON"}},
		{append(start, "--input", `ada`), 2, []string{"-input", `a string must be quoted`}},
		{append(start, "--bogus"), 2, []string{"unknown flag: --bogus"}},
		{append(start, "--execution-timeout", "soon"), 2, []string{"-execution-timeout", "not a duration"}},
		{append(start, "--execution-timeout", "-1h"), 2, []string{"-execution-timeout", "must not be negative"}},
		{append(start, "--execution-timeout", "1ns"), 2, []string{"-execution-timeout", "at least 1ms"}},
		{append(start, "--reuse-policy", "sometimes"), 2, []string{"-reuse-policy", `unknown policy "sometimes"`}},
		{append(start, "extra"), 2, []string{`unexpected argument "extra"`}},
		{[]string{"describe", "no-such-workflow"}, 1, []string{"heddle workflow describe: ", "unknown job", `"no-such-workflow"`}},
		{[]string{"describe", "999999"}, 1, []string{"unknown job", "999999"}},
		{[]string{"describe", "--json", "--", "--not-a-flag"}, 1, []string{"unknown job", `"--not-a-flag"`}},
		{[]string{"describe"}, 2, []string{"missing argument ID"}},
		{[]string{"describe", "greet-1", "greet-2"}, 2, []string{`unexpected argument "greet-2"`}},
		{[]string{"describe", ""}, 2, []string{"ID must not be empty"}},
		{[]string{"history", "greet-1", "--limit", "-1"}, 2, []string{"--limit -1 is negative"}},
		{[]string{"history", "greet-1", "--after", "x"}, 2, []string{"-after"}},
		{[]string{"history", "no-such-workflow"}, 1, []string{"unknown job"}},
		{[]string{"list", "--status", "Done"}, 2, []string{`--status "Done" is not a status`, "Completed"}},
		{[]string{"list", "--limit", "0"}, 2, []string{"--limit 0 is not between 1 and 1000"}},
		{[]string{"list", "--cursor", "abc"}, 2, []string{`--cursor "abc"`}},
		{[]string{"list", "--query", "status=Done"}, 2, []string{`--query "status=Done", column 8, at "Done": "Done" is not a status`}},
		{[]string{"count", "-q", "created~2026-11-01"}, 2, []string{"--query", "column 8", `at "~2026-11-01": after created comes an operator`}},
		{[]string{"signal", "greet-1"}, 2, []string{"missing argument NAME"}},
		{[]string{"signal", "greet-1", ""}, 2, []string{"NAME must not be empty"}},
		{[]string{"signal", "greet-1", "go", "--input", "1", "--input", "2"}, 2, []string{"-input", "given more than once"}},
		{[]string{"signal", "greet-1", "go"}, 1, []string{"job closed"}},
		{[]string{"signal", "no-such-workflow", "go"}, 1, []string{"unknown job"}},
		{[]string{"cancel", "no-such-workflow"}, 1, []string{"unknown job"}},
		{[]string{"terminate"}, 2, []string{"missing argument ID"}},
		{[]string{"list", "--addr", "ftp://x"}, 2, []string{"--addr", "ftp://x"}},
		{[]string{"list", "--addr", " , "}, 2, []string{"--addr names no address"}},
	} {
		code, out, errs := w.run(tc.args[0], tc.args[1:]...)
		if code != tc.code {
			t.Errorf("workflow %q: exit %d, want %d; stderr %q", tc.args, code, tc.code, errs)
		}
		if out != "" {
			t.Errorf("workflow %q printed on stdout: %q", tc.args, out)
		}
		wantContains(t, fmt.Sprintf("stderr of workflow %q", tc.args), errs, tc.stderr...)
	}
}

// The command itself: usage, help and unknown subcommands.
func TestWorkflowDispatch(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"workflow"}, 2, "", "Available Commands:"},
		{[]string{"workflow", "frob"}, 2, "", `unknown command "frob"`},
		{[]string{"workflow", "-h"}, 0, "terminate", ""},
		{[]string{"help", "workflow"}, 0, "Available Commands:", ""},
		{[]string{"help"}, 0, "workflow", ""},
		{[]string{"workflow", "start", "-h"}, 0, "-execution-timeout", ""},
		{[]string{"workflow", "history", "--help"}, 0, "-after seq", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("heddle %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// The text helpers, against a fixed "now".
func TestWorkflowFormatting(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { wfNow = f }(wfNow)
	wfNow = func() time.Time { return now }
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	for _, tc := range []struct{ got, want string }{
		{wfRelative(ms(-192 * time.Second)), "3m12s ago"},
		{wfRelative(ms(-26 * time.Hour)), "1d2h ago"},
		{wfRelative(ms(-90 * time.Minute)), "1h30m ago"},
		{wfRelative(ms(-300 * time.Millisecond)), "just now"},
		{wfRelative(ms(20 * time.Second)), "in 20s"},
		{wfRelative(0), "-"},
		{wfOffset(0), "+0s"},
		{wfOffset(850), "+850ms"},
		{wfOffset(1234), "+1.234s"},
		{wfOffset(123_000), "+2m3s"},
		{wfRFC3339(ms(0)), "2025-03-01T12:00:00Z"},
		{wfRFC3339(0), ""},
		{wfTruncate("héllo wörld", 5), "héll…"},
		{wfTruncate("short", 5), "short"},
		{wfTruncate("anything", 0), "anything"},
		{wfCell("a\tb\nc"), `a\tb\nc`},
		{string(wfResultJSON([]byte(`[ {"a": 1} ]`))), `{"a":1}`},
		{string(wfResultJSON([]byte(`[1,2]`))), `[1,2]`},
		{string(wfResultJSON([]byte(`not json`))), ``},
		{wfPayloadText([]byte("plain text"), 0), `"plain text"`},
		{wfPayloadText([]byte{0xff, 0xfe}, 0), "<2 bytes, not text; see -o json>"},
		{wfPayloadText([]byte(`{"long": "abcdefghijklmnopqrstuvwxyz"}`), 12), `{"long":"ab…`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// start --wait returns when the engine ends the run at its deadline, even
// with no worker on the queue: the run is TimedOut and the exit status 1.
func TestWorkflowStartWaitTimesOut(t *testing.T) {
	w := newWFEnv(t, "")
	code, out, errs := w.run("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "late-1", "--execution-timeout", "300ms", "--wait")
	if code != 1 {
		t.Errorf("start --wait of a run that times out: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	wantContains(t, "start --wait of a run that times out", out, "Status       TimedOut\n")
	wantContains(t, "its stderr", errs, "workflow late-1 ended TimedOut")
	var d wfJobDoc
	w.json(&d, "describe", "late-1")
	if d.Status != "TimedOut" {
		t.Errorf("describe: status %q, want TimedOut", d.Status)
	}
}

// wfAnswerWith answers the queries a node brokers (as bytes) with w's
// workflow code, as a worker process serving the queue does.
func wfAnswerWith(w worker.Worker) engine.QueryFunc {
	return func(ctx context.Context, workflowID, runID, queryType string, args []byte) ([]byte, error) {
		vals, err := converter.RawValues(args)
		if err != nil {
			return nil, err
		}
		in := make([]any, len(vals))
		for i, v := range vals {
			in[i] = v
		}
		out, err := w.QueryWorkflow(ctx, workflowID, runID, queryType, in...)
		return converter.DataOf(out), err
	}
}
