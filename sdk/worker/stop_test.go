package worker_test

import (
	"context"
	"testing"
	"time"

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
