package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

func ScheduledGreeting(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// TestScheduleClientLikeTemporal drives a schedule through the client's
// Temporal-shaped schedule API, with a worker running what it starts, on
// the test's backend (in-process, HTTP or a three-node cluster).
func TestScheduleClientLikeTemporal(t *testing.T) {
	e := open(t)
	startWorker(t, e, "sched", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(ScheduledGreeting) })
	c := client.New(service(t, e))
	sc := c.ScheduleClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	h, err := sc.Create(ctx, client.ScheduleOptions{
		ID:      "greet",
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Second}}},
		Action:  &client.ScheduleWorkflowAction{Workflow: ScheduledGreeting, Args: []any{"x"}, TaskQueue: "sched"},
		Overlap: client.ScheduleOverlapPolicyAllowAll,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Create(ctx, client.ScheduleOptions{ID: "greet", Spec: client.ScheduleSpec{CronExpressions: []string{"@daily"}},
		Action: &client.ScheduleWorkflowAction{Workflow: ScheduledGreeting, TaskQueue: "sched"}}); !errors.Is(err, engine.ErrScheduleExists) {
		t.Fatalf("second create: %v", err)
	}
	// The interval takes two actions; each run's id is the schedule id
	// and its time, and it greets with the action's argument.
	var d *client.ScheduleDescription
	for d == nil || d.Info.NumActions < 2 {
		time.Sleep(100 * time.Millisecond)
		if d, err = h.Describe(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range d.Info.RecentActions[:2] {
		want := "greet-" + a.ScheduleTime.UTC().Format(time.RFC3339)
		if a.StartWorkflowResult.WorkflowID != want || a.ActualTime.Before(a.ScheduleTime) {
			t.Fatalf("recent action %+v, want workflow id %s", a, want)
		}
		var got string
		run := c.GetWorkflow(ctx, a.StartWorkflowResult.WorkflowID, "")
		if err := run.Get(ctx, &got); err != nil || got != "hello x" {
			t.Fatalf("run %s: %q %v", a.StartWorkflowResult.WorkflowID, got, err)
		}
	}

	if err := h.Pause(ctx, client.SchedulePauseOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, err = h.Describe(ctx); err != nil || !d.Schedule.State.Paused || d.Schedule.State.Note != "Paused via Go SDK" || len(d.Info.NextActionTimes) != 0 {
		t.Fatalf("paused: %+v %v", d, err)
	}
	// An update keeps what DoUpdate leaves, and changes the arguments.
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Action.(*client.ScheduleWorkflowAction).Args = []any{"y"}
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		return nil, client.ErrSkipScheduleUpdate
	}}); err != nil {
		t.Fatal(err)
	}
	before := d.Info.NumActions
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, err = h.Describe(ctx); err != nil || d.Info.NumActions != before+1 || !d.Schedule.State.Paused {
		t.Fatalf("after the trigger: %+v %v", d.Info, err)
	}
	last := d.Info.RecentActions[len(d.Info.RecentActions)-1]
	run := c.GetWorkflow(ctx, last.StartWorkflowResult.WorkflowID, "")
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello y" {
		t.Fatalf("triggered run: %q %v", got, err)
	}
	if err := h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "back"}); err != nil {
		t.Fatal(err)
	}

	// Temporal's schedule sample: created with no spec, triggered, then
	// given calendars and an interval, paused with ten actions left.
	sample, err := sc.Create(ctx, client.ScheduleOptions{ID: "sample", Spec: client.ScheduleSpec{},
		Action: &client.ScheduleWorkflowAction{ID: "sample-wf", Workflow: ScheduledGreeting, Args: []any{"s"}, TaskQueue: "sched"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sample.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: client.ScheduleOverlapPolicyAllowAll}); err != nil {
		t.Fatal(err)
	}
	err = sample.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		in.Description.Schedule.Spec = &client.ScheduleSpec{
			Calendars: []client.ScheduleCalendarSpec{{Hour: []client.ScheduleRange{{Start: 17}}, DayOfWeek: []client.ScheduleRange{{Start: 5}}}},
			Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}},
		}
		in.Description.Schedule.State.Paused = true
		in.Description.Schedule.State.LimitedActions = true
		in.Description.Schedule.State.RemainingActions = 10
		return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err = sample.Describe(ctx); err != nil || d.Info.NumActions != 1 || d.Schedule.State.RemainingActions != 10 ||
		len(d.Schedule.Spec.CronExpressions) != 1 || d.Schedule.Spec.CronExpressions[0] != "0 0 17 * * 5" || len(d.Schedule.Spec.Intervals) != 1 {
		t.Fatalf("the sample's schedule: %+v %+v %v", d.Schedule.Spec, d.Info, err)
	}
	// A backfill of three past hours, all at once.
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	if err := sample.Backfill(ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{
		{Start: hour, End: hour.Add(2 * time.Hour), Overlap: client.ScheduleOverlapPolicyAllowAll}}}); err != nil {
		t.Fatal(err)
	}
	if d, err = sample.Describe(ctx); err != nil || d.Info.NumActions != 4 ||
		d.Info.RecentActions[1].StartWorkflowResult.WorkflowID != "sample-wf-"+hour.Format(time.RFC3339) {
		t.Fatalf("after the backfill: %+v %v", d.Info, err)
	}
	if err := sample.Delete(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := sc.Create(ctx, client.ScheduleOptions{ID: "other", Spec: client.ScheduleSpec{CronExpressions: []string{"0 9 * * MON"}},
		Action: &client.ScheduleWorkflowAction{Workflow: "ScheduledGreeting", TaskQueue: "sched"}, Paused: true}); err != nil {
		t.Fatal(err)
	}
	it, err := sc.List(ctx, client.ScheduleListOptions{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for it.HasNext() {
		entry, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, entry.ID)
		if entry.WorkflowType.Name != "ScheduledGreeting" {
			t.Fatalf("entry %+v", entry)
		}
	}
	if len(ids) != 2 || ids[0] != "greet" || ids[1] != "other" {
		t.Fatalf("listed %v", ids)
	}
	for _, id := range ids {
		if err := sc.GetHandle(ctx, id).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Describe(ctx); !errors.Is(err, engine.ErrUnknownSchedule) {
		t.Fatalf("describe after delete: %v", err)
	}
}
