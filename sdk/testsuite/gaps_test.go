package testsuite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Temporal's test environment features ported here, each checked against
// the behaviour Temporal documents for it.

// VersionedFlow branches on GetVersion as code changed over time does.
func VersionedFlow(ctx workflow.Context) (string, error) {
	switch v := workflow.GetVersion(ctx, "new-path", workflow.DefaultVersion, 2); v {
	case workflow.DefaultVersion:
		return "old", nil
	default:
		return fmt.Sprintf("v%d", v), nil
	}
}

// Without a mock GetVersion gives maxSupported; OnGetVersion picks another
// version, by change id or for any (the id's own mock first), and as a
// function of the call.
func TestOnGetVersion(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	for _, tc := range []struct {
		name string
		set  func(env *testsuite.TestWorkflowEnvironment)
		want string
	}{
		{"no mock", func(*testsuite.TestWorkflowEnvironment) {}, "v2"},
		{"the change id", func(env *testsuite.TestWorkflowEnvironment) {
			env.OnGetVersion("new-path", workflow.DefaultVersion, 2).Return(workflow.DefaultVersion)
		}, "old"},
		{"any change id", func(env *testsuite.TestWorkflowEnvironment) {
			env.OnGetVersion(mock.Anything, workflow.DefaultVersion, 2).Return(workflow.Version(1))
		}, "v1"},
		{"the id before any", func(env *testsuite.TestWorkflowEnvironment) {
			env.OnGetVersion(mock.Anything, workflow.DefaultVersion, 2).Return(workflow.Version(1)).Maybe()
			env.OnGetVersion("new-path", workflow.DefaultVersion, 2).Return(
				func(changeID string, minV, maxV workflow.Version) workflow.Version { return maxV - 2 })
		}, "v0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := s.NewTestWorkflowEnvironment()
			tc.set(env)
			env.ExecuteWorkflow(VersionedFlow)
			var got string
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			env.AssertExpectations(t)
		})
	}
}

// CronReport sums its runs through the last completion result.
func CronReport(ctx workflow.Context) (int, error) {
	if !workflow.HasLastCompletionResult(ctx) {
		return 1, nil
	}
	var last int
	if err := workflow.GetLastCompletionResult(ctx, &last); err != nil {
		return 0, err
	}
	return last + 1, nil
}

// SetLastCompletionResult stands in for an earlier cron run.
func TestSetLastCompletionResult(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	for _, tc := range []struct {
		set  bool
		want int
	}{{false, 1}, {true, 42}} {
		env := s.NewTestWorkflowEnvironment()
		if tc.set {
			env.SetLastCompletionResult(41)
		}
		env.ExecuteWorkflow(CronReport)
		var got int
		if err := env.GetWorkflowResult(&got); err != nil || got != tc.want {
			t.Fatalf("set %v: got %d, %v; want %d", tc.set, got, err, tc.want)
		}
	}
}

// AddCounter takes "add" updates, validated non-negative, until "done".
func AddCounter(ctx workflow.Context) (int, error) {
	total := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, "add", func(ctx workflow.Context, n int) (int, error) {
		if n == 13 {
			return 0, errors.New("unlucky")
		}
		total += n
		return total, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, n int) error {
		if n < 0 {
			return errors.New("negative")
		}
		return nil
	}})
	if err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "done").Receive(ctx, nil)
	return total, nil
}

// updateLog records what an update's callbacks were told.
type updateLog struct {
	mu     sync.Mutex
	events []string
}

func (l *updateLog) callbacks(name string) *testsuite.TestUpdateCallback {
	add := func(s string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, name+" "+s)
	}
	return &testsuite.TestUpdateCallback{
		OnAccept: func() { add("accepted") },
		OnReject: func(err error) { add("rejected: " + err.Error()) },
		OnComplete: func(result any, err error) {
			if err != nil {
				add("failed: " + err.Error())
				return
			}
			add(fmt.Sprintf("completed: %v", result))
		},
	}
}

