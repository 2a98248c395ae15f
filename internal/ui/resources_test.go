package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// seedPool registers a browser pool of one unit, leases it to a step of
// run "holder" (which heartbeats, so it runs on worker "w-holder"), and
// queues a step of run "waiter" behind it.
func seedPool(v *env) (holder, waiter engine.LeaseRef) {
	v.t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		v.t.Helper()
		if err != nil {
			v.t.Fatal(err)
		}
	}
	must(v.e.AddResource(ctx, engine.AddResource{ID: "chrome-1", Capabilities: []string{"browser"},
		Labels: map[string]string{"region": "eu"}, Capacity: 1}))
	must(v.e.AddResource(ctx, engine.AddResource{ID: "gpu-9", Capabilities: []string{"cuda"}, Capacity: 2}))
	claim := func(wf string) engine.LeaseRef {
		v.create(engine.CreateJob{WorkflowID: wf, Type: "Scrape", Queue: "q-" + wf})
		jobs, err := v.e.Claim(ctx, engine.Claim{Queue: "q-" + wf, Owner: "w-" + wf, Max: 1, LeaseMS: 600_000})
		if err != nil || len(jobs) != 1 {
			v.t.Fatalf("claim %s: %v %v", wf, jobs, err)
		}
		return jobs[0].Lease()
	}
	holder, waiter = claim("holder"), claim("waiter")
	must(v.e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: holder, Step: "1", Name: "FetchPage", LeaseMS: 30_000, Capabilities: []string{"browser"}}))
	v.clk.Advance(2 * time.Second)
	must(v.e.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: holder, Step: "1", StepAttempt: 1, LeaseMS: 600_000}))
	r, err := v.e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: waiter, Step: "1", Name: "FetchPage", LeaseMS: 30_000, Capabilities: []string{"browser"}})
	if err != nil || !r.Queued {
		v.t.Fatalf("the waiter was not queued: %+v %v", r, err)
	}
	return holder, waiter
}

// The page shows the pools' occupancy, each lease with the worker, state,
// heartbeat and expiry of the step holding it, and the waiter queue; an
// admin drains and undrains a resource with its buttons.
func TestResourcesPage(t *testing.T) {
	v := newEnv(t, envOptions{})
	holder, waiter := seedPool(v)
	v.clk.Advance(3 * time.Second)
	code, body, _ := v.get("/ui/resources")
	if code != http.StatusOK {
		t.Fatalf("HTTP %d:\n%s", code, body)
	}
	wantIn(t, "the resources page", body,
		`aria-current="page">Resources`,
		`<dt>Units</dt><dd id="units">3</dd>`, `<dt>Held</dt><dd id="held">1</dd>`, `<dt>Free</dt><dd id="free">2`,
		`<dt>Waiting steps</dt><dd id="waiting">1</dd>`, `<dd id="drained">none</dd>`,
		`<tr data-pool="browser">`, `<meter min="0" max="1" value="1"`, `<tr data-pool="cuda">`,
		`data-resource="chrome-1"`, `region=eu`,
		`<tr class="lease" data-job="`+itoa(holder.Job)+`" data-step="1">`,
		`<span class="badge st-running">RUNNING</span>`, `<td class="worker">w-holder</td>`,
		// Leased at t0, heartbeat 2 s later; the step lease runs 30 s from it.
		fmtTime(t0.UnixMilli()), `<td>3s ago</td>`, fmtTime(t0.Add(32*time.Second).UnixMilli()),
		`<tr class="waiter" data-job="`+itoa(waiter.Job)+`" data-step="1">`,
		`action="/ui/resources/drain"`, `class="drain warn">Drain</button>`)
	wantNotIn(t, "the resources page", body, "Not available yet.", `id="no-drain"`, "Undrain")

	// Drain, as the button does: back to the page, which says so.
	csrf := v.csrf("/ui/resources")
	code, _, loc := v.post("/ui/resources/drain", url.Values{csrfField: {csrf}, "id": {"chrome-1"}})
	if code != http.StatusSeeOther || loc != "/ui/resources?done=drain&id=chrome-1" {
		t.Fatalf("drain: HTTP %d to %q", code, loc)
	}
	rs, err := v.e.Resources(context.Background())
	if err != nil || len(rs) != 2 || !rs[0].Drained || rs[1].Drained {
		t.Fatalf("after the drain: %+v %v", rs, err)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the page after the drain", body, "Resource chrome-1 drained", `<dd id="drained">chrome-1</dd>`,
		`<span class="badge st-stopped">drained</span>`, `name="undrain" value="1"`, `class="undrain">Undrain</button>`,
		// The drained resource's lease goes on; its units are not free.
		`<td class="worker">w-holder</td>`, `<dt>Free</dt><dd id="free">2 (drained`)

	code, _, loc = v.post("/ui/resources/drain", url.Values{csrfField: {csrf}, "id": {"chrome-1"}, "undrain": {"1"}})
	if code != http.StatusSeeOther || loc != "/ui/resources?done=undrain&id=chrome-1" {
		t.Fatalf("undrain: HTTP %d to %q", code, loc)
	}
	if rs, _ := v.e.Resources(context.Background()); rs[0].Drained {
		t.Fatal("the undrain left chrome-1 drained")
	}

	// A resource that does not exist: the page, with the API's refusal.
	code, body, _ = v.post("/ui/resources/drain", url.Values{csrfField: {csrf}, "id": {"nope"}})
	if code != http.StatusNotFound {
		t.Errorf("draining an unknown resource: HTTP %d", code)
	}
	wantIn(t, "the page after a refused drain", body, `id="error"`, "Could not drain resource nope", `data-resource="chrome-1"`)
	// A form without the page's CSRF token changes nothing.
	if code, _, _ := v.post("/ui/resources/drain", url.Values{csrfField: {strings.Repeat("0", 32)}, "id": {"chrome-1"}}); code != http.StatusForbidden {
		t.Errorf("a forged drain: HTTP %d", code)
	}
	if rs, _ := v.e.Resources(context.Background()); rs[0].Drained {
		t.Error("a forged drain drained chrome-1")
	}
}

