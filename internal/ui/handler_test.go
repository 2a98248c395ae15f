package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New without an API: %v, want ErrInvalidConfig", err)
	}
	api := http.NotFoundHandler()
	for _, c := range []Config{{API: api, ProbeScheme: "ftp"}, {API: api, SessionKey: []byte("short")}} {
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): %v, want ErrInvalidConfig", c, err)
		}
	}
	if _, err := New(Config{API: api, ProbeScheme: "https", SessionKey: make([]byte, 16)}); err != nil {
		t.Errorf("a valid Config: %v", err)
	}
}

// seedList creates runs of two types on two queues, a minute apart, and
// ends some of them.
func seedList(v *env) {
	ctx := context.Background()
	for i := 1; i <= 6; i++ {
		typ, queue := "Order", "orders"
		if i%2 == 0 {
			typ, queue = "Refund", "refunds"
		}
		id := v.create(engine.CreateJob{WorkflowID: fmt.Sprintf("wf-%d", i), Type: typ, Queue: queue})
		if i == 5 || i == 6 {
			if _, err := v.e.Terminate(ctx, engine.Terminate{Target: engine.Target{Job: id}, Reason: "test"}); err != nil {
				v.t.Fatal(err)
			}
		}
		v.clk.Advance(time.Minute)
	}
}

// rows returns the workflow ids of a list page's table, in order.
func rows(body string) string {
	var ids []string
	for _, part := range strings.Split(body, `<td class="id"><a href="/ui/runs/`)[1:] {
		_, rest, _ := strings.Cut(part, `">`)
		id, _, _ := strings.Cut(rest, "<")
		ids = append(ids, id)
	}
	return strings.Join(ids, ",")
}

func TestWorkflowsPage(t *testing.T) {
	v := newEnv(t, envOptions{})
	seedList(v)
	for _, tc := range []struct {
		query string
		rows  string // newest first
		cli   string // the command line the page says lists the same
	}{
		{"", "wf-6,wf-5,wf-4,wf-3,wf-2,wf-1", ""},
		{"status=Queued", "wf-4,wf-3,wf-2,wf-1", "--query 'status=Queued'"},
		// Running is every open run, as in Temporal.
		{"status=Running", "wf-4,wf-3,wf-2,wf-1", "--query 'status=Running'"},
		{"q=" + url.QueryEscape("HeddleStatus=Running"), "", "--query 'HeddleStatus=Running'"},
		{"status=Terminated&type=Refund", "wf-6", "--query 'status=Terminated type=Refund'"},
		{"queue=orders", "wf-5,wf-3,wf-1", "--query 'queue=orders'"},
		{"type=Ref*", "wf-6,wf-4,wf-2", "--query 'type=Ref*'"},
		{"q=" + url.QueryEscape("status!=Terminated id=wf-1,wf-2,wf-5"), "wf-2,wf-1", "--query 'status!=Terminated id=wf-1,wf-2,wf-5'"},
		// Temporal's syntax, and a form field beside a query with OR.
		{"q=" + url.QueryEscape(`WorkflowType = "Refund" AND ExecutionStatus = "Running"`), "wf-4,wf-2", `--query 'WorkflowType = "Refund" AND ExecutionStatus = "Running"'`},
		{"queue=orders&q=" + url.QueryEscape(`WorkflowId = "wf-1" OR WorkflowId = "wf-2" ORDER BY StartTime`), "wf-1",
			`--query 'queue=orders (WorkflowId = "wf-1" OR WorkflowId = "wf-2") ORDER BY StartTime'`},
		// Started from 12:01 (inclusive) to 12:03 (exclusive), UTC, as
		// the form's datetime-local fields send them.
		{"from=2026-11-02T12:01&to=2026-11-02T12:03", "wf-3,wf-2", "--query 'created>=2026-11-02T12:01 created<2026-11-02T12:03'"},
		{"q=" + url.QueryEscape("created>-3m"), "wf-6,wf-5", "--query 'created>-3m'"},
		{"q=" + url.QueryEscape("closed>=2026-11-02T12:00Z"), "wf-6,wf-5", "--query 'closed>=2026-11-02T12:00Z'"},
		{"type=Nothing", "", "--query 'type=Nothing'"},
		// The sort: oldest first, and the runs that ended first.
		{"sort=start_asc", "wf-1,wf-2,wf-3,wf-4,wf-5,wf-6", "--order start_asc"},
		{"sort=close_desc", "wf-6,wf-5,wf-4,wf-3,wf-2,wf-1", "--order close_desc"},
		{"sort=close_asc&type=Refund", "wf-6,wf-2,wf-4", "--query 'type=Refund' --order close_asc"},
	} {
		code, body, _ := v.get("/ui/workflows?" + tc.query)
		if code != http.StatusOK {
			t.Errorf("?%s: HTTP %d", tc.query, code)
			continue
		}
		if got := rows(body); got != tc.rows {
			t.Errorf("?%s lists %q, want %q", tc.query, got, tc.rows)
		}
		if tc.cli != "" {
			wantIn(t, "?"+tc.query, body, "heddle workflow list "+tc.cli+"</code>")
		}
		if tc.rows == "" {
			wantIn(t, "?"+tc.query, body, "No runs match.")
		}
	}
	// A query that is not in the language is refused with where and why.
	code, body, _ := v.get("/ui/workflows?q=" + url.QueryEscape("status=Done"))
	if code != http.StatusBadRequest {
		t.Errorf("a bad query: HTTP %d, want 400", code)
	}
	wantIn(t, "a bad query", body, `At column 8, at "Done": "Done" is not a status of ExecutionStatus`)
	wantNotIn(t, "a bad query", body, `<table class="runs"`)
	if code, _, _ := v.get("/ui/workflows?sort=newest"); code != http.StatusBadRequest {
		t.Errorf("a bad sort: HTTP %d, want 400", code)
	}
}

