package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The workflows of the run-page forms: a delivery that asks a person to
// confirm its address (and answers a query of its progress), and a
// payment whose activity panics.

// confirmActivity needs a person on its first try and reports the answer
// after.
func confirmActivity(ctx context.Context, address string) (string, error) {
	info := activity.GetInfo(ctx)
	if info.Answer == nil {
		return "", activity.NewNeedsUserError("deliver to " + address + "?")
	}
	return fmt.Sprintf("delivering to %s: %s", address, info.Answer), nil
}

func deliveryWorkflow(ctx workflow.Context, address string) (string, error) {
	progress := "asking the customer"
	if err := workflow.SetQueryHandler(ctx, "progress", func() (string, error) { return progress, nil }); err != nil {
		return "", err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var s string
	err := workflow.ExecuteActivity(ctx, "Confirm", address).Get(ctx, &s)
	progress = "confirmed"
	return s, err
}

// chargeActivity panics: a bug in the activity's code.
func chargeActivity(_ context.Context, cents []int) (int, error) {
	return cents[len(cents)], nil // index out of range
}

func paymentWorkflow(ctx workflow.Context, cents []int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}})
	var n int
	err := workflow.ExecuteActivity(ctx, "Charge", cents).Get(ctx, &n)
	return n, err
}

// httpWorker starts a worker of queue deliveries that reaches the node
// through its HTTP API, as a worker process does: queries asked through
// the API (the UI's among them) reach the workers that poll it.
func (n *node) httpWorker(t *testing.T) {
	t.Helper()
	hc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{n.url}, Token: browserToken})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(client.New(hc), "deliveries", worker.Options{Identity: "worker-http", LeaseTTL: 3 * time.Second})
	w.RegisterWorkflowWithName(deliveryWorkflow, "Delivery")
	w.RegisterActivityWithName(confirmActivity, "Confirm")
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
}

