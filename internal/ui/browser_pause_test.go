package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
)

// TestBrowserPause pauses a waiting run from its page, sees a signal
// recorded while it is held, unpauses it and sees it finish; then pauses
// and unpauses one activity from the steps table of another run.
func TestBrowserPause(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	notifyGate = make(chan struct{})
	close(notifyGate) // Notify returns at once here
	n.start(t, "order-2001", "Order", "orders", order{SKU: "C-3", Qty: 1, Customer: "cy@example.com"})
	n.start(t, "invoice-88", "Invoice", "orders", 88)
	j := n.await(t, "order-2001", engine.StatusWaiting)
	inv := n.await(t, "invoice-88", engine.StatusWaiting)

	run(t, ctx, "sign in", chromedp.Navigate(n.url+"/ui/"), chromedp.WaitVisible("#token", chromedp.ByQuery),
		typeInto("#token", browserToken), click("#signin"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	runURL := fmt.Sprintf("%s/ui/runs/%d", n.url, j.ID)
	run(t, ctx, "pause order-2001",
		chromedp.Navigate(runURL),
		chromedp.WaitVisible("#pause", chromedp.ByQuery),
		typeInto(`#pause-form input[name="reason"]`, "checking the stock count"),
		click("#pause"),
		chromedp.WaitVisible("#run-paused", chromedp.ByQuery),
		chromedp.WaitVisible("#unpause", chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); !strings.HasPrefix(f, "Run paused") {
		t.Errorf("flash %q after the pause", f)
	}
	if p := text(t, ctx, "#pause-info"); !strings.Contains(p, "by ada: checking the stock count") {
		t.Errorf("the pause says %q", p)
	}
	if got := n.await(t, "order-2001", engine.StatusWaiting); got.Pause == nil || got.Pause.By != "ada" {
		t.Fatalf("the run after the button: %+v", got.Pause)
	}

	// A signal is recorded while the run is held: its wait ends, but no
	// worker takes it.
	run(t, ctx, "signal the paused run",
		typeInto("#signal-name", "approve"),
		typeInto("#signal-value", `"cy"`),
		click("#signal"),
		chromedp.WaitVisible(`#run-status[data-status="Queued"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#run-paused", chromedp.ByQuery))
	shoot(t, ctx, "ui-run-paused")
	if tl := text(t, ctx, "#timeline"); !strings.Contains(tl, "workflow_paused") || !strings.Contains(tl, "signal_received") {
		t.Errorf("the timeline of the paused run:\n%s", tl)
	}
	if list := func() string {
		run(t, ctx, "the list", chromedp.Navigate(n.url+"/ui/workflows?q=paused%3Dtrue"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
		return text(t, ctx, "#runs")
	}(); !strings.Contains(list, "order-2001") || !strings.Contains(list, "Paused") || strings.Contains(list, "invoice-88") {
		t.Errorf("the list of paused runs:\n%s", list)
	}
	run(t, ctx, "unpause order-2001",
		chromedp.Navigate(runURL),
		click("#unpause"),
		chromedp.WaitVisible(`#run-status[data-status="Completed"]`, chromedp.ByQuery))
	if out := text(t, ctx, "#outcome"); !strings.Contains(out, "approved by cy") {
		t.Errorf("the result after the unpause: %s", out)
	}

	// One activity: invoice-88's Print waits on a queue no worker serves.
	invURL := fmt.Sprintf("%s/ui/runs/%d", n.url, inv.ID)
	run(t, ctx, "pause the Print activity",
		chromedp.Navigate(invURL),
		chromedp.WaitVisible("#pending-steps .activity-pause", chromedp.ByQuery),
		click("#pending-steps .activity-pause"),
		chromedp.WaitVisible("#pending-steps .step-paused", chromedp.ByQuery),
		chromedp.WaitVisible("#pending-steps .activity-unpause", chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); !strings.HasPrefix(f, "Activity paused") {
		t.Errorf("flash %q after the activity's pause", f)
	}
	shoot(t, ctx, "ui-run-activity-paused")
	task, err := n.e.Describe(t.Context(), engine.Target{WorkflowID: fmt.Sprintf("invoice-88/%d/1", inv.ID)})
	if err != nil || task.Pause == nil {
		t.Fatalf("the Print activity's task after its pause: %+v, %v", task, err)
	}
	run(t, ctx, "unpause it",
		click("#pending-steps .activity-unpause"),
		chromedp.WaitVisible("#pending-steps .activity-pause", chromedp.ByQuery))
	if p := text(t, ctx, "#pending-steps"); strings.Contains(p, "paused") {
		t.Errorf("the step still shows a pause:\n%s", p)
	}
}
