// Command cancellation shows cancellation while a workflow runs, in two
// scenes. First a workflow races a durable timer against a slow activity:
// the timer wins, and the workflow cancels the activity, whose context is
// cancelled at once in the worker running it. Then a client cancels a
// workflow that is blocked in an activity: the workflow's context is
// cancelled, the activity stops, and the workflow cleans up on a
// disconnected context before it ends as Cancelled. Both scenes check what
// happened and how fast, and the program exits 0 when all held.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// slowStarted gets a token each time Slow starts, and slowStopped counts
// the times it saw its context cancelled, so main can tell what it did.
var (
	slowStarted = make(chan struct{}, 2)
	slowStopped atomic.Int32
)

// Slow stands for a long call; it returns early when its context is
// cancelled, which is how an activity learns that nobody wants its result.
func Slow(ctx context.Context) (string, error) {
	slowStarted <- struct{}{}
	select {
	case <-time.After(20 * time.Second):
		return "slow result", nil
	case <-ctx.Done():
		slowStopped.Add(1)
		return "", ctx.Err()
	}
}

// Release is the clean-up the cancelled workflow runs.
func Release(ctx context.Context) (string, error) { return "released", nil }

// Race starts Slow and a 300 ms timer and takes whichever ends first. The
// loser is cancelled through its own context: a cancelled timer never
// fires, and a cancelled activity's context is cancelled in its worker.
// WaitForCancellation makes the activity's future wait until the activity
// has returned, so the workflow knows it stopped.
func Race(ctx workflow.Context) (string, error) {
	actCtx, cancelAct := workflow.WithCancel(ctx)
	actCtx = workflow.WithActivityOptions(actCtx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, WaitForCancellation: true,
	})
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	slow := workflow.ExecuteActivity(actCtx, Slow)
	timer := workflow.NewTimer(timerCtx, 300*time.Millisecond)

	winner := ""
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(slow, func(workflow.Future) { winner = "activity"; cancelTimer() })
	sel.AddFuture(timer, func(workflow.Future) { winner = "timer"; cancelAct() })
	sel.Select(ctx)
	if winner == "timer" {
		// The activity acknowledges the cancellation by returning; its
		// error says it was cancelled.
		err := slow.Get(ctx, nil)
		if !errors.Is(err, workflow.ErrCanceled) {
			return "", fmt.Errorf("the cancelled activity ended with %v, want a cancellation", err)
		}
	}
	return winner, nil
}

// Blocked waits in Slow until it is cancelled from outside, then releases
// what it holds on a disconnected context (its own context is cancelled, so
// activities started on it would fail at once) and ends cancelled.
func Blocked(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	err := workflow.ExecuteActivity(ctx, Slow).Get(ctx, nil)
	if !errors.Is(err, workflow.ErrCanceled) {
		return "", fmt.Errorf("Slow ended with %v, want a cancellation", err)
	}
	cleanup, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var released string
	if err := workflow.ExecuteActivity(cleanup, Release).Get(cleanup, &released); err != nil {
		return "", err
	}
	workflow.GetLogger(ctx).Info("cleaned up after cancellation", "result", released)
	return "", workflow.ErrCanceled // ends the run as Cancelled
}

func main() {
	if err := scenes(); err != nil {
		fmt.Fprintln(os.Stderr, "cancellation:", err)
		os.Exit(1)
	}
}

func scenes() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "heddle-cancel-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	w := worker.New(client.New(e), "cancel", worker.Options{})
	w.RegisterWorkflow(Race)
	w.RegisterWorkflow(Blocked)
	w.RegisterActivity(Slow)
	w.RegisterActivity(Release)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()
	c := client.New(e)

	// Scene 1: the timer fires while the activity runs, and wins.
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "race-1", TaskQueue: "cancel"}, Race)
	if err != nil {
		return err
	}
	var winner string
	if err := run.Get(ctx, &winner); err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("race-1: the %s won after %v; the activity was stopped %d time(s)\n", winner, took.Round(time.Millisecond), slowStopped.Load())
	if winner != "timer" || slowStopped.Load() != 1 || took > 10*time.Second {
		return fmt.Errorf("race-1: winner %q after %v with the activity stopped %d times; want the timer, well before the activity's 20 s, one stop",
			winner, took, slowStopped.Load())
	}

	<-slowStarted // scene 1's

	// Scene 2: cancel a workflow from outside while its activity runs.
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "blocked-1", TaskQueue: "cancel"}, Blocked)
	if err != nil {
		return err
	}
	select {
	case <-slowStarted:
	case <-ctx.Done():
		return fmt.Errorf("blocked-1 never started Slow: %w", ctx.Err())
	}
	start = time.Now()
	if err := c.CancelWorkflow(ctx, "blocked-1", ""); err != nil {
		return err
	}
	werr := run.Get(ctx, nil)
	took = time.Since(start)
	fmt.Printf("blocked-1: %v after %v\n", werr, took.Round(time.Millisecond))
	if !errors.Is(werr, workflow.ErrCanceled) || slowStopped.Load() != 2 || took > 10*time.Second {
		return fmt.Errorf("blocked-1 ended with %v after %v, Slow stopped %d times; want workflow.ErrCanceled soon, two stops in all",
			werr, took, slowStopped.Load())
	}
	j, err := c.DescribeWorkflow(ctx, "blocked-1", "")
	if err != nil {
		return err
	}
	if j.Status != engine.StatusCancelled {
		return fmt.Errorf("blocked-1 is %s, want Cancelled", j.Status)
	}
	return nil
}
