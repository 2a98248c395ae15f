package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// probingClock is a manual clock that records what the worker's turns tell
// a clock implementing sdkhook.TurnProbe (as package testsuite's does).
type probingClock struct {
	*clock.Manual
	mu    sync.Mutex
	waits []probeWait
	open  int // waits whose done was not called yet
}

type probeWait struct {
	job, seen uint64
	inflight  int
}

func (c *probingClock) TurnWaiting(job, seenSeq uint64, inflight int, _ time.Time) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, probeWait{job, seenSeq, inflight})
	c.open++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.open--
	}
}

// Deadline reports the deadline of its context, as the worker set it.
func Deadline(ctx context.Context) (time.Duration, error) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, nil
	}
	return time.Until(d), nil
}

// TwoAtOnce runs two activities at once under a schedule-to-close timeout.
func TwoAtOnce(ctx workflow.Context) (time.Duration, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ScheduleToCloseTimeout: time.Minute})
	a := workflow.ExecuteActivity(ctx, Deadline)
	b := workflow.ExecuteActivity(ctx, Deadline)
	var da, db time.Duration
	if err := a.Get(ctx, &da); err != nil {
		return 0, err
	}
	if err := b.Get(ctx, &db); err != nil {
		return 0, err
	}
	return min(da, db), nil
}

// A worker whose clock asks (sdkhook.TurnProbe) is told when a turn waits
// for its inline activities, with the history it has seen and how many
// activities it runs, and when the wait ends. And an activity's
// schedule-to-close timeout is the time left on the worker's clock, even
// when that clock reads a time long past.
func TestClockProbeAndScheduleToCloseOnAManualClock(t *testing.T) {
	clk := &probingClock{Manual: clock.NewManual(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))}
	e, err := embedded.Open(embedded.Config{InMemory: true, Clock: clk.Manual})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	startWorkerOn(t, e, "seam", worker.Options{Clock: clk}, func(w worker.Worker) {
		w.RegisterWorkflow(TwoAtOnce)
		w.RegisterActivity(Deadline)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(e).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "seam", TaskQueue: "seam"}, TwoAtOnce)
	if err != nil {
		t.Fatal(err)
	}
	var left time.Duration
	if err := run.Get(ctx, &left); err != nil {
		t.Fatalf("Get = %v; a deadline in the clock's past would have timed the activities out", err)
	}
	if left < 50*time.Second || left > time.Minute {
		t.Fatalf("the activities had %v left of their minute", left)
	}
	j, err := client.New(e).DescribeWorkflow(ctx, "seam", "")
	if err != nil {
		t.Fatal(err)
	}
	clk.mu.Lock()
	defer clk.mu.Unlock()
	if len(clk.waits) == 0 || clk.open != 0 {
		t.Fatalf("waits %+v, %d still open; want at least one, all ended", clk.waits, clk.open)
	}
	for _, w := range clk.waits {
		if w.job != uint64(j.ID) || w.seen == 0 || w.seen >= j.LastSeq || w.inflight < 1 || w.inflight > 2 {
			t.Fatalf("wait %+v of run %d (last seq %d): want this run, a seen seq inside its history, 1 or 2 activities", w, j.ID, j.LastSeq)
		}
	}
}
