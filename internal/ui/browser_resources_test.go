package ui

// The browser test of the Resources page and of the run page's step
// states; browser_test.go says how these tests find Chromium and where
// their screenshots go.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
)

// leaseChrome registers resource chrome-1 on n and gives its one unit to a
// step of a run of its own, on a queue no worker serves: worker-b3 claims
// the run, leases the step and heartbeats, as a worker running an activity
// that needs a browser does. A second run's step queues for the unit.
func leaseChrome(t *testing.T, n *node) (holder, waiter engine.JobID) {
	t.Helper()
	ctx := context.Background()
	if _, err := n.e.AddResource(ctx, engine.AddResource{ID: "chrome-1", Capabilities: []string{"browser"}, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	lease := func(wf string) (engine.LeaseRef, *engine.StepResult) {
		if _, err := n.e.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: "Scrape", Queue: "scrape-" + wf}); err != nil {
			t.Fatal(err)
		}
		// Leases far longer than the test: the scheduler must not end them.
		jobs, err := n.e.Claim(ctx, engine.Claim{Queue: "scrape-" + wf, Owner: "worker-b3", Max: 1, LeaseMS: 3_600_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim %s: %v %v", wf, jobs, err)
		}
		ref := jobs[0].Lease()
		r, err := n.e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "FetchPage", LeaseMS: 3_600_000, Capabilities: []string{"browser"}})
		if err != nil {
			t.Fatal(err)
		}
		return ref, r
	}
	ref, r := lease("scrape-1")
	if !r.Granted {
		t.Fatalf("scrape-1 was not leased chrome-1: %+v", r)
	}
	if _, err := n.e.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 3_600_000}); err != nil {
		t.Fatal(err)
	}
	wref, r := lease("scrape-2")
	if !r.Queued {
		t.Fatalf("scrape-2 did not queue: %+v", r)
	}
	return ref.Job, wref.Job
}

// TestBrowserResources opens the Resources page with a pool holding a
// lease and a step waiting, follows the lease to its run, whose page shows
// the step RUNNING on its worker, and drains and undrains the resource.
func TestBrowserResources(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	holder, waiter := leaseChrome(t, n)

	run(t, ctx, "open the resources page",
		chromedp.Navigate(n.url+"/ui/resources"),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		typeInto("#token", browserToken),
		click("#signin"),
		chromedp.WaitVisible("#role", chromedp.ByQuery),
		chromedp.Navigate(n.url+"/ui/resources"),
		chromedp.WaitVisible("#resources", chromedp.ByQuery))
	lease := text(t, ctx, fmt.Sprintf(`tr.lease[data-job="%d"]`, holder))
	for _, want := range []string{"step 1", "FetchPage", "RUNNING", "worker-b3"} {
		if !strings.Contains(lease, want) {
			t.Errorf("the lease row lacks %q: %q", want, lease)
		}
	}
	if s := text(t, ctx, `tr[data-pool="browser"]`); !strings.Contains(s, "1/1") {
		t.Errorf("the browser pool's occupancy: %q", s)
	}
	if s := text(t, ctx, fmt.Sprintf(`tr.waiter[data-job="%d"]`, waiter)); !strings.Contains(s, "browser") {
		t.Errorf("the waiter row: %q", s)
	}
	if s := text(t, ctx, "#drained"); s != "none" {
		t.Errorf("drained: %q", s)
	}
	shoot(t, ctx, "ui-resources")

	// The lease leads to its run, whose page shows the step's engine state.
	run(t, ctx, "follow the lease to its run",
		click(fmt.Sprintf(`tr.lease[data-job="%d"] a`, holder)),
		chromedp.WaitVisible("#pending-steps", chromedp.ByQuery))
	row := `#pending-steps tr[data-step="1"]`
	if s := text(t, ctx, row+" td.step-state"); s != "RUNNING" {
		t.Errorf("the step's engine state: %q", s)
	}
	if s := text(t, ctx, row+" td.step-worker"); s != "worker-b3" {
		t.Errorf("the step's worker: %q", s)
	}
	if s := text(t, ctx, row+" td.step-attempt"); s != "1" {
		t.Errorf("the step's try: %q", s)
	}
	if s := text(t, ctx, row+" td.step-heartbeat"); !strings.Contains(s, "ago") {
		t.Errorf("the step's last heartbeat: %q", s)
	}
	shoot(t, ctx, "ui-run-steps")

	// Drain: the page says so, and the button turns to undrain.
	drained := `tr[data-resource="chrome-1"] td.res-state`
	run(t, ctx, "drain chrome-1",
		chromedp.Navigate(n.url+"/ui/resources"),
		chromedp.WaitVisible(`tr[data-resource="chrome-1"] button.drain`, chromedp.ByQuery),
		click(`tr[data-resource="chrome-1"] button.drain`),
		chromedp.WaitVisible(`tr[data-resource="chrome-1"] button.undrain`, chromedp.ByQuery))
	if s := text(t, ctx, drained); s != "drained" {
		t.Errorf("chrome-1 after the drain: %q", s)
	}
	if s := text(t, ctx, "#flash"); !strings.Contains(s, "chrome-1 drained") {
		t.Errorf("the flash after the drain: %q", s)
	}
	if rs, err := n.e.Resources(context.Background()); err != nil || !rs[0].Drained {
		t.Errorf("the engine's chrome-1 after the drain: %+v %v", rs, err)
	}
	shoot(t, ctx, "ui-resources-drained")
	run(t, ctx, "undrain chrome-1",
		click(`tr[data-resource="chrome-1"] button.undrain`),
		chromedp.WaitVisible(`tr[data-resource="chrome-1"] button.drain`, chromedp.ByQuery))
	if s := text(t, ctx, drained); s != "taking leases" {
		t.Errorf("chrome-1 after the undrain: %q", s)
	}

	// A reader sees the pool and no buttons.
	signInAs(t, ctx, n, readerToken, "/ui/resources", "#no-drain")
	var buttons int
	run(t, ctx, "count the drain buttons", chromedp.Evaluate(`document.querySelectorAll('form.drain-form').length`, &buttons))
	if buttons != 0 {
		t.Errorf("a reader sees %d drain buttons", buttons)
	}
}
