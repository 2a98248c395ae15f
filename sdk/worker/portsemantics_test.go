package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Temporal semantics that ported programs rely on, run against every
// backend (HEDDLE_SDK_BACKEND=http|cluster).

// Creating a schedule whose id exists fails with an error matching
// temporal.ErrScheduleAlreadyRunning, as Temporal's client does.
func TestCreateScheduleTwiceIsErrScheduleAlreadyRunning(t *testing.T) {
	e := open(t)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := client.ScheduleOptions{ID: "twice", Spec: client.ScheduleSpec{CronExpressions: []string{"@daily"}},
		Action: &client.ScheduleWorkflowAction{Workflow: ScheduledGreeting, TaskQueue: "sched"}}
	if _, err := c.ScheduleClient().Create(ctx, opts); err != nil {
		t.Fatal(err)
	}
	_, err := c.ScheduleClient().Create(ctx, opts)
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		t.Fatalf("second create: %v, want temporal.ErrScheduleAlreadyRunning", err)
	}
}

// CronInfo returns the cron line its run sees in workflow.GetInfo.
func CronInfo(ctx workflow.Context) (string, error) {
	return "cron=" + workflow.GetInfo(ctx).CronSchedule, nil
}

// A cron workflow's run sees its cron line in Info.CronSchedule, as in
// Temporal; a run that is not a cron workflow's sees "".
func TestCronRunSeesItsCronSchedule(t *testing.T) {
	e := open(t)
	startWorker(t, e, "croninfo", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(CronInfo) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	plain, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "plain", TaskQueue: "croninfo"}, CronInfo)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := plain.Get(ctx, &got); err != nil || got != "cron=" {
		t.Fatalf("a plain run saw %q (%v), want an empty cron line", got, err)
	}

	const line = "* * * * * *"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "cron-info", TaskQueue: "croninfo", CronSchedule: line}, CronInfo)
	if err != nil {
		t.Fatal(err)
	}
	// The first run completes at the next whole second and the chain goes
	// on: Get of that run alone returns once it has ended, saying so.
	if err := run.GetWithOptions(ctx, nil, client.WorkflowRunGetOptions{DisableFollowingRuns: true}); err == nil {
		t.Fatal("the cron run's Get returned no error, want one saying it went on as a new run")
	}
	hist, err := c.GetWorkflowHistory(ctx, "cron-info", run.GetRunID())
	if err != nil {
		t.Fatal(err)
	}
	end := hist[len(hist)-1]
	if err := converter.Decode(end.Payload, &got); end.Type != engine.EventJobCompleted || err != nil || got != "cron="+line {
		t.Fatalf("the cron run ended with %s %q (%v), want it to have seen %q", end.Type, got, err, line)
	}
	if err := c.CancelWorkflow(ctx, "cron-info", ""); err != nil {
		t.Fatal(err)
	}
	verify(t, e)
}

// FailQuietly fails with a message a failure converter hides.
func FailQuietly(context.Context) error {
	return temporal.NewNonRetryableApplicationError("Marzipan xxx", "Quiet", nil)
}

// ReadQuietFailure returns the message of its activity's failure.
func ReadQuietFailure(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	err := workflow.ExecuteActivity(ctx, FailQuietly).Get(ctx, nil)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return "", err
	}
	return app.Message(), nil
}

// A client's FailureConverter is used by the workers made from it, on
// every backend: the history holds the encoded failure, the workflow
// reads the message.
func TestFailureConverterOfTheWorkersClient(t *testing.T) {
	e := open(t)
	fc := temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{EncodeCommonAttributes: true})
	c := client.NewWithOptions(service(t, e), client.Options{FailureConverter: fc})
	w := worker.New(c, "quiet", worker.Options{})
	w.RegisterWorkflow(ReadQuietFailure)
	w.RegisterActivity(FailQuietly)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "quiet", TaskQueue: "quiet"}, ReadQuietFailure)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "Marzipan xxx" {
		t.Fatalf("the workflow read %q (%v)", got, err)
	}
	hist, err := c.GetWorkflowHistory(ctx, "quiet", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range hist {
		if ev.Type == engine.EventActivityFailed && (strings.Contains(string(ev.Payload), "Marzipan") || !strings.Contains(string(ev.Payload), converter.EncodedFailureMessage)) {
			t.Fatalf("the activity's failure is stored as %s", ev.Payload)
		}
	}
	verify(t, e)
}