// awaitStep waits until step of workflow id is in state s.
func (n *node) awaitStep(t *testing.T, id, step string, s engine.StepState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		changed := n.e.Committed()
		infos, err := n.e.QuerySteps(context.Background(), engine.StepsQuery{Target: engine.Target{WorkflowID: id}, Step: step})
		if err == nil && len(infos) == 1 && infos[0].State == s {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %s of %s did not become %s (%+v, %v)", step, id, s, infos, err)
		}
		select {
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

// TestBrowserRunForms works the run page's new forms and views in
// Chromium: a step waiting for a person is answered from its form and the
// run completes with the answer; a query and the stack trace are asked
// from the query form (the page then stops refreshing itself, and links
// back to the live one); the compact history shows an activity's two tries
// on one line beside the full history; a panic's stack shows as text; and
// a client gets the answer and query forms but no terminate or reset.
func TestBrowserRunForms(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	n.httpWorker(t)
	notifyGate = make(chan struct{})
	close(notifyGate)
	n.start(t, "delivery-9", "Delivery", "deliveries", "12 Elm St")
	n.start(t, "order-2001", "Order", "orders", order{SKU: "D-4", Qty: 1, Customer: "di@example.com"})
	n.start(t, "payment-5", "Payment", "orders", []int{100, 250, 75})
	n.awaitStep(t, "delivery-9", "1", engine.StepNeedsUser)
	delivery := n.await(t, "delivery-9", engine.StatusWaiting)
	orderRun := n.await(t, "order-2001", engine.StatusWaiting)
	payment := n.await(t, "payment-5", engine.StatusFailed)

	run(t, ctx, "sign in",
		chromedp.Navigate(n.url+"/ui/"),
		typeInto("#token", browserToken),
		click("#signin"),
		chromedp.WaitVisible("#runs", chromedp.ByQuery))

	// The query form: a query the code registered, then the stack trace.
	run(t, ctx, "open the delivery and ask its progress",
		chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, delivery.ID)),
		chromedp.WaitVisible("#answer-form-1", chromedp.ByQuery),
		typeInto("#query-name", "progress"),
		click("#query"),
		chromedp.WaitVisible("#query-result", chromedp.ByQuery))
	if s := text(t, ctx, "#query-result"); !strings.Contains(s, "asking the customer") {
		t.Errorf("the progress query answered %q", s)
	}
	var refresh string
	run(t, ctx, "the answer's page does not refresh", chromedp.AttributeValue("body", "data-refresh", &refresh, nil, chromedp.ByQuery))
	if refresh != "0" {
		t.Errorf("the page with a query's answer refreshes every %s ms", refresh)
	}
	run(t, ctx, "ask the stack trace", click("#stack-trace"), chromedp.WaitVisible("#query-stack", chromedp.ByQuery))
	stack := text(t, ctx, "#query-stack")
	for _, want := range []string{"coroutine root", "deliveryWorkflow", "browser_parity_test.go:"} {
		if !strings.Contains(stack, want) {
			t.Errorf("the stack trace lacks %q:\n%s", want, stack)
		}
	}
	shoot(t, ctx, "ui-run-stack-trace")
	run(t, ctx, "a query the code has not",
		typeInto("#query-name", "eta"),
		click("#query"),
		chromedp.WaitVisible("#query-error", chromedp.ByQuery))
	if s := text(t, ctx, "#query-error"); !strings.Contains(s, `The workflow has no query "eta"`) {
		t.Errorf("an unknown query says %q", s)
	}

	// The answer form: back on the live page, the step's question and its
	// form; the answer reaches the activity, and the run completes.
	run(t, ctx, "back to the live page", click("#live-page"), chromedp.WaitVisible("#answer-form-1", chromedp.ByQuery))
	if s := text(t, ctx, `#pending-steps tr[data-step="1"]`); !strings.Contains(s, "deliver to 12 Elm St?") || !strings.Contains(s, "NEEDS_USER") {
		t.Errorf("the step waiting for a person shows %q", s)
	}
	shoot(t, ctx, "ui-run-answer")
	run(t, ctx, "answer the step",
		typeInto("#answer-1", "yes, at the back door"),
		click("#answer-1-send"),
		chromedp.WaitVisible("#flash", chromedp.ByQuery),
		chromedp.WaitVisible(`#run-status[data-status="Completed"]`, chromedp.ByQuery))
	if s := text(t, ctx, "#outcome"); !strings.Contains(s, "delivering to 12 Elm St: yes, at the back door") {
		t.Errorf("the delivery's result: %s", s)
	}

	// The compact history beside the full one: Reserve failed once and
	// then completed, one line; no lease or wait events.
	run(t, ctx, "the order's compact history",
		chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, orderRun.ID)),
		chromedp.WaitVisible("#timeline", chromedp.ByQuery),
		click("#view-compact"),
		chromedp.WaitVisible("#compact", chromedp.ByQuery))
	compact := text(t, ctx, "#compact")
	for _, want := range []string{"run started", "activity Reserve", "completed after 2 tries", "child workflow Ship", "timer of step"} {
		if !strings.Contains(compact, want) {
			t.Errorf("the compact history lacks %q:\n%s", want, compact)
		}
	}
	for _, not := range []string{"job_leased", "job_waiting", "wait completed", "inventory service busy"} {
		if strings.Contains(compact, not) {
			t.Errorf("the compact history shows %q:\n%s", not, compact)
		}
	}
	if s := text(t, ctx, "#run-attempt"); !strings.HasPrefix(s, "1 (the run's try under its workflow retry policy; not retried)") {
		t.Errorf("the order's attempt: %q", s)
	}
	shoot(t, ctx, "ui-run-compact")
	run(t, ctx, "back to every event", click("#view-full"), chromedp.WaitVisible("#timeline", chromedp.ByQuery))
	if tl := text(t, ctx, "#timeline"); !strings.Contains(tl, "job_leased") || !strings.Contains(tl, "inventory service busy") {
		t.Errorf("the full history:\n%s", tl)
	}

	// A panic's stack, as text.
	run(t, ctx, "the failed payment",
		chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, payment.ID)),
		chromedp.WaitVisible("#outcome-failure", chromedp.ByQuery))
	failure := text(t, ctx, "#outcome-failure")
	for _, want := range []string{"index out of range", "caused by", "chargeActivity", "browser_parity_test.go:"} {
		if !strings.Contains(failure, want) {
			t.Errorf("the failure lacks %q:\n%s", want, failure)
		}
	}
	if strings.Contains(failure, `\n`) || strings.Contains(failure, `\t`) {
		t.Errorf("the stack shows escaped newlines:\n%s", failure)
	}
	var lines int
	run(t, ctx, "the stack's lines", chromedp.Evaluate(`document.querySelector('#outcome-failure pre.stack').textContent.split('\n').length`, &lines))
	if lines < 4 {
		t.Errorf("the stack trace has %d lines", lines)
	}
	shoot(t, ctx, "ui-run-panic")

	// A client: the query and answer forms, not terminate or reset.
	n.start(t, "delivery-10", "Delivery", "deliveries", "3 Oak Rd")
	n.awaitStep(t, "delivery-10", "1", engine.StepNeedsUser)
	second := n.await(t, "delivery-10", engine.StatusWaiting)
	signInAs(t, ctx, n, clientToken, fmt.Sprintf("/ui/runs/%d", second.ID), "#answer-form-1")
	var forms []string
	run(t, ctx, "the client's forms", chromedp.Evaluate(`[...document.querySelectorAll('main form[id]')].map(f => f.id)`, &forms))
	if got := strings.Join(forms, ","); got != "signal-form,cancel-form,pause-form,query-form,answer-form-1" {
		t.Errorf("a client's run page has the forms %s", got)
	}
	// A reader: none.
	signInAs(t, ctx, n, readerToken, fmt.Sprintf("/ui/runs/%d", second.ID), "#no-actions")
	run(t, ctx, "the reader's forms", chromedp.Evaluate(`[...document.querySelectorAll('main form')].map(f => f.id)`, &forms))
	if len(forms) != 0 {
		t.Errorf("a reader's run page has the forms %v", forms)
	}
}

