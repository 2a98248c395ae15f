package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// hourly makes schedule id: a run of Report on queue reports every hour.
func hourly(t *testing.T, v *env, id string) {
	t.Helper()
	if _, err := v.e.CreateSchedule(context.Background(), engine.CreateSchedule{ID: id,
		Spec:   engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: time.Hour.Milliseconds()}}},
		Action: engine.ScheduleAction{Type: "Report", Queue: "reports"}}); err != nil {
		t.Fatal(err)
	}
}

func (v *env) schedule(id string) *engine.ScheduleDescription {
	v.t.Helper()
	sd, err := v.e.DescribeSchedule(context.Background(), id)
	if err != nil {
		v.t.Fatal(err)
	}
	return sd
}

// TestSchedulePages lists a schedule, opens it, pauses and unpauses it with
// a note, triggers it (the run it starts links back to it) and backfills
// a range of it, each button coming back to the schedule's page with a
// message; a bad range is refused with what was wrong and what was typed.
func TestSchedulePages(t *testing.T) {
	v := newEnv(t, envOptions{})
	const id = "nightly report" // a space: the links escape it
	hourly(t, v, id)
	page := "/ui/schedules/nightly%20report"

	code, body, _ := v.get("/ui/schedules")
	if code != http.StatusOK {
		t.Fatalf("the schedules page: HTTP %d\n%s", code, body)
	}
	wantIn(t, "the schedules page", body, `<tr data-schedule="nightly report">`, `href="`+page+`"`, "every 1h00m",
		"Report on reports", `data-state="active"`, `aria-current="page">Schedules`)

	code, body, _ = v.get(page)
	if code != http.StatusOK {
		t.Fatalf("the schedule's page: HTTP %d\n%s", code, body)
	}
	wantIn(t, "the schedule's page", body, `id="schedule-spec">every 1h00m`, `id="pause-form"`, `id="trigger-form"`,
		`id="backfill-form"`, "No runs yet.", "as workflow id nightly report-<its time, UTC>",
		`id="schedule-next">2026-11-02 13:00:00.000Z`, "heddle schedule describe 'nightly report'")

	csrf := v.csrf(page)
	press := func(op string, form url.Values) (int, string, string) {
		t.Helper()
		form.Set(csrfField, csrf)
		return v.post(page+"/"+op, form)
	}
	back := func(op string) string { return page + "?done=" + op }

	code, _, loc := press("pause", url.Values{"note": {"the report database is migrating"}})
	if code != http.StatusSeeOther || loc != back("pause") {
		t.Fatalf("pause: HTTP %d to %q", code, loc)
	}
	if sd := v.schedule(id); !sd.Schedule.State.Paused || sd.Schedule.State.Note != "the report database is migrating" {
		t.Errorf("after pause: %+v", sd.Schedule.State)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the paused schedule", body, `id="flash">Schedule paused`, `data-state="paused"`, `id="unpause-form"`,
		`id="schedule-note">the report database is migrating`, `id="schedule-next">none while paused`)
	wantNotIn(t, "the paused schedule", body, `id="pause-form"`)

	if code, _, loc = press("unpause", url.Values{}); code != http.StatusSeeOther || loc != back("unpause") {
		t.Fatalf("unpause: HTTP %d to %q", code, loc)
	}
	if sd := v.schedule(id); sd.Schedule.State.Paused {
		t.Error("still paused after unpause")
	}

	// Trigger: one run now, which links back to its schedule.
	if code, _, loc = press("trigger", url.Values{"overlap": {""}}); code != http.StatusSeeOther || loc != back("trigger") {
		t.Fatalf("trigger: HTTP %d to %q", code, loc)
	}
	sd := v.schedule(id)
	if len(sd.Schedule.Running) != 1 {
		t.Fatalf("after trigger the schedule has the runs %+v", sd.Schedule.Running)
	}
	triggered := sd.Schedule.Running[0]
	_, body, _ = v.get(loc)
	wantIn(t, "the triggered schedule", body, `id="flash">Triggered`, fmt.Sprintf(`<tr data-job="%d">`, triggered.Job),
		fmt.Sprintf(`<a href="/ui/runs/%d">%s</a>`, triggered.Job, triggered.WorkflowID), "Queued")
	_, body, _ = v.get(fmt.Sprintf("/ui/runs/%d", triggered.Job))
	wantIn(t, "the triggered run's page", body, `<dd id="schedule-link"><a href="`+page+`">nightly report</a> started this run</dd>`)

	// Backfill: the spec's times in the range, each a run.
	code, _, loc = press("backfill", url.Values{"start": {"2026-11-02 08:30Z"}, "end": {"2026-11-02 10:30Z"}, "overlap": {"AllowAll"}})
	if code != http.StatusSeeOther || loc != back("backfill") {
		t.Fatalf("backfill: HTTP %d to %q", code, loc)
	}
	sd = v.schedule(id)
	nominal := map[int64]bool{}
	for _, r := range sd.Schedule.Running {
		nominal[r.NominalMS] = true
	}
	for _, h := range []int{9, 10} {
		if at := time.Date(2026, 11, 2, h, 0, 0, 0, time.UTC).UnixMilli(); !nominal[at] {
			t.Errorf("the backfill started no run for %02d:00: %+v", h, sd.Schedule.Running)
		}
	}
	if len(sd.Schedule.Running) != 3 {
		t.Errorf("after the trigger and a backfill of two times: %d runs", len(sd.Schedule.Running))
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the backfilled schedule", body, `id="flash">Backfilled`, "report-2026-11-02T09:00:00Z", "report-2026-11-02T10:00:00Z")
	if rows := strings.Count(body, "<tr data-job="); rows != 3 {
		t.Errorf("the schedule lists %d runs, want its 3 (each once)", rows)
	}

	// Refused: what was wrong, on the schedule's page, with what was typed.
	for _, bad := range []struct {
		op   string
		form url.Values
		code int
		msg  string
	}{
		{"backfill", url.Values{"start": {"2026-11-02 10:00Z"}, "end": {"-2h"}}, http.StatusBadRequest, "The range's end must be after its start."},
		{"backfill", url.Values{"start": {"yesterday"}, "end": {"-0s"}}, http.StatusBadRequest, `The start of the range: "yesterday" is not a time`},
		{"trigger", url.Values{"overlap": {"Sometimes"}}, http.StatusBadRequest, `"Sometimes" is not an overlap policy.`},
		{"delete", url.Values{}, http.StatusNotFound, "There is no such button."},
	} {
		code, body, _ := press(bad.op, bad.form)
		if code != bad.code {
			t.Errorf("%s %v: HTTP %d, want %d", bad.op, bad.form, code, bad.code)
		}
		wantIn(t, bad.op+" refused", body, bad.msg)
		if start := bad.form.Get("start"); start != "" {
			wantIn(t, bad.op+" refused", body, `value="`+start+`"`)
		}
	}
	if n := len(v.schedule(id).Schedule.Running); n != 3 {
		t.Errorf("the refused forms started runs: %d open", n)
	}
	// A form without its CSRF token, and a schedule that is not there.
	if code, body, _ := v.post(page+"/trigger", url.Values{}); code != http.StatusForbidden {
		t.Errorf("trigger without the CSRF token: HTTP %d\n%s", code, body)
	}
	code, body, _ = v.get("/ui/schedules/nope")
	if code != http.StatusNotFound {
		t.Errorf("an unknown schedule: HTTP %d", code)
	}
	wantIn(t, "an unknown schedule", body, `There is no schedule "nope".`)
}

// TestScheduleIDWithSlash: a schedule id may hold a "/"; its links and
// forms name it as one segment of the path.
func TestScheduleIDWithSlash(t *testing.T) {
	v := newEnv(t, envOptions{})
	hourly(t, v, "team/nightly")
	_, body, _ := v.get("/ui/schedules")
	wantIn(t, "the schedules page", body, `<a href="/ui/schedules/team%2Fnightly">team/nightly</a>`)
	code, body, _ := v.get("/ui/schedules/team%2Fnightly")
	if code != http.StatusOK {
		t.Fatalf("the schedule's page: HTTP %d\n%s", code, body)
	}
	wantIn(t, "the schedule's page", body, `action="/ui/schedules/team%2Fnightly/pause"`)
	code, _, loc := v.post("/ui/schedules/team%2Fnightly/pause", url.Values{csrfField: {v.csrf("/ui/schedules/team%2Fnightly")}})
	if code != http.StatusSeeOther || loc != "/ui/schedules/team%2Fnightly?done=pause" {
		t.Fatalf("pause: HTTP %d to %q", code, loc)
	}
	if !v.schedule("team/nightly").Schedule.State.Paused {
		t.Error("the schedule is not paused")
	}
}

// TestScheduleRoles shows a reader the schedule without its buttons and
// refuses its forms; a client gets them.
func TestScheduleRoles(t *testing.T) {
	role := "reader"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	hourly(t, v, "hourly")
	_, body, _ := v.get("/ui/schedules/hourly")
	wantIn(t, "a reader's schedule page", body, `id="no-schedule-actions"`, "The reader role may not act on schedules")
	wantNotIn(t, "a reader's schedule page", body, `id="pause-form"`, `id="trigger-form"`, `id="backfill-form"`)
	code, body, _ := v.post("/ui/schedules/hourly/pause", url.Values{csrfField: {v.csrf("/ui/signin")}})
	if code != http.StatusForbidden {
		t.Errorf("a reader's pause: HTTP %d", code)
	}
	wantIn(t, "a reader's pause", body, "The reader role may not pause schedules.")
	if v.schedule("hourly").Schedule.State.Paused {
		t.Error("a reader paused the schedule")
	}
	role = "client"
	_, body, _ = v.get("/ui/schedules/hourly")
	wantIn(t, "a client's schedule page", body, `id="pause-form"`, `id="trigger-form"`, `id="backfill-form"`)
}

// A schedule's run on its way to another shard of a sharded cluster has no
// job id yet: the schedule's page says it is starting there, and links no
// run (the API is wrapped to answer such a run, as a sharded node would
// between the create's delivery and its acknowledgement).
func TestScheduleRunStartingOnAnotherShard(t *testing.T) {
	pending := engine.ScheduleRun{WorkflowID: "nightly-2026-11-02T12:00:00Z", NominalMS: t0.UnixMilli(), ActualMS: t0.UnixMilli(),
		Delivery: &engine.DeliveryRef{Source: 0, Target: 3, Seq: 7}}
	v := newEnv(t, envOptions{wrapAPI: func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/v1/schedules/nightly" {
				api.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			r.Header.Del("Accept") // JSON, which the UI's client reads as well
			api.ServeHTTP(rec, r)
			var sd engine.ScheduleDescription
			if err := json.Unmarshal(rec.Body.Bytes(), &sd); err != nil || sd.Schedule == nil {
				t.Errorf("the schedule's description: %v\n%s", err, rec.Body)
				api.ServeHTTP(w, r)
				return
			}
			sd.Schedule.Running = append(sd.Schedule.Running, pending)
			sd.Schedule.Recent = append(sd.Schedule.Recent, pending)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&sd)
		})
	}})
	hourly(t, v, "nightly")
	code, body, _ := v.get("/ui/schedules/nightly")
	if code != http.StatusOK {
		t.Fatalf("the schedule's page: HTTP %d\n%s", code, body)
	}
	wantIn(t, "the schedule's page", body, "nightly-2026-11-02T12:00:00Z", "starting on shard 3")
	wantNotIn(t, "the schedule's page", body, `href="/ui/runs/0"`, "No runs yet.")
	if n := strings.Count(body, "starting on shard 3"); n != 1 {
		t.Errorf("the starting run is listed %d times, want once (open runs are not listed again as recent)", n)
	}
}
