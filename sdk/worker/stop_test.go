package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// BlockedFlow runs Blocker, which holds until cancelled.
func BlockedFlow(ctx workflow.Context, key string) (string, error) {
	var s string
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, liveOptions()), Blocker, key).Get(ctx, &s)
	return s, err
}

// Stop waits up to WorkerStopTimeout for the jobs in hand, then leaves
// them to their leases and cancels their activities: a worker whose
// activity never ends still stops, as Temporal's does on Ctrl-C.
func TestStopIsBoundedByWorkerStopTimeout(t *testing.T) {
	key := newProbe(t)
	e := open(t)
	c := client.New(service(t, e))
	w := worker.New(c, "stop", worker.Options{WorkerStopTimeout: 100 * time.Millisecond})
	w.RegisterWorkflow(BlockedFlow)
	w.RegisterActivity(Blocker)
	stop := make(chan any)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(stop) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "stop"}, BlockedFlow, key); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).started, "the activity's start")
	close(stop) // as worker.InterruptCh() does on SIGINT
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after its interrupt channel closed")
	}
	await(t, ctx, probeOf(key).cancelled, "the abandoned activity's cancellation")
}

// StopAware returns when its worker is asked to stop.
func StopAware(ctx context.Context, key string) error {
	p := probeOf(key)
	p.started <- struct{}{}
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		p.cancelled <- struct{}{}
		return errors.New("the worker is stopping")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func StopAwareFlow(ctx workflow.Context, key string) error {
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, liveOptions()), StopAware, key).Get(ctx, nil)
}

// GetWorkerStopChannel is closed when Stop is called, before the drain
// ends, so a long activity can end early and let the worker stop.
func TestWorkerStopChannel(t *testing.T) {
	key := newProbe(t)
	e := open(t)
	c := client.New(service(t, e))
	w := worker.New(c, "stop", worker.Options{WorkerStopTimeout: time.Minute})
	w.RegisterWorkflow(StopAwareFlow)
	w.RegisterActivity(StopAware)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "stop"}, StopAwareFlow, key); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).started, "the activity's start")
	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	await(t, ctx, probeOf(key).cancelled, "the activity seeing the stop channel closed")
	await(t, ctx, stopped, "Stop returning once the activity returned")
}
