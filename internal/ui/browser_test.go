package ui

// The tests in this file drive the UI in a real browser: headless Chromium
// (Debian's package; .ci/run installs it), through chromedp. They skip when
// no Chromium is found, except under CI=true, where a missing browser
// fails them. Screenshots go to $HEDDLE_UI_SCREENSHOTS, by default the
// directory heddle-ui-screenshots under the system's temporary directory;
// docs/img holds the ones the documentation shows, taken by these tests.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// chromiumNames are the browser binaries looked for on $PATH, Debian's
// first; $HEDDLE_CHROMIUM names another.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

func chromiumPath() string {
	if p := os.Getenv("HEDDLE_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// browser starts a headless Chromium of its own for one test, with a fresh
// profile that chromedp makes and removes once Chromium has exited (a
// t.TempDir profile races Chromium's last writes), that reaches nothing
// beyond loopback. Each of names, if any, resolves to 127.0.0.1, as a
// name an attacker rebinds would.
func browser(t *testing.T, names ...string) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, but no Chromium is installed (looked for $HEDDLE_CHROMIUM and %v on $PATH): .ci/run installs Debian's chromium", chromiumNames)
		}
		t.Skipf("browser test skipped: no Chromium found ($HEDDLE_CHROMIUM, or %v on $PATH); apt-get install chromium to run it", chromiumNames)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 900),
		// No traffic of Chromium's own (updates, sync, safe browsing,
		// QUIC probes), and no name resolution: the tests' pages are on
		// 127.0.0.1, and nothing else is to be reached.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("metrics-recording-only", true),
		// Every host name fails to resolve; loopback addresses are
		// excluded, since the rules apply to address literals too.
		chromedp.Flag("host-resolver-rules", resolverRules(names)),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// Confirm every dialog the page opens (the cancel and terminate
	// buttons ask first).
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*cdppage.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(ctx, cdppage.HandleJavaScriptDialog(true)) }()
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// resolverRules maps names to 127.0.0.1 and every other name to nothing.
func resolverRules(names []string) string {
	var rules []string
	for _, n := range names {
		rules = append(rules, "MAP "+n+" 127.0.0.1")
	}
	return strings.Join(append(rules, "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"), ", ")
}

// screenshotDir is where the tests save their screenshots.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("HEDDLE_UI_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "heddle-ui-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shoot saves a PNG of the whole page and checks it is one.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var buf []byte
	run(t, ctx, "screenshot "+name, chromedp.FullScreenshot(&buf, 100))
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil || img.Bounds().Dx() < 1000 {
		t.Fatalf("screenshot %s is not a page-wide PNG: %v", name, err)
	}
	p := filepath.Join(screenshotDir(t), name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// stepTimeout bounds one step of a browser test, so that a page that never
// shows what a step waits for fails that step instead of hanging the test.
const stepTimeout = 45 * time.Second

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Run(stepCtx, actions...); err != nil {
		var loc, html string
		// What the page showed, for the failure message; briefly, since
		// the page may have no main element at all.
		dumpCtx, cancelDump := context.WithTimeout(ctx, 5*time.Second)
		_ = chromedp.Run(dumpCtx, chromedp.Location(&loc), chromedp.OuterHTML("main", &html, chromedp.ByQuery))
		cancelDump()
		t.Fatalf("%s: %v\nat %s:\n%s", what, err, loc, html)
	}
}