// A token that may not drain sees no buttons, and its form is refused.
func TestResourcesPageReader(t *testing.T) {
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) {
		return ForRole("client")
	}})
	seedPool(v)
	_, body, _ := v.get("/ui/resources")
	wantIn(t, "a client's resources page", body, `id="no-drain"`, "The client role may not drain resources", `data-resource="chrome-1"`)
	wantNotIn(t, "a client's resources page", body, `action="/ui/resources/drain"`)
	code, body, _ := v.post("/ui/resources/drain", url.Values{csrfField: {v.csrf("/ui/signin")}, "id": {"chrome-1"}})
	if code != http.StatusForbidden || !strings.Contains(body, "The client role may not drain resources.") {
		t.Errorf("a client's drain: HTTP %d", code)
	}
	if rs, _ := v.e.Resources(context.Background()); rs[0].Drained {
		t.Error("a client drained chrome-1")
	}
}

// An empty pool says how to add a resource; an API without the resource
// routes shows the page as not available, and one without the waiter list
// shows the rest.
func TestResourcesPageMissingRoutes(t *testing.T) {
	v := newEnv(t, envOptions{})
	_, body, _ := v.get("/ui/resources")
	wantIn(t, "an empty pool", body, `id="no-resources"`, "heddle resource add", `id="no-waiters"`)

	hide := func(prefix string) func(http.Handler) http.Handler {
		return func(api http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, prefix) {
					r.URL.Path = "/v1/no-such-route"
				}
				api.ServeHTTP(w, r)
			})
		}
	}
	old := newEnv(t, envOptions{wrapAPI: hide("/v1/resources")})
	code, body, _ := old.get("/ui/resources")
	if code != http.StatusOK {
		t.Errorf("no resource routes: HTTP %d", code)
	}
	wantIn(t, "no resource routes", body, "Not available yet.", "heddle resource list")

	noWaiters := newEnv(t, envOptions{wrapAPI: hide("/v1/resources/waiters")})
	seedPool(noWaiters)
	_, body, _ = noWaiters.get("/ui/resources")
	wantIn(t, "no waiter list", body, `<dd id="waiting">unknown</dd>`, "has no list of the waiting steps", `<td class="worker">w-holder</td>`)
}

// The run page shows a pending step's engine state, try, worker, heartbeat
// and step lease; a run whose API lacks the steps read still shows the
// steps its history tells.
func TestRunPageStepStates(t *testing.T) {
	v := newEnv(t, envOptions{})
	holder, waiter := seedPool(v)
	_, body, _ := v.get(runPath(holder.Job))
	wantIn(t, "the holder's run page", body, `<table class="steps" id="pending-steps">`, "<th>Engine state</th>",
		`<tr data-step="1">`, `<span class="badge st-running" data-state="RUNNING">RUNNING</span>`,
		`<td class="num step-attempt">1</td>`, `<td class="step-worker">w-holder</td>`,
		fmtTime(t0.Add(2*time.Second).UnixMilli()), fmtTime(t0.Add(32*time.Second).UnixMilli()),
		"holds a unit of", ">chrome-1</a>")
	_, body, _ = v.get(runPath(waiter.Job))
	wantIn(t, "the waiter's run page", body, `data-state="PENDING"`, "waits for a unit of browser")

	// Without the steps read the history alone tells the steps: an
	// activity whose try failed is pending, retrying.
	old := newEnv(t, envOptions{wrapAPI: func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/steps") {
				r.URL.Path = "/v1/no-such-route"
			}
			api.ServeHTTP(w, r)
		})
	}})
	parent, _ := seedRun(old)
	code, body, _ := old.get(runPath(parent))
	if code != http.StatusOK {
		t.Fatalf("a run without step states: HTTP %d", code)
	}
	wantIn(t, "a run without step states", body, `id="pending-steps"`, "Activities that run in the worker holding the run are recorded when they end")
	wantNotIn(t, "a run without step states", body, "<th>Engine state</th>")
}

func itoa(id engine.JobID) string { return strconv.FormatUint(uint64(id), 10) }
