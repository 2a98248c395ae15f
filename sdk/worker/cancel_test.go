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

var (
	activityStarted   = make(chan struct{}, 1)
	activityCancelled = make(chan struct{}, 1)
)

// LongRunning blocks until its context is cancelled.
func LongRunning(ctx context.Context) error {
	activityStarted <- struct{}{}
	<-ctx.Done()
	activityCancelled <- struct{}{}
	return ctx.Err()
}

// Sleeper is a child that waits for a signal that never comes.
func Sleeper(ctx workflow.Context) error {
	var v string
	workflow.GetSignalChannel(ctx, "never").Receive(ctx, &v)
	return nil
}

// Supervisor starts a child, then runs a long activity; a cancel request
// reaches both.
func Supervisor(ctx workflow.Context) error {
	child := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "sleeper"}), Sleeper)
	_ = child
	err := workflow.ExecuteActivity(ctx, LongRunning).Get(ctx, nil)
	if ctx.Err() != nil {
		return workflow.ErrCanceled
	}
	return err
}

func TestCancellationReachesActivitiesAndChildren(t *testing.T) {
	forEachCache(t, testCancellationReachesActivitiesAndChildren)
}

func testCancellationReachesActivitiesAndChildren(t *testing.T, cache int) {
	e := open(t)
	w := startWorker(t, e, "sup", worker.Options{CacheSize: cache, LeaseTTL: 300 * time.Millisecond})
	w.RegisterWorkflow(Supervisor)
	w.RegisterWorkflow(Sleeper)
	w.RegisterActivity(LongRunning)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sup", TaskQueue: "sup"}, Supervisor)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-activityStarted:
	case <-ctx.Done():
		t.Fatal("the activity never started")
	}
	if err := c.CancelWorkflow(ctx, "sup", ""); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		t.Fatalf("Get = %v, want ErrCanceled", err)
	}
	// The workflow does not wait for the activity to acknowledge (no
	// WaitForCancellation): the activity sees its context cancelled when
	// the workflow's cancellation reaches it, which may come after the run
	// closed.
	select {
	case <-activityCancelled:
	case <-ctx.Done():
		t.Fatal("the running activity's context was not cancelled")
	}
	child, err := c.DescribeWorkflow(ctx, "sleeper", "")
	if err != nil {
		t.Fatal(err)
	}
	if child.Status != engine.StatusTerminated {
		t.Fatalf("child is %s, want Terminated (parent-close policy Terminate)", child.Status)
	}
	verify(t, e)
}