// click clicks the element sel, once it is there and shown, in one
// script. The page's live refresh replaces its content in place, and
// chromedp's Click finds the node in one call and clicks it in later ones,
// by which time a refresh may have replaced it ("Could not find node");
// the script finds and clicks it in one turn of the page's event loop.
func click(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e || e.getClientRects().length === 0) return false; e.click(); return true; })()`, sel)
		for {
			var clicked bool
			if err := chromedp.Evaluate(js, &clicked).Do(ctx); err != nil {
				return fmt.Errorf("click %s: %w", sel, err)
			}
			if clicked {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("click %s: no such element shown: %w", sel, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// typeInto focuses the field sel, clears it and types value as keys. The
// focus and the clearing happen in one script, so the page's live refresh,
// which leaves a page alone while a field has the focus, cannot swap the
// field for a fresh copy between finding it and typing into it.
func typeInto(sel, value string) chromedp.Action {
	return chromedp.Tasks{
		focusField(sel, ""),
		chromedp.SendKeys(sel, value, chromedp.ByQuery),
	}
}

// choose focuses the select (or field) sel and sets its value, in one
// script for the same reason as typeInto.
func choose(sel, value string) chromedp.Action { return focusField(sel, value) }

func focusField(sel, value string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var ok bool
		js := fmt.Sprintf(`(() => { const f = document.querySelector(%q); if (!f) return false; f.focus(); f.value = %q; return document.activeElement === f; })()`, sel, value)
		if err := chromedp.Evaluate(js, &ok).Do(ctx); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no field %s to focus", sel)
		}
		return nil
	})
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	// The page's live refresh replaces its content in place; a node found
	// by the query can be gone by the time its text is asked for, which
	// chromedp reports as "Could not find node". Reading again finds the
	// new one; a read changes nothing, so it may be repeated.
	// The last try goes through run, which reports a failure with the page.
	for range 4 {
		stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
		err := chromedp.Run(stepCtx, chromedp.Text(sel, &s, chromedp.ByQuery))
		cancel()
		if err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	run(t, ctx, "text of "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// The workflows of the browser tests: an order reserves stock (its first
// try fails), ships through a child workflow, waits for a person's
// approval (or an hour), then notifies.

type order struct {
	SKU      string `json:"sku"`
	Qty      int    `json:"qty"`
	Customer string `json:"customer"`
}

// notifyGate holds the Notify activity, so that the test sees the run
// Running before it lets it complete.
var notifyGate = make(chan struct{})

func reserveActivity(ctx context.Context, o order) (string, error) {
	if activity.GetInfo(ctx).Attempt == 1 {
		return "", errors.New("inventory service busy")
	}
	return fmt.Sprintf("reservation R-%s-%d", o.SKU, o.Qty), nil
}

func labelActivity(_ context.Context, sku string) (string, error) { return "1Z999" + sku, nil }

func notifyActivity(ctx context.Context, who string) error {
	select {
	case <-notifyGate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func shipWorkflow(ctx workflow.Context, sku string) (string, error) {
	var label string
	err := workflow.ExecuteActivity(withOptions(ctx), "Label", sku).Get(ctx, &label)
	return label, err
}

func orderWorkflow(ctx workflow.Context, o order) (string, error) {
	ctx = withOptions(ctx)
	var reservation, label, approver string
	if err := workflow.ExecuteActivity(ctx, "Reserve", o).Get(ctx, &reservation); err != nil {
		return "", err
	}
	if err := workflow.ExecuteChildWorkflow(ctx, "Ship", o.SKU).Get(ctx, &label); err != nil {
		return "", err
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, "approve"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &approver) })
	sel.AddFuture(workflow.NewTimer(ctx, time.Hour), func(workflow.Future) {})
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.Select(ctx)
	if ctx.Err() != nil {
		return "", workflow.ErrCanceled
	}
	if approver == "" {
		return "", errors.New("not approved within the hour")
	}
	if err := workflow.ExecuteActivity(ctx, "Notify", o.Customer).Get(ctx, nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, shipped as %s, approved by %s", reservation, label, approver), nil
}

// invoiceWorkflow prints on a queue no worker serves: its activity stays
// pending, a job of its own.
func invoiceWorkflow(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "printers", StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, "Print", n).Get(ctx, nil)
}

func withOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 50 * time.Millisecond, MaximumAttempts: 3}})
}

// The API's tokens in the browser tests: the browser signs in with the
// admin's, and with the others to see the buttons follow the role.
const (
	browserToken = "browser-test-token"
	readerToken  = "browser-reader-token"
	clientToken  = "browser-client-token"
)

// node is an engine with its API and UI on a loopback listener, and a
// worker of the orders queue.
type node struct {
	e   *embedded.Engine
	url string
	c   client.Client
}

func startNode(t *testing.T) *node {
	t.Helper()
	e, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	tokens := &httpapi.Tokens{}
	for _, g := range []struct {
		name  string
		role  httpapi.Role
		token string
	}{{"ada", httpapi.RoleAdmin, browserToken}, {"rita", httpapi.RoleReader, readerToken}, {"carl", httpapi.RoleClient, clientToken}} {
		if err := tokens.Add(g.name, g.role, g.token); err != nil {
			t.Fatal(err)
		}
	}
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: e, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{API: api, Refresh: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mount(h, api))
	n := &node{e: e, c: client.New(e), url: srv.URL}

	t.Cleanup(srv.Close)
	w := worker.New(n.c, "orders", worker.Options{Identity: "worker-a7", LeaseTTL: 3 * time.Second})
	w.RegisterWorkflowWithName(orderWorkflow, "Order")
	w.RegisterWorkflowWithName(shipWorkflow, "Ship")
	w.RegisterWorkflowWithName(invoiceWorkflow, "Invoice")
	w.RegisterActivityWithName(reserveActivity, "Reserve")
	w.RegisterActivityWithName(labelActivity, "Label")
	w.RegisterActivityWithName(notifyActivity, "Notify")
	w.RegisterWorkflowWithName(paymentWorkflow, "Payment")
	w.RegisterActivityWithName(chargeActivity, "Charge")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return n
}

// signInAs signs the browser out, then in with token, and opens path.
func signInAs(t *testing.T, ctx context.Context, n *node, token, path, waitFor string) {
	t.Helper()
	run(t, ctx, "sign out", click("#signout"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	run(t, ctx, "sign in again",
		typeInto("#token", token),
		click("#signin"),
		chromedp.WaitVisible("#role", chromedp.ByQuery),
		chromedp.Navigate(n.url+path),
		chromedp.WaitVisible(waitFor, chromedp.ByQuery))
}

func (n *node) start(t *testing.T, id, typ, queue string, args ...any) {
	t.Helper()
	if _, err := n.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue}, typ, args...); err != nil {
		t.Fatal(err)
	}
}

// await waits until the run of workflow id is in status s.
func (n *node) await(t *testing.T, id string, s engine.Status) *engine.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		changed := n.e.Committed()
		j, err := n.e.Describe(context.Background(), engine.Target{WorkflowID: id})
		if err == nil && j.Status == s {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become %s (%v, %v)", id, s, j, err)
		}
		select {
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

// TestBrowserWorkflows signs in, lists and filters the runs, follows one
// from the list to its page, signals it, and sees it change state live;
// then cancels one run and terminates another from their pages.
func TestBrowserWorkflows(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	notifyGate = make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(notifyGate)
		}
	}()
	n.start(t, "order-1001", "Order", "orders", order{SKU: "A-1", Qty: 2, Customer: "ada@example.com"})
	n.start(t, "order-1002", "Order", "orders", order{SKU: "B-7", Qty: 1, Customer: "bob@example.com"})
	n.start(t, "invoice-77", "Invoice", "orders", 77)
	for i := 1; i <= 2; i++ {
		n.start(t, fmt.Sprintf("nightly-report-%d", i), "NightlyReport", "batch", map[string]any{"day": fmt.Sprintf("2026-11-0%d", i)})
	}
	n.await(t, "order-1001", engine.StatusWaiting)
	n.await(t, "order-1002", engine.StatusWaiting)
	n.await(t, "invoice-77", engine.StatusWaiting)

	// Signing in: every page asks for the token first.
	run(t, ctx, "open the UI", chromedp.Navigate(n.url+"/ui/"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	shoot(t, ctx, "ui-signin")
	run(t, ctx, "sign in",
		typeInto("#token", browserToken),
		click("#signin"),
		chromedp.WaitVisible("#runs", chromedp.ByQuery))
	list := text(t, ctx, "#runs")
	for _, want := range []string{"order-1001", "order-1002", "invoice-77", "nightly-report-1", "Ship", "@activity:Print", "Waiting", "Completed", "Queued"} {
		if !strings.Contains(list, want) {
			t.Errorf("the workflow list lacks %q:\n%s", want, list)
		}
	}
	shoot(t, ctx, "ui-workflows")

	// Filtering: the form's fields and the query box, in one language.
	run(t, ctx, "filter",
		choose("#f-status", "Waiting"),
		typeInto("#f-q", "type=Order,Invoice id!=order-1002"),
		click("#filter"),
		chromedp.WaitVisible("#cli-query", chromedp.ByQuery))
	if got, want := text(t, ctx, "#cli-query"), "heddle workflow list --query 'status=Waiting type=Order,Invoice id!=order-1002'"; got != want {
		t.Errorf("the filter's CLI form: %q, want %q", got, want)
	}
	var ids []string
	run(t, ctx, "filtered rows", chromedp.Evaluate(`[...document.querySelectorAll('#runs td.id')].map(td => td.textContent)`, &ids))
	if strings.Join(ids, ",") != "invoice-77,order-1001" {
		t.Errorf("the filtered list holds %v, want invoice-77 and order-1001, newest first", ids)
	}
	run(t, ctx, "a query that is not in the language",
		typeInto("#f-q", `WorkflowTyp = "Order"`),
		click("#filter"),
		chromedp.WaitVisible("#query-error", chromedp.ByQuery))
	if msg := text(t, ctx, "#query-error"); !strings.Contains(msg, `At column 1, at "WorkflowTyp": unknown field "WorkflowTyp"`) {
		t.Errorf("the query error says %q", msg)
	}

	// From the list to the run.
	run(t, ctx, "follow order-1001",
		chromedp.Navigate(n.url+"/ui/workflows?q=id%3Dorder-1001"),
		click(`#runs td.id a`),
		chromedp.WaitVisible("#run-status", chromedp.ByQuery))
	if s := text(t, ctx, "#run-status"); s != "Waiting" {
		t.Errorf("order-1001 shows %q, want Waiting", s)
	}
	pending := text(t, ctx, "#pending")
	for _, want := range []string{"Waits for:", "signal", "timer", "fires"} {
		if !strings.Contains(pending, want) {
			t.Errorf("the pending steps lack %q:\n%s", want, pending)
		}
	}
	linked := text(t, ctx, "#linked")
	if !strings.Contains(linked, "Ship") || !strings.Contains(linked, "Completed") {
		t.Errorf("the children lack the Ship child:\n%s", linked)
	}
	timeline := text(t, ctx, "#timeline")
	for _, want := range []string{"job_created", "activity_attempt_failed", "inventory service busy", "activity_completed", "child_scheduled", "child_completed", "timer_scheduled", "job_waiting"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	if in := text(t, ctx, "#input"); !strings.Contains(in, `"customer": "ada@example.com"`) {
		t.Errorf("the input is not decoded JSON: %s", in)
	}
	shoot(t, ctx, "ui-run-waiting")

	// The parent and child links go both ways.
	run(t, ctx, "to the child", click("#linked a.child-link"), chromedp.WaitVisible("#parent", chromedp.ByQuery))
	if p := text(t, ctx, "#parent"); !strings.Contains(p, "order-1001") {
		t.Errorf("the child's parent link says %q", p)
	}
	run(t, ctx, "back to the parent", click("#parent a"), chromedp.WaitVisible("#signal-form", chromedp.ByQuery))

	// Signal: the run wakes and runs Notify, which the test holds.
	run(t, ctx, "send the approve signal",
		typeInto("#signal-name", "approve"),
		typeInto("#signal-value", `"ada"`),
		click("#signal"),
		chromedp.WaitVisible("#flash", chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); f != "Signal sent." {
		t.Errorf("flash %q after the signal", f)
	}
	n.await(t, "order-1001", engine.StatusRunning)
	run(t, ctx, "the page shows the run Running",
		chromedp.WaitVisible(`#run-status[data-status="Running"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#task", chromedp.ByQuery))
	if task := text(t, ctx, "#task"); !strings.Contains(task, "worker-a7") {
		t.Errorf("the workflow task names no worker: %q", task)
	}
	shoot(t, ctx, "ui-run-running")
	// The page updates itself: mark this document, let the run end, and
	// see the same document show it.
	var marked bool
	run(t, ctx, "mark the page", chromedp.Evaluate(`window.heddleTestMark = true`, &marked))
	close(notifyGate)
	released = true
	n.await(t, "order-1001", engine.StatusCompleted)
	run(t, ctx, "the page shows the run Completed without a reload",
		chromedp.WaitVisible(`#run-status[data-status="Completed"]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.heddleTestMark === true`, &marked))
	if !marked {
		t.Error("the page was reloaded instead of refreshed in place")
	}
	if out := text(t, ctx, "#outcome"); !strings.Contains(out, "approved by ada") || !strings.Contains(out, "1Z999A-1") {
		t.Errorf("the result: %s", out)
	}
	if strings.Contains(text(t, ctx, "main"), "Act on this run") {
		t.Error("a completed run still offers its buttons")
	}
	shoot(t, ctx, "ui-run-completed")

	// Cancel: the workflow's code sees it and ends as Cancelled.
	j := n.await(t, "order-1002", engine.StatusWaiting)
	run(t, ctx, "request cancel of order-1002",
		chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, j.ID)),
		chromedp.WaitVisible("#cancel", chromedp.ByQuery),
		typeInto(`#cancel-form input[name="reason"]`, "customer changed their mind"),
		click("#cancel"),
		chromedp.WaitVisible("#flash", chromedp.ByQuery),
		chromedp.WaitVisible(`#run-status[data-status="Cancelled"]`, chromedp.ByQuery))
	if tl := text(t, ctx, "#timeline"); !strings.Contains(tl, "cancel_requested") || !strings.Contains(tl, "customer changed their mind") {
		t.Errorf("the timeline lacks the cancel request:\n%s", tl)
	}

	// Terminate: a run no worker serves ends at once.
	j = n.await(t, "nightly-report-2", engine.StatusQueued)
	run(t, ctx, "terminate nightly-report-2",
		chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, j.ID)),
		chromedp.WaitVisible("#terminate", chromedp.ByQuery),
		click("#terminate"),
		chromedp.WaitVisible(`#run-status[data-status="Terminated"]`, chromedp.ByQuery))
	if got := n.await(t, "nightly-report-2", engine.StatusTerminated); got.ClosedMS == 0 {
		t.Error("the terminated run has no closing time")
	}

	// The remote activity of invoice-77 waits on a queue no worker serves.
	j = n.await(t, "invoice-77", engine.StatusWaiting)
	run(t, ctx, "open invoice-77", chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, j.ID)), chromedp.WaitVisible("#pending-steps", chromedp.ByQuery))
	if p := text(t, ctx, "#pending-steps"); !strings.Contains(p, "Print") || !strings.Contains(p, "Queued") {
		t.Errorf("invoice-77's pending activity: %s", p)
	}

	// The buttons follow the role: a reader gets none and is told why, a
	// client all but terminate.
	invoice := fmt.Sprintf("/ui/runs/%d", j.ID)
	if s := text(t, ctx, "#role"); s != "admin" {
		t.Errorf("the header names the role %q, want admin", s)
	}
	signInAs(t, ctx, n, readerToken, invoice, "#no-actions")
	if s := text(t, ctx, "#role"); s != "reader" {
		t.Errorf("the header names the role %q, want reader", s)
	}
	if s := text(t, ctx, "#no-actions"); !strings.Contains(s, "The reader role may not act on runs") {
		t.Errorf("a reader's run page says %q", s)
	}
	var forms int
	run(t, ctx, "count the forms", chromedp.Evaluate(`document.querySelectorAll('#actions form').length`, &forms))
	if forms != 0 {
		t.Errorf("a reader's run page has %d action forms", forms)
	}
	shoot(t, ctx, "ui-run-reader")
	signInAs(t, ctx, n, clientToken, invoice, "#cancel-form")
	var ids2 []string
	run(t, ctx, "the client's forms", chromedp.Evaluate(`[...document.querySelectorAll('#actions form')].map(f => f.id)`, &ids2))
	if strings.Join(ids2, ",") != "signal-form,cancel-form,pause-form" {
		t.Errorf("a client's run page has the forms %v, want signal, cancel and pause", ids2)
	}
	signInAs(t, ctx, n, browserToken, invoice, "#terminate-form")

	run(t, ctx, "sign out", click("#signout"), chromedp.WaitVisible("#token", chromedp.ByQuery))
}

