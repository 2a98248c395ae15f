package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
)

// chainRuns makes workflow id "chain" continue as new twice (three runs,
// the last one Completed) on a queue no worker serves, and returns the
// runs' ids, oldest first.
func chainRuns(t *testing.T, n *node) []engine.JobID {
	t.Helper()
	ctx := context.Background()
	res, err := n.e.Create(ctx, engine.CreateJob{WorkflowID: "chain", Type: "Counter", Queue: "chains"})
	if err != nil {
		t.Fatal(err)
	}
	ids := []engine.JobID{res.Job}
	for i := range 3 {
		ref := holdRun(t, n.e, "chains")
		if i == 2 {
			if _, err := n.e.Complete(ctx, engine.Complete{LeaseRef: *ref, Result: []byte("3")}); err != nil {
				t.Fatal(err)
			}
			break
		}
		next, err := n.e.ContinueAsNew(ctx, engine.ContinueAsNew{LeaseRef: *ref})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, next.Job)
	}
	return ids
}

// rowIDs are the workflow ids of the list's rows, top to bottom.
func rowIDs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var ids []string
	run(t, ctx, "the rows", chromedp.Evaluate(`[...document.querySelectorAll('#runs td.id')].map(td => td.textContent)`, &ids))
	return ids
}

// TestBrowserListSortAndPages: the workflow list in Chromium comes newest
// first, pages forward and back by its own links, sorts oldest first and
// by closing time from the form, and shows a continue-as-new chain as
// such; the run page links the runs of the chain both ways and lists the
// runs of its workflow id.
func TestBrowserListSortAndPages(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	for i := 1; i <= 30; i++ {
		if _, err := n.e.Create(context.Background(), engine.CreateJob{WorkflowID: fmt.Sprintf("bulk-%02d", i), Type: "Bulk", Queue: "bulk"}); err != nil {
			t.Fatal(err)
		}
	}
	chain := chainRuns(t, n)

	run(t, ctx, "open the UI", chromedp.Navigate(n.url+"/ui/workflows"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	run(t, ctx, "sign in", typeInto("#token", browserToken), click("#signin"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	first := rowIDs(t, ctx)
	if len(first) != 25 || strings.Join(first[:4], ",") != "chain,chain,chain,bulk-30" || first[24] != "bulk-09" {
		t.Fatalf("the first page, newest first: %v", first)
	}
	if s := text(t, ctx, "#runs tbody tr:nth-child(2) td:nth-child(5)"); !strings.Contains(s, "ContinuedAsNew") || !strings.Contains(s, fmt.Sprintf("→ %d", chain[2])) {
		t.Errorf("the chain's middle run shows %q, want ContinuedAsNew → %d", s, chain[2])
	}
	var prev []string
	run(t, ctx, "no way back from the first page", chromedp.Evaluate(`[...document.querySelectorAll('#prev-page,#first-page')].map(a => a.id)`, &prev))
	if len(prev) != 0 {
		t.Errorf("the first page links %v", prev)
	}
	shoot(t, ctx, "ui-workflows-newest")

	run(t, ctx, "next page", click("#next-page"), chromedp.WaitVisible("#prev-page", chromedp.ByQuery))
	if got := rowIDs(t, ctx); strings.Join(got, ",") != "bulk-08,bulk-07,bulk-06,bulk-05,bulk-04,bulk-03,bulk-02,bulk-01" {
		t.Errorf("the second page: %v", got)
	}
	run(t, ctx, "previous page", click("#prev-page"), chromedp.WaitVisible("#next-page", chromedp.ByQuery))
	if got := rowIDs(t, ctx); strings.Join(got, ",") != strings.Join(first, ",") {
		t.Errorf("back to the first page: %v", got)
	}

	run(t, ctx, "oldest first, 25 a page",
		choose("#f-sort", "start_asc"),
		typeInto("#f-q", `WorkflowType = "Bulk"`),
		click("#filter"),
		chromedp.WaitVisible("#cli-query", chromedp.ByQuery))
	if got := rowIDs(t, ctx); len(got) != 25 || got[0] != "bulk-01" || got[24] != "bulk-25" {
		t.Errorf("oldest first: %v", got)
	}
	if got, want := text(t, ctx, "#cli-query"), `heddle workflow list --query 'WorkflowType = "Bulk"' --order start_asc`; got != want {
		t.Errorf("the CLI line: %q, want %q", got, want)
	}
	run(t, ctx, "next page, oldest first", click("#next-page"), chromedp.WaitVisible("#prev-page", chromedp.ByQuery))
	if got := rowIDs(t, ctx); strings.Join(got, ",") != "bulk-26,bulk-27,bulk-28,bulk-29,bulk-30" {
		t.Errorf("the second page, oldest first: %v", got)
	}

	run(t, ctx, "closed, newest first",
		chromedp.Navigate(n.url+"/ui/workflows?sort=close_desc"),
		chromedp.WaitVisible("#runs", chromedp.ByQuery))
	if got := rowIDs(t, ctx); strings.Join(got[:4], ",") != "chain,chain,chain,bulk-30" {
		t.Errorf("the runs that ended come first: %v", got)
	}
	if s := text(t, ctx, "#order-note"); !strings.Contains(s, "Runs that ended are listed first, the latest to end first") {
		t.Errorf("the order's note: %q", s)
	}
	shoot(t, ctx, "ui-workflows-closed-first")

	// The chain's middle run: continued as new, linked both ways.
	run(t, ctx, "the middle run", chromedp.Navigate(fmt.Sprintf("%s/ui/runs/%d", n.url, chain[1])), chromedp.WaitVisible("#next-run", chromedp.ByQuery))
	if s := text(t, ctx, "#next-run"); s != fmt.Sprintf("Continued as new → run %d", chain[2]) {
		t.Errorf("the middle run says %q", s)
	}
	if s := text(t, ctx, "#run-status"); s != "Continued as new" {
		t.Errorf("the middle run's status: %q", s)
	}
	if s := text(t, ctx, "#runs-of-id"); !strings.Contains(s, "(this run)") || strings.Count(s, "Continued as new → run") != 2 || !strings.Contains(s, "Completed") {
		t.Errorf("the runs of the id:\n%s", s)
	}
	shoot(t, ctx, "ui-run-chain")
	run(t, ctx, "to the next run", click("#next-run a"), chromedp.WaitVisible("#prev-run", chromedp.ByQuery))
	if s := text(t, ctx, "#run-status"); s != "Completed" {
		t.Errorf("the last run's status: %q", s)
	}
	run(t, ctx, "back to the previous run", click("#prev-run"), chromedp.WaitVisible("#next-run", chromedp.ByQuery))
	if s := text(t, ctx, ".crumbs"); !strings.Contains(s, fmt.Sprint(chain[1])) {
		t.Errorf("back at %q, want run %d", s, chain[1])
	}
	run(t, ctx, "every run of the id", click("#all-runs"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	if got := rowIDs(t, ctx); strings.Join(got, ",") != "chain,chain,chain" {
		t.Errorf("the runs of chain: %v", got)
	}
}