func TestWorkflowsPaging(t *testing.T) {
	v := newEnv(t, envOptions{})
	for i := 1; i <= 30; i++ {
		v.create(engine.CreateJob{WorkflowID: fmt.Sprintf("run-%02d", i), Type: "T", Queue: "q"})
	}
	newest := func(from, to int) string {
		var ids []string
		for i := from; i >= to; i-- {
			ids = append(ids, fmt.Sprintf("run-%02d", i))
		}
		return strings.Join(ids, ",")
	}
	// Page through by the page's own links: 25 newest, then 5, and back.
	code, body, _ := v.get("/ui/workflows")
	if code != http.StatusOK || rows(body) != newest(30, 6) || strings.Contains(body, "first-page") || strings.Contains(body, "prev-page") {
		t.Fatalf("first page: HTTP %d, rows %q", code, rows(body))
	}
	_, body, _ = v.get(link(t, body, "next-page"))
	if got := rows(body); got != newest(5, 1) || strings.Contains(body, "next-page") {
		t.Errorf("second page lists %q (next link: %v)", got, strings.Contains(body, "next-page"))
	}
	if first := link(t, body, "first-page"); first != "/ui/workflows?" {
		t.Errorf("first page link %q", first)
	}
	_, body, _ = v.get(link(t, body, "prev-page"))
	if got := rows(body); got != newest(30, 6) || strings.Contains(body, "prev-page") || !strings.Contains(body, "next-page") {
		t.Errorf("back to the first page: %q", got)
	}
	// A filter no index answers, its sort and page size kept by the links.
	_, body, _ = v.get("/ui/workflows?limit=50&sort=start_asc&q=" + url.QueryEscape("id=run-1*,run-3*"))
	if got := rows(body); got != "run-10,run-11,run-12,run-13,run-14,run-15,run-16,run-17,run-18,run-19,run-30" {
		t.Errorf("id filter lists %q", got)
	}
	_, body, _ = v.get("/ui/workflows?limit=5&q=" + url.QueryEscape("id=run-2*,run-30"))
	if got := rows(body); got != "run-30,run-29,run-28,run-27,run-26" {
		t.Errorf("id filter lists %q", got)
	}
	next := link(t, body, "next-page")
	if !strings.Contains(next, "limit=5") || !strings.Contains(next, "q=") {
		t.Errorf("next link %q lost the filter", next)
	}
	_, body, _ = v.get(next)
	if got := rows(body); got != "run-25,run-24,run-23,run-22,run-21" {
		t.Errorf("id filter, second page %q", got)
	}
	// A page link of another filter, or no link at all, is refused.
	if code, _, _ = v.get("/ui/workflows?q=type%3DU&" + next[strings.Index(next, "page="):]); code != http.StatusBadRequest {
		t.Errorf("a page link with another filter: HTTP %d, want 400", code)
	}
	if code, _, _ = v.get("/ui/workflows?page=x"); code != http.StatusBadRequest {
		t.Errorf("page=x: HTTP %d, want 400", code)
	}
}

