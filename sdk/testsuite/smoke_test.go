package testsuite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

func Greet(ctx context.Context, name string) (string, error) { return "hello " + name, nil }

func SleepyGreeting(ctx workflow.Context, name string) (string, error) {
	if err := workflow.Sleep(ctx, 24*time.Hour); err != nil {
		return "", err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out string
	err := workflow.ExecuteActivity(ctx, Greet, name).Get(ctx, &out)
	return out, err
}

func TestSmoke(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(Greet)
	start := time.Now()
	env.ExecuteWorkflow(SleepyGreeting, "bob")
	t.Logf("wall %v", time.Since(start))
	if !env.IsWorkflowCompleted() {
		t.Fatal("not completed")
	}
	var out string
	if err := env.GetWorkflowResult(&out); err != nil || out != "hello bob" {
		t.Fatal(out, err)
	}
}

func TestSmokeMock(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.OnActivity(Greet, mock.Anything, "bob").Return("mocked", nil).Once()
	env.ExecuteWorkflow(SleepyGreeting, "bob")
	var out string
	if err := env.GetWorkflowResult(&out); err != nil || out != "mocked" {
		t.Fatal(out, err)
	}
	env.AssertExpectations(t)
}
