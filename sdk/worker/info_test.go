package worker_test

// workflow.GetInfo and activity.GetInfo in Temporal's shape, local
// activities, and the typed heartbeat details a heartbeat timeout carries.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// describeInfo writes what a workflow's Info says.
func describeInfo(i *workflow.Info) string {
	parent := "none"
	if p := i.ParentWorkflowExecution; p != nil {
		parent = p.ID + "/" + p.RunID
	}
	return fmt.Sprintf("%s/%s %s queue=%s attempt=%d parent=%s ns=%s", i.WorkflowExecution.ID, i.WorkflowExecution.RunID,
		i.WorkflowType.Name, i.TaskQueueName, i.Attempt, parent, i.Namespace)
}

// InfoChild reports its own Info and its activity's.
func InfoChild(ctx workflow.Context) (string, error) {
	i := workflow.GetInfo(ctx)
	if err := workflow.SetQueryHandler(ctx, "info", func() (string, error) { return describeInfo(i), nil }); err != nil {
		return "", err
	}
	if i.WorkflowID != i.WorkflowExecution.ID || i.RunID != i.WorkflowExecution.RunID || i.TaskQueue != i.TaskQueueName {
		return "", errors.New("heddle's names disagree with Temporal's")
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: time.Minute})
	var act string
	if err := workflow.ExecuteActivity(ctx, ActivityInfo).Get(ctx, &act); err != nil {
		return "", err
	}
	return describeInfo(i) + " | " + act, nil
}

// ActivityInfo reports its Info.
func ActivityInfo(ctx context.Context) (string, error) {
	i := activity.GetInfo(ctx)
	if !activity.IsActivity(ctx) || i.Deadline.IsZero() || i.ScheduledTime.IsZero() || i.StartedTime.Before(i.ScheduledTime) {
		return "", fmt.Errorf("times: %+v", i)
	}
	return fmt.Sprintf("%s id=%s by %s/%s %s queue=%s attempt=%d local=%v hb=%v", i.ActivityType.Name, i.ActivityID,
		i.WorkflowExecution.ID, i.WorkflowExecution.RunID, i.WorkflowType.GetName(), i.TaskQueue, i.Attempt, i.IsLocalActivity, i.HeartbeatTimeout), nil
}

// InfoParent starts InfoChild and compares what the child reports with
// the execution its future gives.
func InfoParent(ctx workflow.Context) (string, error) {
	f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "info-child"}), InfoChild)
	var exe workflow.Execution
	if err := f.GetChildWorkflowExecution().Get(ctx, &exe); err != nil {
		return "", err
	}
	var got string
	if err := f.Get(ctx, &got); err != nil {
		return "", err
	}
	return exe.ID + "/" + exe.RunID + " => " + got, nil
}

func TestWorkflowAndActivityInfo(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		e := open(t)
		w := startWorker(t, e, "info", worker.Options{CacheSize: cache}, func(w worker.Worker) {
			w.RegisterWorkflow(InfoParent)
			w.RegisterWorkflow(InfoChild)
			w.RegisterActivity(ActivityInfo)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := client.NewWithOptions(service(t, e), client.Options{Querier: querier(t, e, "info", w)})
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "info-parent", TaskQueue: "info"}, InfoParent)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := run.Get(ctx, &got); err != nil {
			t.Fatal(err)
		}
		child, err := c.DescribeWorkflow(ctx, "info-child", "")
		if err != nil {
			t.Fatal(err)
		}
		cr, pr := strconv.FormatUint(uint64(child.ID), 10), run.GetRunID()
		want := fmt.Sprintf("info-child/%s => info-child/%s InfoChild queue=info attempt=1 parent=info-parent/%s ns=default | "+
			"ActivityInfo id=1 by info-child/%s InfoChild queue=info attempt=1 local=false hb=1m0s", cr, cr, pr, cr)
		if got != want {
			t.Fatalf("info\n got %s\nwant %s", got, want)
		}
		// A query replays the child with the Info it ran with.
		v, err := c.QueryWorkflow(ctx, "info-child", "", "info")
		if err != nil {
			t.Fatal(err)
		}
		var queried string
		if err := v.Get(&queried); err != nil || !strings.HasPrefix(want[strings.Index(want, "=> ")+3:], queried) {
			t.Fatalf("query answered %q, %v; want the Info of %q", queried, err, want)
		}
	})
}

