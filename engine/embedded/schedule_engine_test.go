package embedded

import (
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

// TestEngineSchedulerFiresSchedules runs the embedded engine's scheduler on
// a manual clock: a schedule's time passing starts its run with no command
// from the test, and the reads see it.
func TestEngineSchedulerFiresSchedules(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(schedT0))
	e, err := Open(Config{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	for i := range 3 {
		_, err := e.CreateSchedule(bg, engine.CreateSchedule{ID: fmt.Sprintf("s%d", i), Spec: everySpec(60_000), Action: testAction})
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := e.DescribeSchedule(bg, "s1")
	if err != nil {
		t.Fatal(err)
	}
	first := (schedT0/60_000 + 1) * 60_000
	if len(d.NextActionTimesMS) != 10 || d.NextActionTimesMS[0] != first || d.NextActionTimesMS[9] != first+9*60_000 {
		t.Fatalf("next action times %v", d.NextActionTimesMS)
	}
	clk.Set(time.UnixMilli(first))
	eventually(t, "the three runs started", func() bool {
		page, err := e.List(bg, engine.ListQuery{Type: "report"})
		return err == nil && len(page.Jobs) == 3
	})
	j, err := e.Describe(bg, engine.Target{WorkflowID: "s2-" + rfc(first)})
	if err != nil || j.ScheduleID != "s2" {
		t.Fatalf("run of s2: %+v %v", j, err)
	}
	page, err := e.ListSchedules(bg, engine.ScheduleListQuery{Limit: 2})
	if err != nil || len(page.Schedules) != 2 || page.Next != "s1" || page.Schedules[0].Schedule.NumActions != 1 {
		t.Fatalf("first page %+v %v", page, err)
	}
	page, err = e.ListSchedules(bg, engine.ScheduleListQuery{After: page.Next})
	if err != nil || len(page.Schedules) != 1 || page.Schedules[0].Schedule.ID != "s2" || page.Next != "" {
		t.Fatalf("second page %+v %v", page, err)
	}
	if err := e.DeleteSchedule(bg, engine.DeleteSchedule{ID: "s0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DescribeSchedule(bg, "s0"); !errorsIs(err, engine.ErrUnknownSchedule) {
		t.Fatalf("describe of a deleted schedule: %v", err)
	}
}
