package testsuite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// In a test environment an activity's retry policy gets Temporal's test
// defaults for the fields it leaves zero: ten attempts instead of
// unlimited ones, a one-second initial interval and a maximum interval
// equal to the initial one. So an activity that always fails ends the
// workflow after ten tries, nine seconds of skipped delays, instead of
// retrying without end; a policy's own fields stand.
func TestActivityRetryDefaultsInTheTestEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    *temporal.RetryPolicy
		tries     int
		delaysFor time.Duration
	}{
		{name: "no policy", policy: nil, tries: 10, delaysFor: 9 * time.Second},
		{name: "attempts set", policy: &temporal.RetryPolicy{MaximumAttempts: 3}, tries: 3, delaysFor: 2 * time.Second},
		{name: "intervals set", policy: &temporal.RetryPolicy{InitialInterval: time.Minute, BackoffCoefficient: 2, MaximumInterval: 4 * time.Minute, MaximumAttempts: 4},
			tries: 4, delaysFor: (1 + 2 + 4) * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			tries := 0
			env.RegisterActivityWithOptions(func(context.Context) error {
				tries++
				return errors.New("down")
			}, activity.RegisterOptions{Name: "AlwaysDown"})
			start := env.Now()
			env.ExecuteWorkflow(func(ctx workflow.Context) error {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second, RetryPolicy: tc.policy})
				return workflow.ExecuteActivity(ctx, "AlwaysDown").Get(ctx, nil)
			})
			var ae *temporal.ActivityError
			if err := env.GetWorkflowError(); !errors.As(err, &ae) {
				t.Fatalf("workflow error %v, want the activity's", err)
			}
			if tries != tc.tries {
				t.Fatalf("%d tries, want %d", tries, tc.tries)
			}
			if got := env.Now().Sub(start); got != tc.delaysFor {
				t.Fatalf("the retries took %v of workflow time, want %v", got, tc.delaysFor)
			}
		})
	}
}
