package interceptor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Greet is a remote activity: it logs, heartbeats and reads its info
// through package activity, so each call passes the outbound chain.
func Greet(ctx context.Context, name string) (string, error) {
	activity.GetLogger(ctx).Info("greeting", "name", name)
	activity.RecordHeartbeat(ctx, 1)
	return "hello " + name + " from " + activity.GetInfo(ctx).ActivityType.Name, nil
}

// Shout is the child's local activity.
func Shout(_ context.Context, s string) (string, error) { return s + "!", nil }

// Parent runs an activity, a child (which signals back), a coroutine, a
// side effect, a version check and a timer, and answers the query "state".
func Parent(ctx workflow.Context, name string) (string, error) {
	state := "started"
	if err := workflow.SetQueryHandler(ctx, "state", func() (string, error) { return state, nil }); err != nil {
		return "", err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var greeting string
	if err := workflow.ExecuteActivity(ctx, Greet, name).Get(ctx, &greeting); err != nil {
		return "", err
	}
	var shouted string
	if err := workflow.ExecuteChildWorkflow(ctx, Child, greeting).Get(ctx, &shouted); err != nil {
		return "", err
	}
	var word string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &word)
	var refused string
	gotRefused := workflow.GetSignalChannel(ctx, "forbidden").ReceiveAsync(&refused)
	done := false
	workflow.Go(ctx, func(ctx workflow.Context) { done = true })
	if err := workflow.Await(ctx, func() bool { return done }); err != nil {
		return "", err
	}
	var n int
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return 7 }).Get(&n); err != nil {
		return "", err
	}
	v := workflow.GetVersion(ctx, "change", workflow.DefaultVersion, 1)
	if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
		return "", err
	}
	state = fmt.Sprintf("%s %s refused-seen=%v n=%d v=%d", shouted, word, gotRefused, n, v)
	workflow.GetLogger(ctx).Info("done", "state", state)
	return state, nil
}

// Child runs a local activity and signals its parent twice: "forbidden",
// which the tracer refuses, then "go".
func Child(ctx workflow.Context, greeting string) (string, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute})
	var out string
	if err := workflow.ExecuteLocalActivity(ctx, Shout, greeting).Get(ctx, &out); err != nil {
		return "", err
	}
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution.ID
	if err := workflow.SignalExternalWorkflow(ctx, parent, "", "forbidden", "x").Get(ctx, nil); err != nil {
		return "", err
	}
	if err := workflow.SignalExternalWorkflow(ctx, parent, "", "go", "go").Get(ctx, nil); err != nil {
		return "", err
	}
	return out, nil
}