// TestBrowserSchedules opens the Schedules page, a schedule's page, pauses
// it with a note and unpauses it, triggers it, follows the run it started
// and that run's link back to the schedule, and backfills the last three
// hours; a reader sees the schedule without its buttons.
func TestBrowserSchedules(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	if _, err := n.e.CreateSchedule(context.Background(), engine.CreateSchedule{ID: "nightly-report",
		Spec:   engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: time.Hour.Milliseconds()}}},
		Action: engine.ScheduleAction{Type: "NightlyReport", Queue: "batch"},
		Policy: engine.SchedulePolicy{Overlap: engine.OverlapAllowAll}}); err != nil {
		t.Fatal(err)
	}

	run(t, ctx, "sign in and open the schedules",
		chromedp.Navigate(n.url+"/ui/schedules"),
		typeInto("#token", browserToken),
		click("#signin"),
		chromedp.WaitVisible("#schedules", chromedp.ByQuery))
	if s := text(t, ctx, `#schedules tr[data-schedule="nightly-report"]`); !strings.Contains(s, "every 1h00m") || !strings.Contains(s, "active") {
		t.Errorf("the schedule's row: %q", s)
	}
	shoot(t, ctx, "ui-schedules")

	run(t, ctx, "open it and pause it",
		click(`#schedules a[href="/ui/schedules/nightly-report"]`),
		chromedp.WaitVisible("#pause-form", chromedp.ByQuery),
		typeInto("#pause-note", "the warehouse database is migrating"),
		click("#pause"),
		chromedp.WaitVisible(`#schedule-state[data-state="paused"]`, chromedp.ByQuery))
	if s := text(t, ctx, "#schedule-note"); s != "the warehouse database is migrating" {
		t.Errorf("the pause note shows %q", s)
	}
	run(t, ctx, "unpause it", click("#unpause"), chromedp.WaitVisible(`#schedule-state[data-state="active"]`, chromedp.ByQuery))

	run(t, ctx, "trigger it", click("#trigger"), chromedp.WaitVisible("#schedule-runs tr[data-job]", chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); !strings.HasPrefix(f, "Triggered") {
		t.Errorf("flash %q after the trigger", f)
	}
	run(t, ctx, "follow the run it started, and its link back",
		click("#schedule-runs tr[data-job] td.id a"),
		chromedp.WaitVisible("#schedule-link", chromedp.ByQuery))
	if s := text(t, ctx, "#schedule-link"); s != "nightly-report started this run" {
		t.Errorf("the run's schedule link says %q", s)
	}
	shoot(t, ctx, "ui-run-of-schedule")
	run(t, ctx, "back to the schedule", click("#schedule-link a"), chromedp.WaitVisible("#backfill-form", chromedp.ByQuery))

	run(t, ctx, "backfill the last three hours",
		typeInto("#backfill-start", "-3h"),
		typeInto("#backfill-end", "-1s"),
		click("#backfill"),
		chromedp.WaitVisible("#flash", chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); !strings.HasPrefix(f, "Backfilled") {
		t.Errorf("flash %q after the backfill", f)
	}
	var rows int
	run(t, ctx, "count the runs", chromedp.Evaluate(`document.querySelectorAll('#schedule-runs tr[data-job]').length`, &rows))
	if rows != 4 {
		t.Errorf("after a trigger and a backfill of three hours the schedule lists %d runs, want 4", rows)
	}
	shoot(t, ctx, "ui-schedule")

	signInAs(t, ctx, n, readerToken, "/ui/schedules/nightly-report", "#no-schedule-actions")
	var forms int
	run(t, ctx, "the reader's forms", chromedp.Evaluate(`document.querySelectorAll('#schedule-actions form').length`, &forms))
	if forms != 0 {
		t.Errorf("a reader's schedule page has %d forms", forms)
	}
}
