package ui

// The browser test of the Task queues pages and of why a Queued run waits;
// browser_test.go says how these tests find Chromium and where their
// screenshots go.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
)

// TestBrowserTaskQueues opens the Task queues page with the orders queue,
// whose worker polls, and a queue nobody polls; follows orders to its
// page, which lists the worker with its types and the run of a misspelled
// type waiting with its reason; and opens that run's page and the page of
// the run on the unpolled queue, each saying why it waits.
func TestBrowserTaskQueues(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	n.start(t, "typo-1", "Ordr", "orders")
	n.start(t, "lost-1", "Order", "ordres")
	typo := n.await(t, "typo-1", engine.StatusQueued)

	run(t, ctx, "open the task queues page",
		chromedp.Navigate(n.url+"/ui/task-queues"),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		typeInto("#token", readerToken),
		click("#signin"),
		chromedp.WaitVisible("#role", chromedp.ByQuery),
		chromedp.Navigate(n.url+"/ui/task-queues"),
		chromedp.WaitVisible("#task-queues", chromedp.ByQuery))
	if s := text(t, ctx, `tr[data-queue="orders"] td.pollers`); s != "1" {
		t.Errorf("the pollers of orders: %q", s)
	}
	if s := text(t, ctx, `tr[data-queue="ordres"] td.pollers`); !strings.Contains(s, "none") {
		t.Errorf("the pollers of ordres: %q", s)
	}
	if s := text(t, ctx, `tr[data-queue="ordres"] td.backlog`); s != "1" {
		t.Errorf("the backlog of ordres: %q", s)
	}
	shoot(t, ctx, "ui-task-queues")

	run(t, ctx, "follow orders to its page",
		click(`tr[data-queue="orders"] a`),
		chromedp.WaitVisible("#pollers", chromedp.ByQuery))
	poller := text(t, ctx, `tr.poller[data-identity="worker-a7"]`)
	for _, want := range []string{"Order", "Ship", "Invoice", "Reserve", "Label", "Notify", "polling"} {
		if !strings.Contains(poller, want) {
			t.Errorf("the poller row lacks %q: %q", want, poller)
		}
	}
	waiting := text(t, ctx, fmt.Sprintf(`tr.waiting-run[data-job="%d"] td.reason`, typo.ID))
	if !strings.Contains(waiting, `no poller of task queue "orders" serves workflow type "Ordr"`) {
		t.Errorf("the waiting run's reason: %q", waiting)
	}
	shoot(t, ctx, "ui-task-queue")

	run(t, ctx, "follow the waiting run to its page",
		click(fmt.Sprintf(`tr.waiting-run[data-job="%d"] a`, typo.ID)),
		chromedp.WaitVisible("#queued-reason", chromedp.ByQuery))
	if s := text(t, ctx, "#queued-reason"); !strings.Contains(s, `did you mean "Order"?`) {
		t.Errorf("the misspelled run's reason: %q", s)
	}
	shoot(t, ctx, "ui-run-queued-reason")

	lost := n.await(t, "lost-1", engine.StatusQueued)
	run(t, ctx, "open the run on the queue nobody polls",
		chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, lost.ID)),
		chromedp.WaitVisible("#queued-reason", chromedp.ByQuery))
	s := text(t, ctx, "#queued-reason")
	for _, want := range []string{`no worker has polled task queue "ordres" in the last 5m`, "queues with pollers: orders", `did you mean "orders"?`} {
		if !strings.Contains(s, want) {
			t.Errorf("the unpolled queue's run lacks %q: %q", want, s)
		}
	}
	run(t, ctx, "follow its queue link", click("#queued-reason a"), chromedp.WaitVisible("#no-pollers", chromedp.ByQuery))
	if s := text(t, ctx, "#queue-name"); s != "ordres" {
		t.Errorf("the queue page reached: %q", s)
	}
}
