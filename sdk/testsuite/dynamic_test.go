package testsuite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// AnyWorkflow runs for every unregistered workflow type: it calls an
// activity of a type nobody registered with its two arguments.
func AnyWorkflow(ctx workflow.Context, args converter.EncodedValues) (string, error) {
	var a, b string
	if err := args.Get(&a, &b); err != nil {
		return "", err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out string
	err := workflow.ExecuteActivity(ctx, "no-such-activity", a, b).Get(ctx, &out)
	return workflow.GetInfo(ctx).WorkflowType.Name + ": " + out, err
}

// AnyActivity runs for every unregistered activity type.
func AnyActivity(ctx context.Context, args converter.EncodedValues) (string, error) {
	var a, b string
	if err := args.Get(&a, &b); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s(%s, %s)", activity.GetInfo(ctx).ActivityType.Name, a, b), nil
}

// Dynamic registrations run the types that have no registration of their
// own, and the started listener sees a dynamic activity's arguments.
func TestDynamicRegistration(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterDynamicWorkflow(AnyWorkflow, workflow.DynamicRegisterOptions{})
	env.RegisterDynamicActivity(AnyActivity, activity.DynamicRegisterOptions{})
	var seen string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var a, b string
		err := args.Get(&a, &b)
		seen = fmt.Sprintf("%s %s %s %v", info.ActivityType.Name, a, b, err)
	})
	env.ExecuteWorkflow("some-type", "x", "y")
	var got string
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if want := "some-type: no-such-activity(x, y)"; got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
	if want := "no-such-activity x y <nil>"; seen != want {
		t.Fatalf("the started listener saw %q, want %q", seen, want)
	}
}

// A function of the wrong shape is refused when it is registered.
func TestDynamicRegistrationRefusesOtherShapes(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	defer func() {
		if recover() == nil {
			t.Fatal("RegisterDynamicActivity took a function without converter.EncodedValues")
		}
	}()
	env.RegisterDynamicActivity(Greet, activity.DynamicRegisterOptions{})
}

// DynamicRegisterOptions.LoadDynamicRuntimeOptions is accepted, with
// Temporal's VersioningBehavior values, and, heddle having no worker
// versioning, never asked: the dynamic workflow runs as without it.
func TestDynamicRuntimeOptionsAreAcceptedAndUnused(t *testing.T) {
	if workflow.VersioningBehaviorUnspecified != 0 || workflow.VersioningBehaviorPinned != 1 || workflow.VersioningBehaviorAutoUpgrade != 2 {
		t.Fatal("the VersioningBehavior values are not Temporal's")
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	asked := 0
	env.RegisterDynamicWorkflow(AnyWorkflow, workflow.DynamicRegisterOptions{
		LoadDynamicRuntimeOptions: func(d workflow.LoadDynamicRuntimeOptionsDetails) (workflow.DynamicRuntimeOptions, error) {
			asked++
			return workflow.DynamicRuntimeOptions{VersioningBehavior: workflow.VersioningBehaviorPinned}, nil
		},
	})
	env.RegisterDynamicActivity(AnyActivity, activity.DynamicRegisterOptions{})
	env.ExecuteWorkflow("pinned-type", "p", "q")
	var got string
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if want := "pinned-type: no-such-activity(p, q)"; got != want || asked != 0 {
		t.Fatalf("result %q, loader asked %d times; want %q and none", got, asked, want)
	}
}
