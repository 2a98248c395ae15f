// Package retryactivity retries a batch activity that picks up where its
// failed attempt's heartbeats left off, and reports a failure with details
// through Temporal's typed errors.
package retryactivity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/contrib/envconfig"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// BatchProcessingActivity processes items first..first+size-1, recording
// each as heartbeat progress; its first attempt fails half-way, and the
// retry resumes after the last recorded item.
func BatchProcessingActivity(ctx context.Context, first, size int) (string, error) {
	start := first
	if activity.HasHeartbeatDetails(ctx) {
		var done int
		if err := activity.GetHeartbeatDetails(ctx, &done); err == nil {
			start = done + 1
		}
	}
	info := activity.GetInfo(ctx)
	for i := start; i < first+size; i++ {
		if info.Attempt == 1 && i == first+size/2 {
			return "", errors.New("some retryable error")
		}
		// Item i is processed: record it, for the next attempt to resume
		// after it.
		activity.RecordHeartbeat(ctx, i)
	}
	return fmt.Sprintf("attempt %d processed %d..%d", info.Attempt, start, first+size-1), nil
}

// ChargeActivity refuses for good, with details.
func ChargeActivity(ctx context.Context, cents int) error {
	return temporal.NewNonRetryableApplicationError("card declined", "CardDeclined", nil, cents, "insufficient funds")
}

// RetryWorkflow runs the batch, then a charge whose failure it reads.
func RetryWorkflow(ctx workflow.Context) (string, error) {
	ao := workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2.0,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    5,
		},
	}
	ctx = workflow.WithActivityOptions(ctx, ao)
	var batch string
	if err := workflow.ExecuteActivity(ctx, BatchProcessingActivity, 0, 20).Get(ctx, &batch); err != nil {
		return "", err
	}
	err := workflow.ExecuteActivity(ctx, ChargeActivity, 4200).Get(ctx, nil)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return "", fmt.Errorf("the charge did not fail as expected: %v", err)
	}
	var cents int
	var reason string
	if err := appErr.Details(&cents, &reason); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; %s (%s) for %d cents: %s", batch, appErr.Message(), appErr.Type(), cents, reason), nil
}

// RunWorker serves the "retry-activity" queue until interruptCh delivers.
func RunWorker(interruptCh <-chan any) error {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, "retry-activity", worker.Options{})
	w.RegisterWorkflow(RetryWorkflow)
	w.RegisterActivity(BatchProcessingActivity)
	w.RegisterActivity(ChargeActivity)
	return w.Run(interruptCh)
}

// RunStarter runs RetryWorkflow and returns its result.
func RunStarter() (string, error) {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return "", err
	}
	defer c.Close()
	we, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "retry_activity", TaskQueue: "retry-activity"}, RetryWorkflow)
	if err != nil {
		return "", err
	}
	var result string
	err = we.Get(context.Background(), &result)
	return result, err
}
