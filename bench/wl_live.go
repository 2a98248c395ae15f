package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The race: an activity of raceActivity against a timer of raceTimer.
const (
	raceActivity = 200 * time.Millisecond
	raceTimer    = 50 * time.Millisecond
)

// Racer marks its start, then races an activity of raceActivity against a
// timer of raceTimer: the timer wins while the activity runs, the activity
// is cancelled, and Woke marks when the workflow code saw the timer.
func Racer(ctx workflow.Context, i int) error {
	ctx = withActivityOptions(ctx)
	if err := workflow.ExecuteActivity(ctx, "Mark", i).Get(ctx, nil); err != nil {
		return err
	}
	actCtx, cancel := workflow.WithCancel(ctx)
	act := workflow.ExecuteActivity(actCtx, "Work", i)
	won := ""
	s := workflow.NewSelector(ctx)
	s.AddFuture(workflow.NewTimer(ctx, raceTimer), func(workflow.Future) { won = "timer" })
	s.AddFuture(act, func(workflow.Future) { won = "activity" })
	s.Select(ctx)
	cancel()
	if won != "timer" {
		return fmt.Errorf("bench: the %v activity beat the %v timer", raceActivity, raceTimer)
	}
	return workflow.ExecuteActivity(ctx, "Woke", i).Get(ctx, nil)
}

// runRace: N racers started together; time-to-timer is the wall time from
// the activity before the race to the activity after the timer won.
func runRace(r *runner) error {
	if err := r.open("race"); err != nil {
		return err
	}
	marks := make([]time.Time, r.n)
	wakes := make([]time.Time, r.n)
	var mu sync.Mutex
	bar := r.bar("races", r.n)
	m := newMeter(bar)
	// stamp keeps the first time of i (a replayed activity runs again).
	stamp := func(at []time.Time, i int) bool {
		mu.Lock()
		defer mu.Unlock()
		first := at[i].IsZero()
		if first {
			at[i] = time.Now()
		}
		return first
	}
	acts := map[string]any{
		"Mark": func(_ context.Context, i int) error { stamp(marks, i); return nil },
		"Woke": func(_ context.Context, i int) error {
			if stamp(wakes, i) {
				m.done()
			}
			return nil
		},
		"Work": func(ctx context.Context, _ int) error {
			select {
			case <-time.After(raceActivity):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
	if _, err := r.worker(queue, 0, acts); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	runs := make([]client.WorkflowRun, r.n)
	start := time.Now()
	err := spread(r.n, r.starters, func(i int) error {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("race-%d", i), TaskQueue: queue}, Racer, i)
		runs[i] = run
		return err
	})
	if err == nil {
		err = spread(r.n, r.starters, func(i int) error { return runs[i].Get(ctx, nil) })
	}
	elapsed := time.Since(start)
	bar.finish()
	if err != nil {
		return err
	}
	took := make([]time.Duration, r.n)
	for i := range took {
		took[i] = wakes[i].Sub(marks[i])
	}
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	r.samples(took, fmt.Sprintf("time to timer: from the activity before a race of a %v activity against a %v timer to the activity after the timer won", raceActivity, raceTimer), m, elapsed)
	// The path: the mark's commit, the timer set while the activity runs,
	// fired, seen; the woke activity's start.
	r.latency("p99 time to timer ms", r.res.LatencyMS.P99, 3, "p99", ceil)
	r.res.Extra["p50 time to timer ms"] = r.res.LatencyMS.P50
	r.res.Extra["timer ms"] = float64(raceTimer / time.Millisecond)
	return nil
}

// remoteQueue is where Holder sends its activity when it runs remotely.
const remoteQueue = "bench-remote"

// cancelHeartbeat is how often Hold heartbeats: a remote activity learns of
// its cancellation from a heartbeat's answer.
const cancelHeartbeat = 50 * time.Millisecond

// Holder runs Hold, in its own worker or on remoteQueue, until the
// workflow is asked to cancel; it then ends cancelled.
func Holder(ctx workflow.Context, i int, remote bool) error {
	opts := workflow.ActivityOptions{StartToCloseTimeout: time.Hour, WaitForCancellation: true,
		RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}}
	if remote {
		opts.TaskQueue = remoteQueue
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), "Hold", i).Get(ctx, nil)
}

// runCancel: N workflows, one at a time, each running an activity that
// holds until cancelled; the bench asks the workflow to cancel once the
// activity runs, and measures until the activity's context is done. Half
// the activities run in the workflow's worker (in-process), half on
// another task queue (remote: the cancellation reaches them by their next
// heartbeat's answer).
func runCancel(r *runner) error {
	if err := r.open("cancel"); err != nil {
		return err
	}
	started := make(chan int, 1)
	var mu sync.Mutex
	done := make([]time.Time, r.n)
	hold := func(ctx context.Context, i int) error {
		started <- i
		for {
			select {
			case <-ctx.Done():
				mu.Lock()
				done[i] = time.Now()
				mu.Unlock()
				return ctx.Err()
			case <-time.After(cancelHeartbeat):
				activity.RecordHeartbeat(ctx)
			}
		}
	}
	acts := map[string]any{"Hold": hold}
	if _, err := r.worker(queue, 0, acts); err != nil {
		return err
	}
	if _, err := r.worker(remoteQueue, 0, acts); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	bar := r.bar("cancellations", r.n)
	m := newMeter(bar)
	lat := [2][]time.Duration{} // in-process, remote
	start := time.Now()
	for i := range r.n {
		remote := i%2 == 1
		id := fmt.Sprintf("cancel-%d", i)
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, Holder, i, remote)
		if err != nil {
			return err
		}
		if got := <-started; got != i {
			return fmt.Errorf("bench: activity %d started while waiting for %d", got, i)
		}
		asked := time.Now()
		if err := c.CancelWorkflow(ctx, id, ""); err != nil {
			return err
		}
		if err := run.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
			return fmt.Errorf("bench: cancelled workflow %s ended with %v", id, err)
		}
		mu.Lock()
		took := done[i].Sub(asked)
		mu.Unlock()
		lat[i%2] = append(lat[i%2], took)
		m.done()
	}
	elapsed := time.Since(start)
	bar.finish()
	ceil, err := r.ceiling(commandPayloadBytes, 1, 0)
	if err != nil {
		return err
	}
	local, far := Summarize(lat[0]), Summarize(lat[1])
	r.samples(lat[0], "in-process cancellation: from the cancel request until the activity's context is done", m, elapsed)
	// In-process, the path is the cancel request's commit, then the
	// workflow's watch sees it and cancels the activity at once.
	r.latency("p99 in-process cancellation ms", local.P99, 1, "p99", ceil)
	r.res.Extra["p50 in-process cancellation ms"] = local.P50
	r.res.Extra["p50 remote cancellation ms"] = far.P50
	r.res.Extra["p99 remote cancellation ms"] = far.P99
	r.res.Extra["remote heartbeat ms"] = float64(cancelHeartbeat / time.Millisecond)
	return nil
}
