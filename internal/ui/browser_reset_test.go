package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
)

// TestBrowserReset resets an order waiting for its approval from its page
// (to its last completed turn), follows the browser to the new run, which
// replays the history and waits for the approval again, approves it there
// so that it completes, and follows the link back to the run it replaced,
// which ended Terminated.
func TestBrowserReset(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	notifyGate = make(chan struct{})
	close(notifyGate) // Notify returns at once
	n.start(t, "order-reset", "Order", "orders", order{SKU: "C-3", Qty: 1, Customer: "cy@example.com"})
	base := n.await(t, "order-reset", engine.StatusWaiting)

	run(t, ctx, "sign in",
		chromedp.Navigate(n.url+"/ui/"),
		typeInto("#token", browserToken),
		click("#signin"),
		chromedp.WaitVisible("#runs", chromedp.ByQuery))
	run(t, ctx, "open the run and reset it to its last turn",
		chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, base.ID)),
		chromedp.WaitVisible("#reset-form", chromedp.ByQuery),
		choose("#reset-point", "LastWorkflowTask"),
		typeInto("#reset-reason", "approval went to the wrong person"),
		click("#reset"),
		chromedp.WaitVisible("#reset-from", chromedp.ByQuery),
		chromedp.WaitVisible(`#run-status[data-status="Waiting"]`, chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); !strings.Contains(f, "Reset: this run goes on") {
		t.Errorf("flash %q after the reset", f)
	}
	if s := text(t, ctx, "#reset-from"); !strings.Contains(s, fmt.Sprintf("run %d", base.ID)) {
		t.Errorf("the new run's link back: %q", s)
	}
	if tl := text(t, ctx, "#timeline"); !strings.Contains(tl, "workflow_reset") || !strings.Contains(tl, "approval went to the wrong person") {
		t.Errorf("the new run's timeline lacks the reset:\n%s", tl)
	}
	cur := n.await(t, "order-reset", engine.StatusWaiting)
	if cur.ID == base.ID || cur.ResetBaseRunID != base.ID {
		t.Fatalf("the workflow id's run after the reset: %+v", cur)
	}
	shoot(t, ctx, "ui-run-reset")

	run(t, ctx, "approve the new run",
		typeInto("#signal-name", "approve"),
		typeInto("#signal-value", `"cy"`),
		click("#signal"),
		chromedp.WaitVisible(`#run-status[data-status="Completed"]`, chromedp.ByQuery))
	if out := text(t, ctx, "#outcome"); !strings.Contains(out, "approved by cy") || !strings.Contains(out, "reservation R-C-3-1") {
		t.Errorf("the reset run's result: %s", out)
	}

	run(t, ctx, "back to the run it replaced",
		click("#reset-from a"),
		chromedp.WaitVisible("#reset-to", chromedp.ByQuery))
	if s := text(t, ctx, "#run-status"); s != "Terminated" {
		t.Errorf("the replaced run shows %q, want Terminated", s)
	}
	if s := text(t, ctx, "#reset-to"); !strings.Contains(s, fmt.Sprintf("run %d", cur.ID)) {
		t.Errorf("the replaced run's link on: %q", s)
	}
	shoot(t, ctx, "ui-run-reset-base")
}
