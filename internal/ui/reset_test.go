package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// TestResetAction resets a run from its page: the form offers the reset
// types and the run's turn boundaries; a reset needs a reason and a valid
// point (the refusal names the valid ones and keeps what was typed); done,
// the browser goes to the new run's page, which links back, and the old
// run's page links to it; a POST without the page's CSRF token resets
// nothing.
func TestResetAction(t *testing.T) {
	v := newEnv(t, envOptions{})
	parent, child := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	_, body, _ := v.get(path)
	wantIn(t, "a run page", body, `id="reset-form"`, `value="LastWorkflowTask"`, `value="FirstWorkflowTask"`,
		`<option value="7">event 7</option>`, `<option value="1">event 1</option>`, "This run ends as Terminated.")
	csrf := v.csrf(path)

	code, _, _ := v.post(path+"/reset", url.Values{"point": {"LastWorkflowTask"}, "reason": {"x"}, csrfField: {strings.Repeat("0", 32)}})
	if code != http.StatusForbidden {
		t.Errorf("reset with a wrong CSRF token: HTTP %d", code)
	}
	code, body, _ = v.post(path+"/reset", url.Values{"point": {"LastWorkflowTask"}, csrfField: {csrf}})
	if code != http.StatusBadRequest || !strings.Contains(body, "A reset needs a reason") {
		t.Errorf("reset without a reason: HTTP %d", code)
	}
	code, body, _ = v.post(path+"/reset", url.Values{"point": {"3"}, "reason": {"wrong step"}, csrfField: {csrf}})
	if code != http.StatusBadRequest || !strings.Contains(body, "is not a turn boundary") || !strings.Contains(body, "valid event ids (2): 1, 7") ||
		!strings.Contains(body, `value="wrong step"`) {
		t.Errorf("reset to a point that is no turn boundary: HTTP %d\n%s", code, body)
	}
	code, body, _ = v.post(path+"/reset", url.Values{"point": {"soon"}, "reason": {"x"}, csrfField: {csrf}})
	if code != http.StatusBadRequest || !strings.Contains(body, `The reset point "soon" is neither`) {
		t.Errorf("reset to an unknown point: HTTP %d", code)
	}
	if j := v.describe(parent); j.Status != engine.StatusWaiting || j.ResetNewRunID != 0 {
		t.Fatalf("a refused reset changed the run: %+v", j)
	}

	v.clk.Advance(time.Minute) // the reset comes a minute after the run's events
	code, _, loc := v.post(path+"/reset", url.Values{"point": {"LastWorkflowTask"}, "reason": {"bad deploy"}, "exclude_signals": {"1"}, csrfField: {csrf}})
	nj, err := v.e.Describe(context.Background(), engine.Target{WorkflowID: "order-1"})
	if err != nil || nj.ID == parent || nj.ResetBaseRunID != parent {
		t.Fatalf("after the reset the workflow id names %+v, %v", nj, err)
	}
	newPath := fmt.Sprintf("/ui/runs/%d", nj.ID)
	if code != http.StatusSeeOther || loc != newPath+"?done=reset" {
		t.Fatalf("reset: HTTP %d to %q, want the new run's page", code, loc)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the new run's page", body, "Reset: this run goes on from the point of the run it replaces.",
		fmt.Sprintf(`<dd id="reset-from"><a href="/ui/runs/%d">run %d</a> at event 7</dd>`, parent, parent),
		`data-type="workflow_reset"`, fmt.Sprintf(`reset from <a href="/ui/runs/%d">run %d</a> at event 7`, parent, parent),
		// the child the copied history started, found through the run it
		// was reset from
		fmt.Sprintf(`<a href="/ui/runs/%d" class="child-link">order-1/1/3</a>`, child))
	// The copied events are older than the new run: the timeline counts
	// from the first of them, not from the run's creation.
	wantNotIn(t, "the new run's page", body, ">+-")
	_, body, _ = v.get(path)
	wantIn(t, "the old run's page", body, `data-status="Terminated"`,
		fmt.Sprintf(`<dd id="reset-to"><a href="/ui/runs/%d">run %d</a>`, nj.ID, nj.ID),
		fmt.Sprintf(`continues as <a href="/ui/runs/%d">run %d</a>`, nj.ID, nj.ID), "This run stays Terminated.")
	if c := v.describe(child); c.ParentID != nj.ID {
		t.Errorf("the child started before the point has parent %d, want the new run %d", c.ParentID, nj.ID)
	}
}

// TestResetRoles: the reset form follows the role as terminate does (an
// admin's), and a reset posted by a client is refused naming the role.
func TestResetRoles(t *testing.T) {
	role := "client"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	parent, _ := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	_, body, _ := v.get(path)
	wantNotIn(t, "a client's run page", body, `id="reset-form"`)
	code, body, _ := v.post(path+"/reset", url.Values{"point": {"LastWorkflowTask"}, "reason": {"x"}, csrfField: {v.csrf(path)}})
	if code != http.StatusForbidden || !strings.Contains(body, "The client role may not reset runs.") {
		t.Errorf("a client's reset: HTTP %d", code)
	}
	if j := v.describe(parent); j.Status != engine.StatusWaiting {
		t.Errorf("a refused reset left the run %s", j.Status)
	}
	role = "admin"
	_, body, _ = v.get(path)
	wantIn(t, "an admin's run page", body, `id="reset-form"`)
}
