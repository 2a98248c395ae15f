package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// TestClientCoversTheSchedules runs every schedule method through the
// Client and the Server against an engine, and a JSON request as a person
// would send it.
func TestClientCoversTheSchedules(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	var s engine.ScheduleService = newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := engine.ScheduleSpec{CronExpressions: []string{"0 * * * *"}}
	act := engine.ScheduleAction{Type: "report", Queue: "q"}
	cr, err := s.CreateSchedule(ctx, engine.CreateSchedule{ID: "nightly/1", Spec: spec, Action: act, TriggerImmediately: true})
	if err != nil || len(cr.Started) != 1 || cr.Schedule.ID != "nightly/1" {
		t.Fatalf("create: %+v %v", cr, err)
	}
	if _, err := s.CreateSchedule(ctx, engine.CreateSchedule{ID: "nightly/1", Spec: spec, Action: act}); !errors.Is(err, engine.ErrScheduleExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := s.CreateSchedule(ctx, engine.CreateSchedule{ID: "bad", Spec: engine.ScheduleSpec{CronExpressions: []string{"nope"}}, Action: act}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("bad cron: %v", err)
	}
	if _, err := s.PauseSchedule(ctx, engine.PauseSchedule{ID: "nightly/1", Paused: true, Note: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	d, err := s.DescribeSchedule(ctx, "nightly/1")
	if err != nil || !d.Schedule.State.Paused || d.Schedule.State.Note != "maintenance" || len(d.NextActionTimesMS) != 0 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	tr, err := s.TriggerSchedule(ctx, engine.TriggerSchedule{ID: "nightly/1", Overlap: engine.OverlapAllowAll})
	if err != nil || tr.Schedule.NumActions+tr.Schedule.NumSkippedOverlap != 2 {
		t.Fatalf("trigger: %+v %v", tr, err)
	}
	hour := time.Now().Truncate(time.Hour).Add(-time.Hour).UnixMilli()
	bf, err := s.BackfillSchedule(ctx, engine.BackfillSchedule{ID: "nightly/1", StartMS: hour, EndMS: hour, Overlap: engine.OverlapAllowAll})
	if err != nil || len(bf.Started) != 1 {
		t.Fatalf("backfill: %+v %v", bf, err)
	}
	up, err := s.UpdateSchedule(ctx, engine.UpdateSchedule{ID: "nightly/1", Spec: spec, Action: engine.ScheduleAction{Type: "report2", Queue: "q"}})
	if err != nil || up.Schedule.Action.Type != "report2" {
		t.Fatalf("update: %+v %v", up, err)
	}
	page, err := s.ListSchedules(ctx, engine.ScheduleListQuery{})
	if err != nil || len(page.Schedules) != 1 || page.Schedules[0].Schedule.ID != "nightly/1" {
		t.Fatalf("list: %+v %v", page, err)
	}
	if err := s.DeleteSchedule(ctx, engine.DeleteSchedule{ID: "nightly/1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DescribeSchedule(ctx, "nightly/1"); !errors.Is(err, engine.ErrUnknownSchedule) {
		t.Fatalf("describe after delete: %v", err)
	}

	// JSON, as curl would send it.
	var res engine.ScheduleResult
	r := postJSON(t, hs.URL+"/v1/schedules", map[string]any{
		"id": "j", "spec": map[string]any{"intervals": []any{map[string]any{"every_ms": 60000}}},
		"action": map[string]any{"type": "t", "queue": "q"}, "policy": map[string]any{"overlap": "AllowAll"},
	}, &res)
	if r.status != http.StatusOK || res.Schedule == nil || res.Schedule.Policy.Overlap != engine.OverlapAllowAll {
		t.Fatalf("JSON create: %d %s", r.status, r.body)
	}
	r = doRaw(t, http.MethodGet, hs.URL+"/v1/schedules/j", nil, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"overlap":"AllowAll"`) || !strings.Contains(string(r.body), `"next_action_times_ms":[`) {
		t.Fatalf("JSON describe: %d %s", r.status, r.body)
	}
	r = doRaw(t, http.MethodGet, hs.URL+"/v1/schedules/missing", nil, nil)
	if b := errorBodyOf(t, r); r.status != http.StatusNotFound || b.Name != "unknown_schedule" {
		t.Fatalf("missing schedule: %d %+v", r.status, b)
	}
}
