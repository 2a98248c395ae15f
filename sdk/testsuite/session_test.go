package testsuite_test

// Worker sessions in the test environment, as Temporal's test suite runs
// them (its file-processing sample's test): with EnableSessionWorker the
// environment's worker accepts sessions, mocked activities run in them,
// and CreateSession without a session worker fails after its
// CreationTimeout, on the environment's clock.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// FileActs stand for a file-processing pipeline's activities.
type FileActs struct{}

// Download returns the local name of a file it fetched.
func (*FileActs) Download(_ context.Context, name string) (string, error) {
	return "local-" + name, nil
}

// Process returns the name of the file it wrote, and the queue it ran on.
func (*FileActs) Process(ctx context.Context, name string) (string, error) {
	return fmt.Sprintf("done-%s on %s", name, activity.GetInfo(ctx).TaskQueue), nil
}

// FileSession downloads and processes a file in one session.
func FileSession(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	sctx, err := workflow.CreateSession(ctx, &workflow.SessionOptions{CreationTimeout: time.Minute, ExecutionTimeout: time.Hour})
	if err != nil {
		return "", err
	}
	defer workflow.CompleteSession(sctx)
	var a *FileActs
	var local, out string
	if err := workflow.ExecuteActivity(sctx, a.Download, name).Get(sctx, &local); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(sctx, a.Process, local).Get(sctx, &out); err != nil {
		return "", err
	}
	if workflow.GetSessionInfo(sctx).SessionState != workflow.SessionStateOpen {
		return "", fmt.Errorf("the session is %s while its activities ran", workflow.GetSessionInfo(sctx).SessionState)
	}
	return out, nil
}

func TestSessionInTestEnvironment(t *testing.T) {
	for _, cache := range []int{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(worker.Options{CacheSize: cache, EnableSessionWorker: true})
			// As Temporal's file-processing test does: mock first, then
			// register the methods of a nil struct pointer.
			var a *FileActs
			env.OnActivity(a.Download, mock.Anything, "f").Return("local-f", nil)
			env.RegisterActivity(a)
			env.ExecuteWorkflow(FileSession, "f")
			out := result[string](t, env)
			want := "done-local-f on " + testsuite.DefaultTaskQueue + "@"
			if len(out) < len(want) || out[:len(want)] != want {
				t.Fatalf("result %q, want the processed file from a session queue %q…", out, want)
			}
			env.AssertExpectations(t)
		})
	}
}

// Without a worker that accepts sessions, the environment stops the test
// with a message that says how to enable them.
func TestSessionWithoutSessionWorkerSaysSo(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	var a *FileActs
	env.RegisterActivity(a)
	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.Contains(msg, "EnableSessionWorker: true") {
			t.Fatalf("the environment said %q, want a hint to enable sessions", msg)
		}
	}()
	env.ExecuteWorkflow(FileSession, "f")
}

// SleepInSession sleeps for an hour of workflow time inside a session.
func SleepInSession(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	sctx, err := workflow.CreateSession(ctx, &workflow.SessionOptions{CreationTimeout: time.Minute, ExecutionTimeout: 2 * time.Hour})
	if err != nil {
		return "", err
	}
	defer workflow.CompleteSession(sctx)
	if err := workflow.Sleep(sctx, time.Hour); err != nil {
		return "", err
	}
	var a *FileActs
	var out string
	err = workflow.ExecuteActivity(sctx, a.Download, "f").Get(sctx, &out)
	return out, err
}

// An open session does not hold the environment's clock: a timer inside
// one fires at once in real time, as every timer of the environment does.
func TestSessionLetsTheClockSkip(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{EnableSessionWorker: true})
	var a *FileActs
	env.RegisterActivity(a)
	began := time.Now()
	env.ExecuteWorkflow(SleepInSession)
	if got := result[string](t, env); got != "local-f" {
		t.Fatalf("result %q", got)
	}
	if real := time.Since(began); real > 30*time.Second {
		t.Fatalf("an hour's sleep in a session took %v of real time", real)
	}
}
