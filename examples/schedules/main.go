// Command schedules runs a workflow every second from a schedule, as
// Temporal's schedules do: the engine starts each run at its time (named
// after the schedule and the time), the worker runs it, and the client
// pauses, triggers, updates and deletes the schedule. The program checks
// what the runs returned and what the schedule counted, and exits 1 if
// either is wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Report stands for a periodic job: it says which report it made.
func Report(ctx workflow.Context, kind string) (string, error) {
	return kind + " report by " + workflow.GetInfo(ctx).WorkflowID, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "schedules:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "heddle-schedules-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	w := worker.New(client.New(e), "reports", worker.Options{})
	w.RegisterWorkflow(Report)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	c := client.New(e)
	h, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      "reports",
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Second}}},
		Action:  &client.ScheduleWorkflowAction{Workflow: Report, Args: []any{"hourly"}, TaskQueue: "reports"},
		Overlap: client.ScheduleOverlapPolicyBufferOne,
	})
	if err != nil {
		return err
	}
	// Three seconds pass: three runs, each named after its time.
	var d *client.ScheduleDescription
	for d == nil || d.Info.NumActions < 3 {
		time.Sleep(200 * time.Millisecond)
		if d, err = h.Describe(ctx); err != nil {
			return err
		}
	}
	if err := h.Pause(ctx, client.SchedulePauseOptions{Note: "quiet hours"}); err != nil {
		return err
	}
	for _, a := range d.Info.RecentActions[:3] {
		var got string
		r := c.GetWorkflow(ctx, a.StartWorkflowResult.WorkflowID, "")
		if err := r.Get(ctx, &got); err != nil {
			return err
		}
		fmt.Printf("%s at %s: %s\n", a.StartWorkflowResult.WorkflowID, a.ActualTime.Format("15:04:05.000"), got)
		if want := "reports-" + a.ScheduleTime.UTC().Format(time.RFC3339); !strings.HasSuffix(got, want) {
			return fmt.Errorf("run %s said %q, want it named %s", a.StartWorkflowResult.WorkflowID, got, want)
		}
	}
	// Paused, the spec takes no action, but a trigger still does; an
	// update changes the arguments of the runs to come.
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Action.(*client.ScheduleWorkflowAction).Args = []any{"special"}
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if err != nil {
		return err
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: client.ScheduleOverlapPolicyAllowAll}); err != nil {
		return err
	}
	if d, err = h.Describe(ctx); err != nil {
		return err
	}
	last := d.Info.RecentActions[len(d.Info.RecentActions)-1]
	r := c.GetWorkflow(ctx, last.StartWorkflowResult.WorkflowID, "")
	var got string
	if err := r.Get(ctx, &got); err != nil {
		return err
	}
	fmt.Printf("triggered while paused (%q): %s\n", d.Schedule.State.Note, got)
	if !strings.HasPrefix(got, "special report") || !d.Schedule.State.Paused {
		return fmt.Errorf("the trigger's run said %q (paused: %v)", got, d.Schedule.State.Paused)
	}
	if err := h.Delete(ctx); err != nil {
		return err
	}
	fmt.Printf("schedule reports: %d actions, %d skipped by overlap, deleted\n", d.Info.NumActions, d.Info.NumActionsSkippedOverlap)
	return nil
}