// link returns the href of the element with the given id.
func link(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no %s link", id)
	}
	start := strings.LastIndex(body[:i], `href="`)
	rest := body[start+len(`href="`):]
	href, _, _ := strings.Cut(rest, `"`)
	return href
}

// seedRun makes a run whose history holds a completed activity, a failed
// try, a child, a timer and a wait, the way a worker writes them.
func seedRun(v *env) (parent, child engine.JobID) {
	ctx := context.Background()
	parent = v.create(engine.CreateJob{WorkflowID: "order-1", Type: "Order", Queue: "orders", Input: []byte(`[{"sku":"A-1","qty":2}]`)})
	claimed, err := v.e.Claim(ctx, engine.Claim{Queue: "orders", Owner: "worker-7", Max: 1, LeaseMS: 60000})
	if err != nil || len(claimed) != 1 {
		v.t.Fatalf("claim: %v %v", claimed, err)
	}
	ref := claimed[0].Lease()
	if _, err := v.e.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, Name: "Reserve", Payload: []byte(`["reserved"]`)}); err != nil {
		v.t.Fatal(err)
	}
	child = v.create(engine.CreateJob{WorkflowID: "order-1/1/3", Type: "Ship", Queue: "orders", ParentID: parent, ParentStep: "3", ParentLease: &ref})
	if _, err := v.e.Append(ctx, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{
		{Type: engine.EventActivityAttemptFailed, Step: "2", Name: "Charge", Payload: []byte(`{"attempt":1,"message":"card declined","retryAtMS":` + fmt.Sprint(t0.Add(time.Hour).UnixMilli()) + `}`)},
		{Type: engine.EventChildScheduled, Step: "3", Name: "Ship"},
	}}); err != nil {
		v.t.Fatal(err)
	}
	fire := t0.Add(2 * time.Hour).UnixMilli()
	if _, err := v.e.Wait(ctx, engine.Wait{LeaseRef: ref, SeenSeq: 5, Spec: engine.WaitSpec{AnySignal: true, Timers: []engine.Timer{{ID: "4", FireMS: fire}}},
		Events: []engine.NewEvent{{Type: engine.EventTimerScheduled, Step: "4"}}}); err != nil {
		v.t.Fatal(err)
	}
	return parent, child
}

