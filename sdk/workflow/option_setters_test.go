package workflow

import (
	"fmt"
	"testing"
	"time"
)

// Each setter changes its one field of the options already on the
// context, and leaves the parent context's options as they were.
func TestOptionSetters(t *testing.T) {
	base := ActivityOptions{TaskQueue: "q", StartToCloseTimeout: time.Second, HeartbeatTimeout: 2 * time.Second}
	for _, tc := range []struct {
		name string
		set  func(Context) Context
		want ActivityOptions
	}{
		{"WithTaskQueue", func(c Context) Context { return WithTaskQueue(c, "gpu") },
			ActivityOptions{TaskQueue: "gpu", StartToCloseTimeout: time.Second, HeartbeatTimeout: 2 * time.Second}},
		{"WithStartToCloseTimeout", func(c Context) Context { return WithStartToCloseTimeout(c, time.Minute) },
			ActivityOptions{TaskQueue: "q", StartToCloseTimeout: time.Minute, HeartbeatTimeout: 2 * time.Second}},
		{"WithScheduleToCloseTimeout", func(c Context) Context { return WithScheduleToCloseTimeout(c, time.Hour) },
			ActivityOptions{TaskQueue: "q", StartToCloseTimeout: time.Second, HeartbeatTimeout: 2 * time.Second, ScheduleToCloseTimeout: time.Hour}},
		{"WithScheduleToStartTimeout", func(c Context) Context { return WithScheduleToStartTimeout(c, 3*time.Second) },
			ActivityOptions{TaskQueue: "q", StartToCloseTimeout: time.Second, HeartbeatTimeout: 2 * time.Second, ScheduleToStartTimeout: 3 * time.Second}},
		{"WithHeartbeatTimeout", func(c Context) Context { return WithHeartbeatTimeout(c, 0) },
			ActivityOptions{TaskQueue: "q", StartToCloseTimeout: time.Second}},
		{"WithWaitForCancellation", func(c Context) Context { return WithWaitForCancellation(c, true) },
			ActivityOptions{TaskQueue: "q", StartToCloseTimeout: time.Second, HeartbeatTimeout: 2 * time.Second, WaitForCancellation: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := WithActivityOptions(testCtx(t), base)
			child := tc.set(parent)
			if got := GetActivityOptions(child); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("child options %+v, want %+v", got, tc.want)
			}
			if got := GetActivityOptions(parent); fmt.Sprint(got) != fmt.Sprint(base) {
				t.Errorf("parent options changed to %+v", got)
			}
		})
	}
}

// WithRetryPolicy keeps its own copy of the policy; setters on a bare
// context start from the zero options.
func TestWithRetryPolicyCopies(t *testing.T) {
	rp := RetryPolicy{MaximumAttempts: 2, NonRetryableErrorTypes: []string{"Fatal"}}
	ctx := WithStartToCloseTimeout(WithRetryPolicy(testCtx(t), rp), time.Second)
	rp.MaximumAttempts = 9
	rp.NonRetryableErrorTypes[0] = "Changed"
	o := GetActivityOptions(ctx)
	if o.RetryPolicy == nil || o.RetryPolicy.MaximumAttempts != 2 || o.RetryPolicy.NonRetryableErrorTypes[0] != "Fatal" {
		t.Fatalf("retry policy %+v: the caller's later change leaked in", o.RetryPolicy)
	}
	if o.StartToCloseTimeout != time.Second || o.TaskQueue != "" {
		t.Fatalf("options %+v", o)
	}
}

func TestChildOptionSetters(t *testing.T) {
	parent := WithChildOptions(testCtx(t), ChildWorkflowOptions{WorkflowID: "a", WaitForCancellation: true})
	child := WithWorkflowRunTimeout(WithWorkflowTaskQueue(WithWorkflowID(parent, "b"), "kids"), time.Minute)
	got := GetChildWorkflowOptions(child)
	want := ChildWorkflowOptions{WorkflowID: "b", TaskQueue: "kids", WorkflowRunTimeout: time.Minute, WaitForCancellation: true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("child options %+v, want %+v", got, want)
	}
	if p := GetChildWorkflowOptions(parent); p.WorkflowID != "a" || p.TaskQueue != "" {
		t.Fatalf("parent options changed to %+v", p)
	}
}

func TestIsContinueAsNewError(t *testing.T) {
	err := NewContinueAsNewError(testCtx(t), "Loop", 1)
	if !IsContinueAsNewError(err) || !IsContinueAsNewError(fmt.Errorf("wrapped: %w", err)) {
		t.Fatalf("IsContinueAsNewError(%v) = false", err)
	}
	if IsContinueAsNewError(ErrCanceled) || IsContinueAsNewError(nil) {
		t.Fatal("IsContinueAsNewError is true of another error")
	}
}
