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

// Review is an expense workflow: its Decide activity, of the workflow's
// own queue, is completed later by someone else.
func Review(ctx workflow.Context, id string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var verdict string
	if err := workflow.ExecuteActivity(ctx, "Decide", id).Get(ctx, &verdict); err != nil {
		return "", err
	}
	return verdict + " at " + workflow.Now(ctx).Format("15:04"), nil
}

// As in Temporal's test environment, an activity of the workflow's own
// task queue (inline in heddle) may return ErrResultPending: it gets a
// task token, and CompleteActivity with that token, from a delayed
// callback an hour later, completes it with a result or an error; the
// clock skips the hour. A token completes once, and may be used before
// the activity has returned ErrResultPending.
func TestInlineActivityCompletesAsynchronously(t *testing.T) {
	for _, tc := range []struct {
		name    string
		result  any
		err     error
		early   bool // completed by the activity itself before it returns
		want    string
		wantErr string
	}{
		{name: "result", result: "APPROVED", want: "APPROVED at 10:00"},
		{name: "error", err: temporal.NewApplicationError("too dear", "Rejected"), wantErr: "Rejected"},
		{name: "before it returns", result: "OK", early: true, want: "OK at 09:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.SetStartTime(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
			var again error
			env.RegisterActivityWithOptions(func(ctx context.Context, id string) (string, error) {
				token := activity.GetInfo(ctx).TaskToken
				if len(token) == 0 {
					return "", errors.New("no task token")
				}
				if tc.early {
					if err := env.CompleteActivity(token, tc.result, tc.err); err != nil {
						return "", err
					}
					again = env.CompleteActivity(token, "twice", nil)
					return "", activity.ErrResultPending
				}
				env.RegisterDelayedCallback(func() {
					if err := env.CompleteActivity(token, tc.result, tc.err); err != nil {
						t.Errorf("CompleteActivity: %v", err)
					}
					again = env.CompleteActivity(token, "twice", nil)
				}, time.Hour)
				return "", activity.ErrResultPending
			}, activity.RegisterOptions{Name: "Decide"})
			env.ExecuteWorkflow(Review, "e-1")
			if !env.IsWorkflowCompleted() {
				t.Fatal("the workflow did not complete")
			}
			var got string
			err := env.GetWorkflowResult(&got)
			var ae *temporal.ApplicationError
			switch {
			case tc.wantErr == "" && (err != nil || got != tc.want):
				t.Fatalf("result %q, %v; want %q", got, err, tc.want)
			case tc.wantErr != "" && (!errors.As(err, &ae) || ae.Type() != tc.wantErr):
				t.Fatalf("error %v, want an application error of type %s", err, tc.wantErr)
			}
			if again == nil {
				t.Fatal("a second CompleteActivity with the same token succeeded")
			}
		})
	}
}