func TestRunPage(t *testing.T) {
	v := newEnv(t, envOptions{})
	parent, child := seedRun(v)
	code, body, _ := v.get(fmt.Sprintf("/ui/runs/%d", parent))
	if code != http.StatusOK {
		t.Fatalf("run page: HTTP %d\n%s", code, body)
	}
	wantIn(t, "the run page", body,
		`<span class="id">order-1</span>`, `data-status="Waiting"`,
		// the input, decoded and indented
		"[\n  {\n    \"sku\": \"A-1\",\n    \"qty\": 2\n  }\n]",
		// what it waits for, and the pending steps: a try that failed, a
		// child (found and linked), a timer with its time
		"Waits for: timer of step 4 at 2026-11-02 14:00:00.000Z.",
		// the attempt counts retries (none), the workflow tasks leases
		`<dd id="run-attempt">1 <span class="note">(the run's try under its workflow retry policy; not retried)</span></dd>`, `<dd id="run-tasks">1 <span class="note">`,
		`<tr data-step="2">`, "Charge", "try 1 failed: card declined; next try in 1h00m",
		`<tr data-step="3">`, fmt.Sprintf(`<a href="/ui/runs/%d"><span class="badge st-queued">Queued</span></a>`, child),
		`<tr data-step="4">`, "fires 2026-11-02 14:00:00.000Z (in 2h00m)",
		// the children
		fmt.Sprintf(`<a href="/ui/runs/%d" class="child-link">order-1/1/3</a>`, child),
		// the timeline: every event, payloads decoded
		`data-type="job_created"`, `data-type="job_leased"`, `<span class="tag name">worker-7</span>`,
		`data-type="activity_completed"`, "[\n  \"reserved\"\n]", `<span class="tag ok">committed</span>`,
		`data-type="activity_attempt_failed"`, `data-type="child_scheduled"`, `data-type="timer_scheduled"`, `data-type="job_waiting"`,
		// the buttons of an open run
		`id="signal-form"`, `id="cancel-form"`, `id="terminate-form"`)
	wantNotIn(t, "the run page", body, `<tr data-step="1">`) // completed: not pending

	// The child links back to its parent.
	_, body, _ = v.get(fmt.Sprintf("/ui/runs/%d", child))
	wantIn(t, "the child's page", body, fmt.Sprintf(`<a href="/ui/runs/%d">order-1</a> (its step 3)`, parent))

	// A workflow id leads to its current run.
	code, _, loc := v.get("/ui/workflow?id=" + url.QueryEscape("order-1/1/3"))
	if code != http.StatusSeeOther || loc != fmt.Sprintf("/ui/runs/%d", child) {
		t.Errorf("workflow?id=: HTTP %d to %q", code, loc)
	}
	for path, want := range map[string]int{
		"/ui/runs/999":               http.StatusNotFound,
		"/ui/runs/abc":               http.StatusNotFound,
		"/ui/workflow?id=nope":       http.StatusNotFound,
		"/ui/workflow":               http.StatusBadRequest,
		"/ui/runs/1?after=x":         http.StatusBadRequest,
		"/ui/no-such-page":           http.StatusNotFound,
		"/ui/runs/1/signal":          http.StatusNotFound, // a GET of a form's target
		"/ui/static/no-such-file.js": http.StatusNotFound,
	} {
		if code, body, _ := v.get(path); code != want {
			t.Errorf("%s: HTTP %d, want %d\n%s", path, code, want, body)
		}
	}
}

func TestRunPageClosed(t *testing.T) {
	v := newEnv(t, envOptions{})
	id := v.create(engine.CreateJob{WorkflowID: "w", Type: "T", Queue: "q"})
	if _, err := v.e.Terminate(context.Background(), engine.Terminate{Target: engine.Target{Job: id}, Reason: "stuck"}); err != nil {
		t.Fatal(err)
	}
	_, body, _ := v.get(fmt.Sprintf("/ui/runs/%d", id))
	wantIn(t, "a terminated run", body, `data-status="Terminated"`, "<h2>Failure", `"message": "terminated: stuck"`, `class="ev ev-bad"`)
	wantNotIn(t, "a terminated run", body, `id="actions"`, `id="pending"`)
}

