package ui

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
)

// TestBrowserBatch approves three waiting orders at once: the workflow
// list, filtered to them, opens its Batch panel, a signal batch is asked
// for, the next page says how many runs match, the confirmation starts the
// batch, whose page follows it live to Completed; the orders complete, the
// Batches page lists the batch, and a client sees no Batch panel.
func TestBrowserBatch(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	notifyGate = make(chan struct{})
	close(notifyGate) // Notify returns at once
	for i := 1; i <= 3; i++ {
		n.start(t, fmt.Sprintf("order-b%d", i), "Order", "orders", order{SKU: fmt.Sprintf("B-%d", i), Qty: 1, Customer: "bulk@example.com"})
	}
	n.start(t, "order-other", "Order", "orders", order{SKU: "O-1", Qty: 1, Customer: "other@example.com"})
	for _, id := range []string{"order-b1", "order-b2", "order-b3", "order-other"} {
		n.await(t, id, engine.StatusWaiting)
	}
	list := n.url + "/ui/workflows?" + url.Values{"q": {`WorkflowType = "Order" AND WorkflowId STARTS_WITH "order-b"`}}.Encode()

	run(t, ctx, "sign in",
		chromedp.Navigate(n.url+"/ui/"),
		typeInto("#token", browserToken),
		click("#signin"),
		chromedp.WaitVisible("#runs", chromedp.ByQuery))
	run(t, ctx, "ask for a signal batch over the filtered list",
		chromedp.Navigate(list),
		chromedp.WaitVisible("#batch-panel", chromedp.ByQuery),
		click("#batch-panel summary"),
		chromedp.WaitVisible("#batch-form", chromedp.ByQuery),
		choose("#batch-op", "signal"),
		typeInto("#batch-signal-name", "approve"),
		typeInto("#batch-signal-value", `"ops"`),
		typeInto("#batch-reason", "bulk approval"))
	shoot(t, ctx, "ui-batch-panel")
	run(t, ctx, "review the batch", click("#batch-start"), chromedp.WaitVisible("#batch-matched", chromedp.ByQuery))
	if m := text(t, ctx, "#batch-matched"); !strings.Contains(m, "3 runs match") || !strings.Contains(m, "signal") {
		t.Errorf("the confirmation says %q", m)
	}
	shoot(t, ctx, "ui-batch-confirm")
	run(t, ctx, "confirm, and follow the batch to its end",
		click("#batch-confirm"),
		chromedp.WaitVisible("#batch-id", chromedp.ByQuery),
		chromedp.WaitVisible(`#batch-state[data-state="Completed"]`, chromedp.ByQuery))
	if p := text(t, ctx, "#batch-progress"); !strings.Contains(p, "3 of 3 done, 0 failed") {
		t.Errorf("the batch's progress: %q", p)
	}
	shoot(t, ctx, "ui-batch")
	for i := 1; i <= 3; i++ {
		j := n.await(t, fmt.Sprintf("order-b%d", i), engine.StatusCompleted)
		if j.Status != engine.StatusCompleted {
			t.Fatalf("order-b%d: %s", i, j.Status)
		}
	}
	if j := n.await(t, "order-other", engine.StatusWaiting); j.Status != engine.StatusWaiting {
		t.Fatalf("the order the filter leaves out: %s", j.Status)
	}

	run(t, ctx, "the Batches page", chromedp.Navigate(n.url+"/ui/batches"), chromedp.WaitVisible("#batches tr[data-batch]", chromedp.ByQuery))
	if rows := text(t, ctx, "#batches"); !strings.Contains(rows, "signal") || !strings.Contains(rows, "Completed") || !strings.Contains(rows, "ada") {
		t.Errorf("the Batches page:\n%s", rows)
	}
	shoot(t, ctx, "ui-batches")

	signInAs(t, ctx, n, clientToken, "/ui/workflows", "#runs")
	var none bool
	run(t, ctx, "a client's list", chromedp.Evaluate(`document.querySelector('#batch-panel') === null`, &none))
	if !none {
		t.Error("a client's workflow list shows the Batch panel")
	}
}
