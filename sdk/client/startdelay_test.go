package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// StartedAt returns the wall time its code first runs at (a side effect,
// so that a replay gives the first run's time back).
func StartedAt(ctx workflow.Context) (time.Time, error) {
	var at time.Time
	err := workflow.SideEffect(ctx, func(workflow.Context) any { return time.Now() }).Get(&at)
	return at, err
}

// StartDelay holds the run back (Retrying) until the delay has passed, over
// an embedded engine and through a node; a negative delay and one with a
// cron line are refused.
func TestStartDelay(t *testing.T) {
	e := openEngine(t)
	for _, over := range []string{"embedded", "http"} {
		t.Run(over, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := client.New(e)
			if over == "http" {
				var err error
				if c, err = client.Dial(client.Options{HostPort: serve(t, e)}); err != nil {
					t.Fatal(err)
				}
				defer c.Close()
			}
			queue := "delay-" + over
			w := worker.New(c, queue, worker.Options{})
			w.RegisterWorkflow(StartedAt)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			const delay = 500 * time.Millisecond
			before := time.Now()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue, StartDelay: delay, EnableEagerStart: true}, StartedAt)
			if err != nil {
				t.Fatal(err)
			}
			j, err := c.DescribeWorkflow(ctx, run.GetID(), run.GetRunID())
			if err != nil {
				t.Fatal(err)
			}
			if j.Status != engine.StatusRetrying || j.ReleaseAtMS < before.Add(delay).UnixMilli() {
				t.Fatalf("just started: %s, release at %d, want Retrying until at least %d", j.Status, j.ReleaseAtMS, before.Add(delay).UnixMilli())
			}
			var at time.Time
			if err := run.Get(ctx, &at); err != nil {
				t.Fatal(err)
			}
			// Engine times are whole milliseconds (the start's time is
			// cut to its millisecond), and the scheduler wakes at the
			// release's instant, so the run may begin up to a millisecond
			// before before+delay read in nanoseconds; compare at the
			// engine's resolution, as the release check above does.
			if at.UnixMilli() < before.Add(delay).UnixMilli() {
				t.Fatalf("the workflow ran at %v, before its delay ended at %v", at, before.Add(delay))
			}
			for _, opts := range []client.StartWorkflowOptions{
				{TaskQueue: queue, StartDelay: -time.Second},
				{TaskQueue: queue, StartDelay: time.Second, CronSchedule: "* * * * *"},
			} {
				if _, err := c.ExecuteWorkflow(ctx, opts, StartedAt); err == nil {
					t.Errorf("%+v was accepted", opts)
				}
			}
		})
	}
}