func TestActions(t *testing.T) {
	v := newEnv(t, envOptions{})
	parent, child := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	csrf := v.csrf(path)

	// Without the form's CSRF token nothing is sent.
	code, _, _ := v.post(path+"/signal", url.Values{"name": {"go"}})
	if code != http.StatusForbidden {
		t.Errorf("a signal without a CSRF token: HTTP %d, want 403", code)
	}
	code, _, _ = v.post(path+"/signal", url.Values{"name": {"go"}, csrfField: {strings.Repeat("0", 32)}})
	if code != http.StatusForbidden {
		t.Errorf("a signal with another CSRF token: HTTP %d, want 403", code)
	}
	// Bad input is refused on the run's page, with what was typed.
	code, body, _ := v.post(path+"/signal", url.Values{"name": {"go"}, "value": {"not json"}, csrfField: {csrf}})
	if code != http.StatusBadRequest {
		t.Errorf("a signal whose value is not JSON: HTTP %d", code)
	}
	wantIn(t, "the refused signal", body, "is not JSON", `value="not json"`, `data-status="Waiting"`)
	code, body, _ = v.post(path+"/signal", url.Values{"value": {"1"}, csrfField: {csrf}})
	if code != http.StatusBadRequest || !strings.Contains(body, "A signal needs a name.") {
		t.Errorf("a signal without a name: HTTP %d", code)
	}
	if n := len(v.history(parent)); n != 7 {
		t.Fatalf("refused signals wrote events: %d events", n)
	}

	// A signal is sent as the SDK's client sends it, and wakes the run.
	code, _, loc := v.post(path+"/signal", url.Values{"name": {"go"}, "value": {` {"by": "ada"} `}, csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != path+"?done=signal" {
		t.Fatalf("signal: HTTP %d to %q", code, loc)
	}
	h := v.history(parent)
	sig := h[len(h)-2]
	if sig.Type != engine.EventSignalReceived || sig.Name != "go" || string(sig.Payload) != `[{"by":"ada"}]` {
		t.Errorf("the signal's event: %+v payload %s", sig, sig.Payload)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the page after a signal", body, `<p class="flash" role="status" id="flash">Signal sent.</p>`, `data-status="Queued"`, `data-type="signal_received"`)

	// An empty value is null.
	if code, _, _ := v.post(path+"/signal", url.Values{"name": {"again"}, csrfField: {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("signal without a value: HTTP %d", code)
	}
	h = v.history(parent)
	if last := h[len(h)-1]; last.Name != "again" || string(last.Payload) != "[null]" {
		t.Errorf("a signal without a value: %+v payload %s", last, last.Payload)
	}

	// Cancel asks; terminate ends.
	code, _, loc = v.post(path+"/cancel", url.Values{"reason": {"customer asked"}, csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != path+"?done=cancel" {
		t.Fatalf("cancel: HTTP %d to %q", code, loc)
	}
	h = v.history(parent)
	if last := h[len(h)-1]; last.Type != engine.EventCancelRequested || last.Reason != "customer asked" {
		t.Errorf("cancel wrote %+v", last)
	}
	childPath := fmt.Sprintf("/ui/runs/%d", child)
	code, _, loc = v.post(childPath+"/terminate", url.Values{"reason": {"not needed"}, csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != childPath+"?done=terminate" {
		t.Fatalf("terminate: HTTP %d to %q", code, loc)
	}
	if j := v.describe(child); j.Status != engine.StatusTerminated {
		t.Errorf("terminated child is %s", j.Status)
	}
	// A closed run refuses, and its page says why.
	code, body, _ = v.post(childPath+"/signal", url.Values{"name": {"go"}, csrfField: {csrf}})
	if code != http.StatusConflict {
		t.Errorf("a signal to a closed run: HTTP %d, want 409", code)
	}
	wantIn(t, "a signal to a closed run", body, "Could not signal:", "job closed")
	code, _, _ = v.post(childPath+"/terminate", url.Values{"reason": {strings.Repeat("x", maxReasonRunes+1)}, csrfField: {csrf}})
	if code != http.StatusBadRequest {
		t.Errorf("a reason too long: HTTP %d", code)
	}
	code, _, _ = v.post("/ui/runs/999/cancel", url.Values{csrfField: {csrf}})
	if code != http.StatusNotFound {
		t.Errorf("cancel of no run: HTTP %d, want 404", code)
	}
}

func TestSignIn(t *testing.T) {
	v := newEnv(t, envOptions{token: "s3cret token;"})
	v.create(engine.CreateJob{WorkflowID: "w-1", Type: "T", Queue: "q"})
	// Without a token, every page sends the browser to sign in.
	code, _, loc := v.get("/ui/runs/1?after=0")
	if code != http.StatusSeeOther || loc != "/ui/signin?next="+url.QueryEscape("/ui/runs/1?after=0") {
		t.Fatalf("a page without a token: HTTP %d to %q", code, loc)
	}
	code, body, _ := v.get(loc)
	if code != http.StatusOK {
		t.Fatalf("sign-in page: HTTP %d", code)
	}
	wantIn(t, "the sign-in page", body, "asks for a bearer token", `name="next" value="/ui/runs/1?after=0"`)
	csrf := csrfRE.FindStringSubmatch(body)[1]

	code, body, _ = v.post("/ui/signin", url.Values{"token": {"wrong"}, "next": {"/ui/runs/1"}, csrfField: {csrf}})
	if code != http.StatusUnauthorized {
		t.Errorf("a wrong token: HTTP %d, want 401", code)
	}
	wantIn(t, "a wrong token", body, "The server refused this token.")
	code, _, _ = v.post("/ui/signin", url.Values{"token": {"s3cret token;"}, csrfField: {"x"}})
	if code != http.StatusForbidden {
		t.Errorf("a sign-in without the CSRF token: HTTP %d, want 403", code)
	}
	code, _, loc = v.post("/ui/signin", url.Values{"token": {" s3cret token; "}, "next": {"/ui/runs/1"}, csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != "/ui/runs/1" {
		t.Fatalf("sign-in: HTTP %d to %q", code, loc)
	}
	code, body, _ = v.get(loc)
	if code != http.StatusOK {
		t.Fatalf("a page after sign-in: HTTP %d", code)
	}
	wantIn(t, "a page after sign-in", body, "w-1", `id="signout"`)
	// The sign-in made a new session: the form token before it is void.
	if after := v.csrf("/ui/signin"); after == csrf {
		t.Error("the CSRF token is the same after the sign-in")
	} else if code, _, _ := v.post("/ui/signout", url.Values{csrfField: {csrf}}); code != http.StatusForbidden {
		t.Errorf("a sign-out with the token from before the sign-in: HTTP %d, want 403", code)
	} else {
		csrf = after
	}

	// The token cookie is HttpOnly and strict: scripts never read it.
	u, _ := url.Parse(v.srv.URL + "/ui/")
	if len(v.client.Jar.Cookies(u)) != 2 {
		t.Errorf("cookies: %v", v.client.Jar.Cookies(u))
	}
	resp, err := v.client.PostForm(v.srv.URL+"/ui/signin", url.Values{"token": {"s3cret token;"}, csrfField: {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == tokenCookie && (!c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != Path) {
			t.Errorf("token cookie %+v", c)
		}
	}
	// A sign-in never sends the browser off the UI.
	for _, next := range []string{"https://evil.example/", "//evil.example/ui/", `/ui/\evil`, "/v1/jobs", "/ui/signin"} {
		_, _, loc := v.post("/ui/signin", url.Values{"token": {"s3cret token;"}, "next": {next}, csrfField: {v.csrf("/ui/signin")}})
		if loc != "/ui/workflows" {
			t.Errorf("next=%q sent the browser to %q", next, loc)
		}
	}

	// Signing out forgets the token.
	code, _, loc = v.post("/ui/signout", url.Values{csrfField: {v.csrf("/ui/signin")}})
	if code != http.StatusSeeOther || loc != "/ui/signin" {
		t.Errorf("sign-out: HTTP %d to %q", code, loc)
	}
	if code, _, _ := v.get("/ui/workflows"); code != http.StatusSeeOther {
		t.Errorf("a page after sign-out: HTTP %d, want a redirect to sign in", code)
	}
	// A token that stops working sends the browser back, saying so.
	v.client.Jar.SetCookies(u, []*http.Cookie{{Name: tokenCookie, Value: "b2xk", Path: Path}})
	_, _, loc = v.get("/ui/cluster")
	if !strings.Contains(loc, "refused=1") {
		t.Errorf("an old token: to %q", loc)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "sign-in after a refused token", body, "The server refused the token this browser had.")
}

func TestPermissions(t *testing.T) {
	var asked []string
	v := newEnv(t, envOptions{permissions: func(_ context.Context, token string) (Permissions, error) {
		asked = append(asked, token)
		return Allow(ActionSignal), nil
	}})
	parent, _ := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	_, body, _ := v.get(path)
	wantIn(t, "a page for a token that may only signal", body, `id="signal-form"`)
	wantNotIn(t, "a page for a token that may only signal", body, `id="cancel-form"`, `id="terminate-form"`)
	csrf := v.csrf(path)
	code, body, _ := v.post(path+"/terminate", url.Values{csrfField: {csrf}})
	if code != http.StatusForbidden || !strings.Contains(body, "This token may not terminate runs.") {
		t.Errorf("terminate without the permission: HTTP %d", code)
	}
	if j := v.describe(parent); j.Status != engine.StatusWaiting {
		t.Errorf("a refused terminate left the run %s", j.Status)
	}
	if len(asked) == 0 || asked[0] != "" {
		t.Errorf("Permissions was asked for %q", asked)
	}
	if p := AllowAll(); !p.Can(ActionTerminate) || !p.Can("review.approve") {
		t.Error("AllowAll refuses an action")
	}
}

// TestForRole checks the buttons of each role, cell by cell.
func TestForRole(t *testing.T) {
	actions := []Action{ActionSignal, ActionCancel, ActionTerminate, ActionApprove, ActionReject, ActionResubmit, ActionTerminateReview}
	for _, tc := range []struct {
		role string
		can  []bool // in the order of actions
	}{
		{"reader", []bool{false, false, false, false, false, false, false}},
		{"client", []bool{true, true, false, true, true, true, true}},
		{"worker", []bool{true, true, false, true, true, true, true}},
		{"admin", []bool{true, true, true, true, true, true, true}},
	} {
		p, err := ForRole(tc.role)
		if err != nil {
			t.Fatalf("ForRole(%q): %v", tc.role, err)
		}
		if p.Role() != tc.role {
			t.Errorf("ForRole(%q).Role() = %q", tc.role, p.Role())
		}
		for i, a := range actions {
			if got := p.Can(a); got != tc.can[i] {
				t.Errorf("role %s: Can(%s) = %v, want %v", tc.role, a, got, tc.can[i])
			}
		}
	}
	for _, bad := range []string{"", "Admin", "root", "none"} {
		if _, err := ForRole(bad); !errors.Is(err, ErrUnknownRole) || !strings.Contains(err.Error(), "reader, client, worker, admin") {
			t.Errorf("ForRole(%q): %v, want ErrUnknownRole naming the roles", bad, err)
		}
	}
	if AllowAll().Role() != "" || (Permissions{}).Can(ActionSignal) {
		t.Error("permissions not made by ForRole have a role, or the zero value permits")
	}
}

// TestRolesFromAPI signs in with a token of each role and sees the buttons
// of the role the API names; an API without GET /v1/whoami gets every
// button.
func TestRolesFromAPI(t *testing.T) {
	tokens := &httpapi.Tokens{}
	for _, g := range []struct{ name, role, token string }{
		{"rita", "reader", "reader-token"}, {"carl", "client", "client-token"},
		{"wendy", "worker", "worker-token"}, {"ada", "admin", "admin-token"},
	} {
		role, err := httpapi.ParseRole(g.role)
		if err != nil {
			t.Fatal(err)
		}
		if err := tokens.Add(g.name, role, g.token); err != nil {
			t.Fatal(err)
		}
	}
	v := newEnv(t, envOptions{tokens: tokens})
	parent, _ := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	for _, tc := range []struct {
		token, role string
		forms       []string // the action forms the run's page has
	}{
		{"reader-token", "reader", nil},
		{"client-token", "client", []string{"signal-form", "cancel-form"}},
		{"worker-token", "worker", []string{"signal-form", "cancel-form"}},
		{"admin-token", "admin", []string{"signal-form", "cancel-form", "terminate-form"}},
	} {
		v.signIn(tc.token)
		_, body, _ := v.get(path)
		what := tc.role + "'s run page"
		wantIn(t, what, body, `<span class="role" id="role"`, ">"+tc.role+"</span>")
		for _, f := range []string{"signal-form", "cancel-form", "terminate-form"} {
			if has, want := strings.Contains(body, `id="`+f+`"`), slices.Contains(tc.forms, f); has != want {
				t.Errorf("%s: has %s %v, want %v", what, f, has, want)
			}
		}
		if has := strings.Contains(body, `id="no-actions"`); has != (len(tc.forms) == 0) {
			t.Errorf("%s: the note that the role may not act: %v", what, has)
		}
	}

	// An API without the route: every button, no role named.
	noWhoAmI := func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/whoami" {
				r.URL.Path = "/v1/no-such-route"
			}
			api.ServeHTTP(w, r)
		})
	}
	v = newEnv(t, envOptions{token: "tok", wrapAPI: noWhoAmI})
	parent, _ = seedRun(v)
	v.signIn("tok")
	_, body, _ := v.get(fmt.Sprintf("/ui/runs/%d", parent))
	wantIn(t, "a run page from an API without whoami", body, `id="signal-form"`, `id="cancel-form"`, `id="terminate-form"`)
	wantNotIn(t, "a run page from an API without whoami", body, `id="role"`)
}

// TestRolePages shows a run's page to a reader and to a client: the reader
// gets no buttons and a note why, the client no terminate, and a terminate
// posted anyway is refused naming the role.
func TestRolePages(t *testing.T) {
	role := "reader"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	parent, _ := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	_, body, _ := v.get(path)
	wantIn(t, "a reader's run page", body, `id="no-actions"`, "The reader role may not act on runs")
	wantNotIn(t, "a reader's run page", body, `id="actions"`, `id="signal-form"`)
	role = "client"
	_, body, _ = v.get(path)
	wantIn(t, "a client's run page", body, `id="signal-form"`, `id="cancel-form"`)
	wantNotIn(t, "a client's run page", body, `id="terminate-form"`, `id="no-actions"`)
	code, body, _ := v.post(path+"/terminate", url.Values{csrfField: {v.csrf(path)}})
	if code != http.StatusForbidden || !strings.Contains(body, "The client role may not terminate runs.") {
		t.Errorf("a client's terminate: HTTP %d", code)
	}
	if j := v.describe(parent); j.Status != engine.StatusWaiting {
		t.Errorf("a refused terminate left the run %s", j.Status)
	}
}

func TestFeaturePages(t *testing.T) {
	v := newEnv(t, envOptions{})
	// A feature whose API answers that it has no route is not available;
	// one whose API answers shows its page.
	h := &Handler{cfg: Config{Now: time.Now}.withDefaults()}
	noRoute := feature{Path: "x", Title: "X", Template: "error.html", Load: func(ctx context.Context, api *backend, _ *http.Request) (any, error) {
		_, _, err := api.get(ctx, "/v1/no-such-route")
		return nil, err
	}}
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: v.e})
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.API = api
	req, _ := http.NewRequest(http.MethodGet, "/ui/x", nil)
	b, err := h.newBackend(req, "")
	if err != nil {
		t.Fatal(err)
	}
	rq := &request{r: req, ctx: context.Background(), api: b}
	p, err := h.feature(noRoute)(rq)
	if err != nil || p.Template != "unavailable.html" {
		t.Errorf("a feature whose route is missing: %+v, %v", p, err)
	}
	notBuilt := noRoute
	notBuilt.Load = nil
	p, err = h.feature(notBuilt)(rq)
	if err != nil || p.Template != "unavailable.html" {
		t.Errorf("a feature with no load function: %+v, %v", p, err)
	}
	works := noRoute
	works.Load = func(ctx context.Context, api *backend, _ *http.Request) (any, error) {
		_, body, err := api.get(ctx, "/v1/jobs")
		return string(body), err
	}
	p, err = h.feature(works)(rq)
	if err != nil || p.Template != "error.html" || !strings.Contains(p.Data.(string), `"jobs"`) {
		t.Errorf("a feature whose API answers: %+v, %v", p, err)
	}
}

func TestStaticAndHeaders(t *testing.T) {
	v := newEnv(t, envOptions{})
	resp, err := v.client.Get(v.srv.URL + "/ui/static/heddle.js?v=" + staticVersion)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") ||
		!strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Errorf("the script: HTTP %d, %v", resp.StatusCode, resp.Header)
	}
	resp, err = v.client.Get(v.srv.URL + "/ui/workflows")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	for k, want := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for _, path := range []string{"/ui", "/ui/"} {
		if code, _, loc := v.get(path); code != http.StatusFound || loc != "/ui/workflows" {
			t.Errorf("%s: HTTP %d to %q", path, code, loc)
		}
	}
}
