package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Resumable processes items 0..4 and fails once at item 3; the retry picks
// up from the progress its first try recorded with RecordHeartbeat.
func Resumable(ctx context.Context) (string, error) {
	start := 0
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &start); err != nil {
			return "", err
		}
	} else if err := activity.GetHeartbeatDetails(ctx, &start); !errors.Is(err, temporal.ErrNoData) {
		return "", fmt.Errorf("GetHeartbeatDetails without details: %v, want ErrNoData", err)
	}
	done := ""
	for i := start; i < 5; i++ {
		if i == 3 && start == 0 {
			return "", errors.New("interrupted at item 3")
		}
		done += string(rune('0' + i))
		activity.RecordHeartbeat(ctx, i+1)
	}
	return done, nil
}

func ResumeFlow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2}})
	var s string
	err := workflow.ExecuteActivity(ctx, Resumable).Get(ctx, &s)
	return s, err
}

// A retry sees the heartbeat details of the try before it.
func TestHeartbeatDetailsCarryToTheNextTry(t *testing.T) {
	forEachCache(t, testHeartbeatDetailsCarryToTheNextTry)
}

func testHeartbeatDetailsCarryToTheNextTry(t *testing.T, cache int) {
	for _, threshold := range []time.Duration{time.Second, time.Microsecond} { // inline and durable retry
		e := open(t)
		w := startWorker(t, e, "hb", worker.Options{CacheSize: cache, RetryInlineThreshold: threshold})
		w.RegisterWorkflow(ResumeFlow)
		w.RegisterActivity(Resumable)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "hb"}, ResumeFlow)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := run.Get(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if got != "34" {
			t.Fatalf("threshold %v: the retry processed %q, want only items 3 and 4", threshold, got)
		}
	}
}