// TestBrowserCluster shows the cluster page of a three-node Raft cluster,
// each node serving its API and the UI on loopback.
func TestBrowserCluster(t *testing.T) {
	ctx := browser(t)
	nodes, urls := uiCluster(t)
	// Some work, so that the indexes move.
	c := client.New(nodes["n1"].Engine())
	for i := range 5 {
		if _, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("job-%d", i), TaskQueue: "q"}, "T"); err != nil {
			t.Fatal(err)
		}
	}
	// Ask a follower: it shows every member, each as it answers itself,
	// all ready once they caught up.
	run(t, ctx, "open the cluster page of n2", chromedp.Navigate(urls["n2"]+"/ui/cluster"), chromedp.WaitVisible("#members", chromedp.ByQuery))
	deadline := time.Now().Add(30 * time.Second)
	for {
		members := text(t, ctx, "#members")
		if strings.Count(members, "not ready") == 0 && strings.Count(members, "ready") == 3 && strings.Count(members, "Follower") == 2 && strings.Contains(members, "Leader") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members never all showed ready:\n%s", members)
		}
		time.Sleep(200 * time.Millisecond)
		run(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible("#members", chromedp.ByQuery))
	}
	if s := text(t, ctx, "#node-id"); s != "n2 (Follower)" {
		t.Errorf("the page of n2 says it is %q", s)
	}
	if s := text(t, ctx, "#leader"); !strings.HasPrefix(s, "n1 at ") {
		t.Errorf("the leader is %q", s)
	}
	shoot(t, ctx, "ui-cluster")
}
