package testsuite_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Remind would send a reminder; the example mocks it.
func Remind(_ context.Context, who string) (string, error) {
	return "", errors.New("no mail server in tests")
}

// Reminder waits an hour, or as many hours as a "snooze" signal asks from
// when it comes, then sends a reminder.
func Reminder(ctx workflow.Context, who string) (string, error) {
	delay := time.Hour
	for fired := false; !fired; {
		tctx, cancel := workflow.WithCancel(ctx)
		s := workflow.NewSelector(ctx)
		s.AddFuture(workflow.NewTimer(tctx, delay), func(workflow.Future) { fired = true })
		s.AddReceive(workflow.GetSignalChannel(ctx, "snooze"), func(c workflow.ReceiveChannel, _ bool) {
			var hours int
			c.Receive(ctx, &hours)
			delay = time.Duration(hours) * time.Hour
		})
		s.Select(ctx)
		cancel() // the timer a snooze replaced never fires
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var receipt string
	err := workflow.ExecuteActivity(ctx, Remind, who).Get(ctx, &receipt)
	return fmt.Sprintf("%s at %s", receipt, workflow.Now(ctx).Format("15:04")), err
}

// A test of Reminder: the activity is mocked, a delayed callback snoozes
// the reminder ten minutes in, and the clock skips the hours of waiting.
func ExampleTestWorkflowEnvironment() {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetStartTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	env.OnActivity(Remind, mock.Anything, "ann").Return("sent", nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("snooze", 2) }, 10*time.Minute)

	env.ExecuteWorkflow(Reminder, "ann")

	var got string
	err := env.GetWorkflowResult(&got)
	fmt.Println(env.IsWorkflowCompleted(), err, got)
	fmt.Println("the clock reads", env.Now().Format("15:04"))
	// Output:
	// true <nil> sent at 02:10
	// the clock reads 02:10
}

// Shout is an activity under test.
func Shout(_ context.Context, s string) (string, error) {
	if s == "" {
		return "", workflow.NewApplicationError("nothing to shout", "Empty", true)
	}
	return s + "!", nil
}

// An activity tested on its own: one try in a real worker.
func ExampleTestActivityEnvironment() {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(Shout)

	v, err := env.ExecuteActivity(Shout, "hey")
	var got string
	if err == nil {
		err = v.Get(&got)
	}
	fmt.Println(got, err)

	_, err = env.ExecuteActivity(Shout, "")
	var ae *workflow.ApplicationError
	fmt.Println(errors.As(err, &ae), ae.Type())
	// Output:
	// hey! <nil>
	// true Empty
}
