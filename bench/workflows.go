package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The bench's workflows. Activities that tell the bench something (a
// wake-up, a signal's arrival) are registered by name per run, as closures
// over the run's state; Noop is shared.

// Noop is a no-op activity.
func Noop(context.Context) error { return nil }

func withActivityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
}

// Seq3 runs three no-op activities in sequence.
func Seq3(ctx workflow.Context) error {
	ctx = withActivityOptions(ctx)
	for range 3 {
		if err := workflow.ExecuteActivity(ctx, Noop).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// ParentOfOne starts one child workflow of the given workflow id, which
// runs one no-op activity, and returns once the child has ended.
func ParentOfOne(ctx workflow.Context, childID string) error {
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: childID})
	return workflow.ExecuteChildWorkflow(ctx, Child).Get(ctx, nil)
}

// Child runs one no-op activity.
func Child(ctx workflow.Context) error {
	return workflow.ExecuteActivity(withActivityOptions(ctx), Noop).Get(ctx, nil)
}

// Sleeper marks the time, sleeps until untilMS (Unix ms) and reports the
// time it woke: the activities "Mark" and "Woke" stamp the wall clock for
// workflow i. Every run of the timer workload sleeps until the same instant,
// so all its timers fall due at once.
func Sleeper(ctx workflow.Context, i int, untilMS int64) error {
	ctx = withActivityOptions(ctx)
	if err := workflow.ExecuteActivity(ctx, "Mark", i).Get(ctx, nil); err != nil {
		return err
	}
	if err := workflow.Sleep(ctx, time.UnixMilli(untilMS).Sub(workflow.Now(ctx))); err != nil {
		return err
	}
	return workflow.ExecuteActivity(ctx, "Woke", i).Get(ctx, nil)
}

// Fanout runs n no-op activities in parallel and waits for them all.
func Fanout(ctx workflow.Context, n int) error {
	ctx = withActivityOptions(ctx)
	fs := make([]workflow.Future, n)
	for i := range fs {
		fs[i] = workflow.ExecuteActivity(ctx, Noop)
	}
	for _, f := range fs {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Pinger receives n "ping" signals and answers each with the activity
// "Pong", which tells the bench the signal reached the workflow's code.
func Pinger(ctx workflow.Context, n int) error {
	ctx = withActivityOptions(ctx)
	ch := workflow.GetSignalChannel(ctx, "ping")
	for range n {
		var i int
		ch.Receive(ctx, &i)
		if err := workflow.ExecuteActivity(ctx, "Pong", i).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Long builds a long history, acts no-op activities in parallel rounds
// of 64, then answers two "go" signals with the activity "Pong".
func Long(ctx workflow.Context, acts int) error {
	ctx = withActivityOptions(ctx)
	for done := 0; done < acts; {
		k := min(64, acts-done)
		fs := make([]workflow.Future, k)
		for i := range fs {
			fs[i] = workflow.ExecuteActivity(ctx, Noop)
		}
		for _, f := range fs {
			if err := f.Get(ctx, nil); err != nil {
				return err
			}
		}
		done += k
	}
	ch := workflow.GetSignalChannel(ctx, "go")
	for range 2 {
		var i int
		ch.Receive(ctx, &i)
		if err := workflow.ExecuteActivity(ctx, "Pong", i).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Idler waits for one "go" signal.
func Idler(ctx workflow.Context) error {
	var v int
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	return nil
}

func registerWorkflows(w worker.Worker) {
	w.RegisterWorkflow(Seq3)
	w.RegisterWorkflow(ParentOfOne)
	w.RegisterWorkflow(Child)
	w.RegisterWorkflow(Sleeper)
	w.RegisterWorkflow(Fanout)
	w.RegisterWorkflow(Pinger)
	w.RegisterWorkflow(Long)
	w.RegisterWorkflow(Idler)
	w.RegisterWorkflow(Racer)
	w.RegisterWorkflow(Holder)
	w.RegisterWorkflow(UseUnit)
	w.RegisterActivity(Noop)
}

// spread runs op(0..n-1) from workers goroutines and returns the first
// error; after an error the remaining operations are skipped.
func spread(n, workers int, op func(i int) error) error {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for firstErr.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	err, _ := firstErr.Load().(error)
	return err
}