// FailsFirstRun fails its first run; a workflow retry runs it again, with
// Attempt 2.
func FailsFirstRun(ctx workflow.Context) (string, error) {
	i := workflow.GetInfo(ctx)
	if i.Attempt == 1 {
		return "", temporal.NewApplicationError("first run fails", "Flaky")
	}
	return describeInfo(i), nil
}

// Info.Attempt numbers the runs of a workflow retry policy, as in Temporal.
func TestWorkflowInfoAttemptCountsRetries(t *testing.T) {
	e := open(t)
	startWorker(t, e, "info", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(FailsFirstRun) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "flaky", TaskQueue: "info",
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 3}}, FailsFirstRun)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "attempt=2 parent=none"; !strings.Contains(got, want) {
		t.Fatalf("info %q lacks %q", got, want)
	}
}

var localCalls atomic.Int32

// notRegistered is a local activity no worker registers: the workflow
// passes the function itself.
func notRegistered(ctx context.Context, n int) (string, error) {
	if localCalls.Add(1) == 1 {
		return "", errors.New("flaky once")
	}
	i := activity.GetInfo(ctx)
	return fmt.Sprintf("%d local=%v attempt=%d", n*2, i.IsLocalActivity, i.Attempt), nil
}

// LocalFlow runs local activities: a function no one registered (retried
// by its policy), one registered by name, and one without timeouts, which
// Temporal refuses.
func LocalFlow(ctx workflow.Context) (string, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond}})
	var a, b string
	if err := workflow.ExecuteLocalActivity(lctx, notRegistered, 21).Get(ctx, &a); err != nil {
		return "", err
	}
	if err := workflow.ExecuteLocalActivity(lctx, "ActivityInfo").Get(ctx, &b); err != nil {
		return "", err
	}
	// A method of a nil struct pointer runs as the method of the struct
	// the worker registered, as in Temporal.
	var shop *Shop
	var price string
	if err := workflow.ExecuteLocalActivity(lctx, shop.Price, "jam").Get(ctx, &price); err != nil {
		return "", err
	}
	err := workflow.ExecuteLocalActivity(ctx, notRegistered, 1).Get(ctx, nil)
	if err == nil {
		return "", errors.New("a local activity without timeouts ran")
	}
	return a + " | " + b + " | " + price, nil
}

func TestLocalActivities(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		localCalls.Store(0)
		e := open(t)
		startWorker(t, e, "local", worker.Options{CacheSize: cache}, func(w worker.Worker) {
			w.RegisterWorkflow(LocalFlow)
			w.RegisterActivity(ActivityInfo)
			w.RegisterActivity(&Shop{currency: "GBP"})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "local", TaskQueue: "local"}, LocalFlow)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := run.Get(ctx, &got); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("42 local=true attempt=2 | ActivityInfo id=2 by local/%s LocalFlow queue=local attempt=1 local=true hb=0s | jam 3 GBP", run.GetRunID())
		if got != want || localCalls.Load() != 2 {
			t.Fatalf("result %q after %d calls\nwant %q after 2", got, localCalls.Load(), want)
		}
	})
}

// GivesUpHeartbeating records progress, then stops heartbeating.
func GivesUpHeartbeating(ctx context.Context) error {
	activity.RecordHeartbeat(ctx, "half", 50)
	<-ctx.Done()
	return ctx.Err()
}

// HeartbeatTimeoutFlow reports the details of its activity's heartbeat
// timeout.
func HeartbeatTimeoutFlow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{HeartbeatTimeout: 200 * time.Millisecond,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	err := workflow.ExecuteActivity(ctx, GivesUpHeartbeating).Get(ctx, nil)
	var te *temporal.TimeoutError
	if !errors.As(err, &te) {
		return "", fmt.Errorf("got %v, want a TimeoutError", err)
	}
	var what string
	var pct int
	if err := te.LastHeartbeatDetails(&what, &pct); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %d%%", te.TimeoutType(), what, pct), nil
}

// A heartbeat timeout is a *temporal.TimeoutError carrying the last
// heartbeat's details, as in Temporal.
func TestHeartbeatTimeoutCarriesTheDetails(t *testing.T) {
	e := open(t)
	startWorker(t, e, "hbto", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(HeartbeatTimeoutFlow)
		w.RegisterActivity(GivesUpHeartbeating)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "hbto"}, HeartbeatTimeoutFlow)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "Heartbeat half 50%" {
		t.Fatalf("result %q", got)
	}
}
