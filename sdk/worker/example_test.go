package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// busyCalls counts the calls of Flaky, so that it fails only the first time.
var busyCalls atomic.Int32

// Flaky is an activity that fails on its first attempt.
func Flaky(ctx context.Context) (string, error) {
	info := activity.GetInfo(ctx)
	if busyCalls.Add(1) == 1 {
		return "", fmt.Errorf("attempt %d: the service is busy", info.Attempt)
	}
	return fmt.Sprintf("attempt %d: done", info.Attempt), nil
}

// Retrying runs Flaky under a retry policy.
func Retrying(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 3},
	})
	var out string
	err := workflow.ExecuteActivity(ctx, Flaky).Get(ctx, &out)
	return out, err
}

// A worker serves one task queue: it claims the queue's workflow runs,
// replays or resumes their code, and runs their activities in this process
// under the activities' timeouts and retry policies. The zero Options are
// valid; the fields say what each default is.
func ExampleNew() {
	busyCalls.Store(0)
	ctx := context.Background()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			log.Print(err)
		}
	}()
	w := worker.New(client.New(e), "jobs", worker.Options{
		MaxConcurrentJobs: 16,               // runs driven at once (default 64)
		LeaseTTL:          10 * time.Second, // a crashed worker's runs move on after this (default 30 s)
	})
	w.RegisterWorkflow(Retrying)
	w.RegisterActivity(Flaky)
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	// Stop drains: runs in hand reach their next commit point first.
	defer func() {
		if err := w.Shutdown(ctx); err != nil {
			log.Print(err)
		}
	}()

	run, err := client.New(e).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "jobs"}, Retrying)
	if err != nil {
		log.Fatal(err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: attempt 2: done
}

// Upper is the activity of the replayed workflows.
func Upper(ctx context.Context, s string) (string, error) { return s + "!", nil }

// Shout is version 1 of a workflow: one activity.
func Shout(ctx workflow.Context, s string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, Upper, s).Get(ctx, &out)
	return out, err
}

// ShoutV2 changed Shout without workflow.GetVersion: it sleeps before the
// activity, so a history recorded by Shout no longer matches it.
func ShoutV2(ctx workflow.Context, s string) (string, error) {
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return "", err
	}
	return Shout(ctx, s)
}

// A WorkflowReplayer checks, without an engine, that changed workflow code
// still replays the histories of runs recorded with the old code: the check
// to run in CI before deploying. Export histories with
// client.GetWorkflowHistory and worker.ExportHistoryJSON (files in
// testdata/, read by ReplayWorkflowHistoryFromJSONFile).
func ExampleWorkflowReplayer() {
	ctx := context.Background()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	w := worker.New(client.New(e), "shouts", worker.Options{})
	w.RegisterWorkflow(Shout)
	w.RegisterActivity(Upper)
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	c := client.New(e)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "shout-1", TaskQueue: "shouts"}, Shout, "hey")
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		log.Fatal(err)
	}
	history, err := c.GetWorkflowHistory(ctx, "shout-1", "")
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	if err := worker.ExportHistoryJSON(&file, history); err != nil {
		log.Fatal(err)
	}
	if err := errors.Join(w.Shutdown(ctx), e.Close()); err != nil {
		log.Fatal(err)
	}

	recorded, err := worker.ReadHistoryJSON(&file)
	if err != nil {
		log.Fatal(err)
	}
	same := worker.NewWorkflowReplayer()
	same.RegisterWorkflow(Shout)
	fmt.Println("the same code:", same.ReplayWorkflowHistory(nil, recorded))

	changed := worker.NewWorkflowReplayer()
	changed.RegisterWorkflowWithName(ShoutV2, "Shout") // the type the history names
	err = changed.ReplayWorkflowHistory(nil, recorded)
	// The error is a *replay.NondeterminismError, which names the step, the
	// recorded event and the line of the code; its stable code says what it is.
	var coded interface{ Code() string }
	if errors.As(err, &coded) {
		fmt.Println("the changed code:", coded.Code())
	}
	// Output:
	// the same code: <nil>
	// the changed code: HDL-REPLAY-1100
}
