package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// The pause and unpause buttons of a run, and the per-activity buttons of
// its pending steps: each needs the form's CSRF token and the role's
// permission, and does what the API's command does.
func TestPauseActions(t *testing.T) {
	v := newEnv(t, envOptions{})
	parent, _ := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	_, body, _ := v.get(path)
	wantIn(t, "an open run's page", body, `id="pause-form"`, `name="op" value="pause"`, `name="op" value="reset"`, `class="activity-pause warn"`)
	wantNotIn(t, "a run that is not paused", body, `id="run-paused"`, `id="unpause-form"`)
	csrf := v.csrf(path)

	if code, _, _ := v.post(path+"/pause", url.Values{"reason": {"audit"}}); code != http.StatusForbidden {
		t.Errorf("a pause without a CSRF token: HTTP %d, want 403", code)
	}
	if j := v.describe(parent); j.Pause != nil {
		t.Fatalf("a refused pause paused the run: %+v", j.Pause)
	}
	code, _, loc := v.post(path+"/pause", url.Values{"reason": {"audit"}, csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != path+"?done=pause" {
		t.Fatalf("pause: HTTP %d to %q", code, loc)
	}
	if j := v.describe(parent); j.Pause == nil || j.Pause.Reason != "audit" {
		t.Fatalf("after the pause button: %+v", j.Pause)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the paused run's page", body, `id="run-paused">Paused</span>`, `id="pause-info">since `, ": audit.", `id="unpause-form"`,
		"Run paused: a turn that runs finishes")
	wantNotIn(t, "the paused run's page", body, `id="pause-form"`)

	// The list marks it, and its status menu's Paused (Temporal's
	// ExecutionStatus = "Paused") and heddle's paused=true both find it; a
	// paused run stays in the open group.
	wf := v.describe(parent).WorkflowID
	for _, q := range []string{"status=Paused", "q=paused%3Dtrue", "status=Open", "status=Running"} {
		_, list, _ := v.get("/ui/workflows?" + q)
		wantIn(t, "the list "+q, list, wf, `class="badge st-paused"`)
	}
	_, list, _ := v.get("/ui/workflows?q=paused%3Dfalse")
	wantNotIn(t, "the list of runs that are not paused", list, `class="badge st-paused"`)
	_, list, _ = v.get("/ui/workflows")
	wantIn(t, "the status menu", list, `<option>Paused</option>`)

	// The activity of step 2 failed a try: pause it, then reset it.
	code, _, loc = v.post(path+"/activity", url.Values{"step": {"2"}, "op": {"pause"}, csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != path+"?done=activity.pause" {
		t.Fatalf("activity pause: HTTP %d to %q", code, loc)
	}
	step2 := func() engine.StepInfo {
		t.Helper()
		steps, err := v.e.Steps(context.Background(), engine.Target{Job: parent})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			if s.Step == "2" {
				return s
			}
		}
		t.Fatalf("no step 2 among %+v", steps)
		return engine.StepInfo{}
	}
	if s := step2(); s.Pause == nil {
		t.Fatalf("step 2 after the activity's pause: %+v", s)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the page of a paused activity", body, `class="tag paused step-paused">paused</span>`, `class="activity-unpause">Unpause`,
		"Activity paused: no try of it starts until it is unpaused.")
	code, _, loc = v.post(path+"/activity", url.Values{"step": {"2"}, "op": {"reset"}, csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != path+"?done=activity.reset" {
		t.Fatalf("activity reset: HTTP %d to %q", code, loc)
	}
	// Its failed try was recorded before events carried their try, so
	// the engine counts it as try 2 (docs/state-machines.md §3).
	if s := step2(); s.Pause != nil || s.AttemptBase != 2 {
		t.Fatalf("step 2 after the activity's reset: %+v", s)
	}
	for _, tc := range []struct {
		form url.Values
		code int
		want string
	}{
		{url.Values{"step": {"2"}, "op": {"forget"}}, http.StatusBadRequest, `"forget" is not an activity operation`},
		{url.Values{"op": {"pause"}}, http.StatusBadRequest, "The form names no activity."},
		{url.Values{"step": {"9"}, "op": {"pause"}}, http.StatusNotFound, `Could not pause the activity: engine: unknown activity`},
	} {
		tc.form.Set(csrfField, csrf)
		code, body, _ := v.post(path+"/activity", tc.form)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("activity %v: HTTP %d, want %d and %q", tc.form, code, tc.code, tc.want)
		}
	}

	code, _, loc = v.post(path+"/unpause", url.Values{csrfField: {csrf}})
	if code != http.StatusSeeOther || loc != path+"?done=unpause" {
		t.Fatalf("unpause: HTTP %d to %q", code, loc)
	}
	if j := v.describe(parent); j.Pause != nil {
		t.Errorf("after the unpause button: %+v", j.Pause)
	}
	wantIn(t, "the list", func() string { _, b, _ := v.get("/ui/workflows"); return b }(), "order-1")
}

// A reader has no pause or activity buttons, and its posts are refused
// naming the role; a client has both.
func TestPauseActionsFollowTheRole(t *testing.T) {
	role := "client"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	parent, _ := seedRun(v)
	path := fmt.Sprintf("/ui/runs/%d", parent)
	_, body, _ := v.get(path)
	wantIn(t, "a client's page", body, `id="pause-form"`, `class="step-act"`)
	csrf := v.csrf(path)

	role = "reader"
	_, body, _ = v.get(path)
	wantNotIn(t, "a reader's page", body, `id="pause-form"`, `class="step-act"`, `id="unpause-form"`)
	code, page, _ := v.post(path+"/pause", url.Values{csrfField: {csrf}})
	if code != http.StatusForbidden || !strings.Contains(page, "The reader role may not pause runs.") {
		t.Errorf("a reader's pause: HTTP %d", code)
	}
	code, page, _ = v.post(path+"/activity", url.Values{"step": {"2"}, "op": {"pause"}, csrfField: {csrf}})
	if code != http.StatusForbidden || !strings.Contains(page, "The reader role may not pause, unpause or reset activities.") {
		t.Errorf("a reader's activity pause: HTTP %d", code)
	}
	if j := v.describe(parent); j.Pause != nil {
		t.Error("a reader paused a run")
	}

	role = "client"
	code, _, _ = v.post(path+"/pause", url.Values{csrfField: {csrf}})
	acode, _, _ := v.post(path+"/activity", url.Values{"step": {"2"}, "op": {"pause"}, csrfField: {csrf}})
	if code != http.StatusSeeOther || acode != http.StatusSeeOther {
		t.Errorf("a client's pause: HTTP %d, activity pause: HTTP %d", code, acode)
	}
}
