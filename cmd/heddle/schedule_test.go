package main

import (
	"bytes"
	"strings"
	"testing"
)

// sched runs "heddle schedule VERB --addr ADDR ARGS...".
func (w *wfEnv) sched(verb string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"schedule", verb, "--addr", w.addr}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func (w *wfEnv) schedOK(verb string, args ...string) string {
	w.t.Helper()
	code, out, errs := w.sched(verb, args...)
	if code != 0 {
		w.t.Fatalf("schedule %s %v: exit %d\nstdout:\n%s\nstderr:\n%s", verb, args, code, out, errs)
	}
	return out
}

// TestScheduleCommands drives every verb of "heddle schedule" against a
// node with a worker: the runs a trigger starts complete, and the JSON
// documents say what each command did.
func TestScheduleCommands(t *testing.T) {
	w := newWFEnvInMemory(t)
	out := w.schedOK("create", "nightly", "--cron", "0 3 * * *", "--every", "1h/15m", "--type", "Greet", "-t", wfTestQueue,
		"--input", `"cli"`, "--overlap", "AllowAll", "--jitter", "30s", "--trigger-immediately")
	wantContains(t, "create", out, "Schedule nightly created.", "0 3 * * *", "1h0m0s/15m0s", "Greet on queue wfq", "AllowAll", "Started:", "nightly-")

	var d schedDoc
	wfDecodeOne(t, w.schedOK("describe", "nightly", "-o", "json"), &d)
	if d.NumActions != 1 || len(d.Recent) != 1 || len(d.NextActionTimes) != 10 || d.Jitter != "30s" || d.Overlap != "AllowAll" {
		t.Fatalf("describe: %+v", d)
	}
	if j := w.closed(d.Recent[0].WorkflowID); j.Status.String() != "Completed" {
		t.Fatalf("the triggered run ended %s", j.Status)
	}
	// The run links back to the schedule that started it.
	wantContains(t, "describe of a scheduled run", w.ok("describe", d.Recent[0].WorkflowID),
		"Schedule     nightly started it (heddle schedule describe shows it)")
	var run wfJobDoc
	w.json(&run, "describe", d.Recent[0].WorkflowID)
	if run.ScheduleID != "nightly" {
		t.Errorf("describe -o json of a scheduled run: schedule_id %q", run.ScheduleID)
	}

	out = w.schedOK("pause", "nightly", "--note", "maintenance")
	wantContains(t, "pause", out, "Schedule nightly paused.", "State:", "paused", "maintenance")
	d = schedDoc{} // a fresh value each time: fields left out keep old values
	wfDecodeOne(t, w.schedOK("trigger", "nightly", "--json"), &d)
	if len(d.Started) != 1 || d.NumActions != 2 || !d.Paused {
		t.Fatalf("trigger: %+v", d)
	}
	w.closed(d.Started[0].WorkflowID)
	d = schedDoc{}
	wfDecodeOne(t, w.schedOK("unpause", "nightly", "-o", "json"), &d)
	if d.Paused || d.Note != "Unpaused via CLI" {
		t.Fatalf("unpause: %+v", d)
	}
	// update changes what is given and keeps the rest.
	d = schedDoc{}
	wfDecodeOne(t, w.schedOK("update", "nightly", "--every", "30m", "--overlap", "BufferOne", "-o", "json"), &d)
	if len(d.CronExpressions) != 0 || len(d.Intervals) != 1 || d.Intervals[0] != "30m0s" || d.Overlap != "BufferOne" || d.Type != "Greet" || d.NumActions != 2 || len(d.Running) != 0 {
		t.Fatalf("update: %+v", d)
	}

	wantContains(t, "backfill", w.schedOK("backfill", "nightly", "--start", "2024-01-01T00:00:00Z", "--end", "2024-01-01T01:00:00Z",
		"--overlap", "AllowAll"), "Schedule nightly backfilled (3 runs started).")

	w.schedOK("create", "b-second", "--every", "24h", "--type", "Greet", "-t", wfTestQueue, "--paused")
	out = w.schedOK("list", "--limit", "1")
	wantContains(t, "list", out, "ID", "b-second", "paused", "More: --cursor b-second")
	var page schedListOutput
	wfDecodeOne(t, w.schedOK("list", "--cursor", "b-second", "-o", "json"), &page)
	if len(page.Schedules) != 1 || page.Schedules[0].ID != "nightly" || page.NextCursor != "" {
		t.Fatalf("second page: %+v", page)
	}

	for _, tc := range []struct {
		verb string
		args []string
		code int
		want string
	}{
		{"create", []string{"x", "--type", "Greet", "-t", "q"}, 2, "give at least one --cron or --every"},
		{"create", []string{"x", "--cron", "61 * * * *", "--type", "Greet", "-t", "q"}, 2, "--cron"},
		{"create", []string{"x", "--every", "1h"}, 2, "--type and --task-queue are required"},
		{"create", []string{"x", "--every", "1h", "--type", "T", "-t", "q", "--overlap", "Sometimes"}, 2, "overlap policy"},
		{"create", []string{"nightly", "--every", "1h", "--type", "T", "-t", "q"}, 1, "schedule already exists"},
		{"describe", []string{"missing"}, 1, "unknown schedule"},
		{"trigger", []string{}, 2, "missing argument ID"},
		{"backfill", []string{"nightly", "--start", "yesterday", "--end", "2024-01-01T00:00:00Z"}, 2, "--start"},
	} {
		code, _, errs := w.sched(tc.verb, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("schedule %s %v: exit %d, stderr %q; want %d and %q", tc.verb, tc.args, code, errs, tc.code, tc.want)
		}
	}

	wantContains(t, "delete", w.schedOK("delete", "nightly"), "Schedule nightly deleted.")
	if code, _, errs := w.sched("delete", "nightly"); code != 1 || !strings.Contains(errs, "unknown schedule") {
		t.Fatalf("second delete: %d %s", code, errs)
	}
}
