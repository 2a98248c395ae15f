package worker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// CronCount returns one more than the last completed run's result, or 1
// when there is none.
func CronCount(ctx workflow.Context) (int, error) {
	if !workflow.HasLastCompletionResult(ctx) {
		var n int
		if err := workflow.GetLastCompletionResult(ctx, &n); !errors.Is(err, workflow.ErrNoData) {
			return 0, errors.New("GetLastCompletionResult without a result did not say ErrNoData")
		}
		return 1, nil
	}
	var last int
	if err := workflow.GetLastCompletionResult(ctx, &last); err != nil {
		return 0, err
	}
	return last + 1, nil
}

// TestCronScheduleLikeTemporal starts a workflow with a cron line of every
// second: each run starts at its time, sees the last run's result, and the
// chain goes on under one workflow id until it is cancelled.
func TestCronScheduleLikeTemporal(t *testing.T) {
	e := open(t)
	startWorker(t, e, "cron", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(CronCount) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bad-cron", TaskQueue: "cron", CronSchedule: "every day"}, CronCount); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a bad cron line: %v", err)
	}
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "counter", TaskQueue: "cron", CronSchedule: "* * * * * *"}, CronCount)
	if err != nil {
		t.Fatal(err)
	}
	// Three runs: each completed run's result is the next one's last
	// completion result.
	var runs []*engine.Job
	for len(runs) < 3 {
		time.Sleep(100 * time.Millisecond)
		page, err := c.ListWorkflows(ctx, engine.ListQuery{Type: "CronCount", Status: engine.StatusCompleted, Order: engine.ListStartAsc})
		if err != nil {
			t.Fatal(err)
		}
		runs = page.Jobs
	}
	var prev []byte
	for i, j := range runs[:3] {
		hist, err := c.GetWorkflowHistory(ctx, "counter", strconv.FormatUint(uint64(j.ID), 10))
		if err != nil {
			t.Fatal(err)
		}
		created, end := hist[0], hist[len(hist)-1]
		if string(created.LastResult) != string(prev) || end.Type != engine.EventJobCompleted || end.Reason != engine.ReasonCronNext {
			t.Fatalf("run %d: last result %s (want %s), ended %s (%s)", i, created.LastResult, prev, end.Type, end.Reason)
		}
		// It waited for a whole second.
		if hold := hist[1]; hold.Type != engine.EventJobRequeued || (hold.AtMS+hold.DelayMS)%1000 != 0 || hold.AtMS < start.UnixMilli() {
			t.Fatalf("run %d: held back by %+v", i, hold)
		}
		var n int
		if err := converter.Decode(end.Payload, &n); err != nil || n != i+1 {
			t.Fatalf("run %d returned %d (%v), want %d", i, n, err, i+1)
		}
		prev = end.Payload
	}
	if err := c.TerminateWorkflow(ctx, "counter", "", "enough"); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("Get after the chain was terminated: %v", err)
	}
}