// UpdateWorkflow, as in Temporal: a validator's rejection reaches Reject,
// an accepted update Accept then Complete with the handler's result or
// error, before ExecuteWorkflow returns; UpdateWorkflowByID sends to a
// workflow id.
func TestUpdateWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	log := &updateLog{}
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow("add", "u1", log.callbacks("u1"), 5) }, time.Second)
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow("add", "u2", log.callbacks("u2"), -1) }, 2*time.Second)
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow("add", "u3", log.callbacks("u3"), 13) }, 3*time.Second)
	env.RegisterDelayedCallback(func() {
		if err := env.UpdateWorkflowByID(testsuite.DefaultWorkflowID, "add", "u4", log.callbacks("u4"), 2); err != nil {
			t.Error(err)
		}
	}, 4*time.Second)
	env.RegisterDelayedCallback(func() { env.UpdateWorkflowNoRejection("add", "u5", t, 1) }, 5*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("done", nil) }, time.Minute)
	env.ExecuteWorkflow(AddCounter)
	var total int
	if err := env.GetWorkflowResult(&total); err != nil || total != 8 {
		t.Fatalf("total %d, %v; want 8", total, err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	want := map[string]bool{
		"u1 accepted": true, "u1 completed: 5": true,
		"u2 rejected: negative": true,
		"u3 accepted":           true, "u3 failed: unlucky": true,
		"u4 accepted": true, "u4 completed: 7": true,
	}
	if len(log.events) != len(want) {
		t.Fatalf("callbacks %q, want %d of them", log.events, len(want))
	}
	for _, e := range log.events {
		if !want[e] {
			t.Fatalf("unexpected callback %q among %q", e, log.events)
		}
	}
	// After the run an update is rejected, and UpdateWorkflowByID fails.
	late := &updateLog{}
	env.UpdateWorkflow("add", "u6", late.callbacks("u6"), 1)
	if len(late.events) != 1 || late.events[0][:11] != "u6 rejected" {
		t.Fatalf("an update after the run: %q", late.events)
	}
	if err := env.UpdateWorkflowByID("x", "add", "u7", late.callbacks("u7"), 1); err == nil {
		t.Fatal("UpdateWorkflowByID after the run did not fail")
	}
}

var pendingToken = struct {
	mu    sync.Mutex
	token []byte
}{}

// Approve hands its task token out and completes later.
func Approve(ctx context.Context, item string) (string, error) {
	pendingToken.mu.Lock()
	pendingToken.token = activity.GetInfo(ctx).TaskToken
	pendingToken.mu.Unlock()
	return "", activity.ErrResultPending
}

// Approval waits for Approve, run on its own queue so it can complete
// asynchronously.
func Approval(ctx workflow.Context, item string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: "approvals", StartToCloseTimeout: time.Hour,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var verdict string
	err := workflow.ExecuteActivity(ctx, Approve, item).Get(ctx, &verdict)
	return verdict, err
}

// CompleteActivity completes an activity that returned ErrResultPending,
// with a result or an error, from a delayed callback.
func TestCompleteActivity(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	for _, tc := range []struct {
		name    string
		result  any
		err     error
		want    string
		wantErr string
	}{
		{"result", "approved", nil, "approved", ""},
		{"error", nil, errors.New("refused"), "", "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := s.NewTestWorkflowEnvironment()
			env.RegisterActivity(Approve)
			var completeErr error
			env.RegisterDelayedCallback(func() {
				pendingToken.mu.Lock()
				token := pendingToken.token
				pendingToken.mu.Unlock()
				completeErr = env.CompleteActivity(token, tc.result, tc.err)
			}, time.Minute)
			env.ExecuteWorkflow(Approval, "loom")
			if completeErr != nil {
				t.Fatal(completeErr)
			}
			var got string
			err := env.GetWorkflowResult(&got)
			switch {
			case tc.wantErr == "" && (err != nil || got != tc.want):
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			case tc.wantErr != "" && (err == nil || !containsStr(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
	env := s.NewTestWorkflowEnvironment()
	if err := env.CompleteActivity([]byte("x"), nil, nil); err == nil {
		t.Fatal("CompleteActivity outside a run did not fail")
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// Notifier signals an outside workflow twice and asks a third to cancel,
// then signals its own child, which runs in the environment.
func Notifier(ctx workflow.Context) (string, error) {
	var out []string
	for _, target := range []string{"audit", "billing"} {
		err := workflow.SignalExternalWorkflow(ctx, target, "", "order-done", "o-1").Get(ctx, nil)
		out = append(out, fmt.Sprintf("%s: %v", target, err))
	}
	err := workflow.RequestCancelExternalWorkflow(ctx, "stale", "").Get(ctx, nil)
	out = append(out, fmt.Sprintf("stale: %v", err))
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "listener"})
	child := workflow.ExecuteChildWorkflow(cctx, Listener)
	if err := child.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return "", err
	}
	if err := workflow.SignalExternalWorkflow(ctx, "listener", "", "ping", "hi").Get(ctx, nil); err != nil {
		return "", err
	}
	var heard string
	if err := child.Get(ctx, &heard); err != nil {
		return "", err
	}
	return fmt.Sprintf("%v; child heard %s", out, heard), nil
}

// Listener returns the first "ping" it gets.
func Listener(ctx workflow.Context) (string, error) {
	var s string
	workflow.GetSignalChannel(ctx, "ping").Receive(ctx, &s)
	return s, nil
}

// OnSignalExternalWorkflow and OnRequestCancelExternalWorkflow answer for
// workflows outside the environment (with an error, or a function of the
// call); a workflow running in it gets the real signal.
func TestOnExternalWorkflowMocks(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(Listener)
	var seen []string
	env.OnSignalExternalWorkflow(mock.Anything, "audit", "", "order-done", "o-1").Return(nil).Once()
	env.OnSignalExternalWorkflow(mock.Anything, "billing", mock.Anything, mock.Anything, mock.Anything).Return(
		func(namespace, workflowID, runID, signalName string, arg any) error {
			seen = append(seen, fmt.Sprintf("%s %s %s %v", namespace, workflowID, signalName, arg))
			return errors.New("billing is down")
		}).Once()
	env.OnRequestCancelExternalWorkflow(mock.Anything, "stale", "").Return(nil).Once()
	env.ExecuteWorkflow(Notifier)
	var got string
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if want := "[audit: <nil> billing: billing is down stale: <nil>]; child heard hi"; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if len(seen) != 1 || seen[0] != "default billing order-done o-1" {
		t.Fatalf("the mock function saw %q", seen)
	}
	env.AssertExpectations(t)
}

// Without a matching expectation an external signal fails with
// MockErrorType rather than reaching a workflow that is not there.
func TestOnSignalExternalWorkflowUnmatched(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.OnSignalExternalWorkflow(mock.Anything, "audit", mock.Anything, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.ExecuteWorkflow(func(ctx workflow.Context) error {
		return workflow.SignalExternalWorkflow(ctx, "elsewhere", "", "x", nil).Get(ctx, nil)
	})
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != testsuite.MockErrorType {
		t.Fatalf("want a %s failure, have %v", testsuite.MockErrorType, err)
	}
}

// SetWorkflowRunTimeout ends a run still open when the timeout passes, in
// workflow time, with a TimeoutError; SetStartWorkflowOptions' ID is the
// workflow id the run sees (Temporal's default is its own constant).
func TestRunTimeoutAndStartOptions(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkflowRunTimeout(10 * time.Minute)
	env.ExecuteWorkflow(func(ctx workflow.Context) error { return workflow.Sleep(ctx, time.Hour) })
	var te *temporal.TimeoutError
	if err := env.GetWorkflowError(); !errors.As(err, &te) {
		t.Fatalf("want a TimeoutError, have %v", err)
	}

	env = s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "my-workflow-id"})
	env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
		return "id is: " + workflow.GetInfo(ctx).WorkflowExecution.ID, nil
	})
	var got string
	if err := env.GetWorkflowResult(&got); err != nil || got != "id is: my-workflow-id" {
		t.Fatalf("got %q, %v", got, err)
	}
}
