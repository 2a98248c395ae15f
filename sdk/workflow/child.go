package workflow

import (
	"fmt"

	"github.com/heddlewf/heddle/internal/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// ParentClosePolicy says what happens to a child workflow still running
// when its parent ends.
type ParentClosePolicy uint8

const (
	// ParentCloseTerminate (the default) ends the child at once.
	ParentCloseTerminate ParentClosePolicy = iota
	// ParentCloseRequestCancel asks the child to cancel itself.
	ParentCloseRequestCancel
	// ParentCloseAbandon leaves the child running.
	ParentCloseAbandon
)

// ChildWorkflowOptions configure ExecuteChildWorkflow.
type ChildWorkflowOptions struct {
	// WorkflowID names the child; "" means "<parent workflow id>/<step>".
	WorkflowID string
	// TaskQueue runs the child; "" means the parent's queue.
	TaskQueue string
	// ParentClosePolicy applies when the parent ends first.
	ParentClosePolicy ParentClosePolicy
	// WaitForCancellation: when the context of ExecuteChildWorkflow is
	// cancelled, the child is asked to cancel itself (it sees its own
	// context cancelled and may clean up). With WaitForCancellation the
	// future waits for the child to end and reports how it ended; without
	// it (the default, as in Temporal) the future fails with ErrCanceled at
	// once.
	WaitForCancellation bool
	// CronSchedule makes the child a cron workflow (see
	// client.StartWorkflowOptions.CronSchedule); its parent waits for the
	// chain, which ends only when a run is cancelled or terminated or the
	// execution timeout passes.
	CronSchedule string
}

type childOptionsKey struct{}

// WithChildOptions returns ctx carrying options for ExecuteChildWorkflow.
func WithChildOptions(ctx Context, opts ChildWorkflowOptions) Context {
	return WithValue(ctx, childOptionsKey{}, opts)
}

// GetChildWorkflowOptions returns the child options ctx carries.
func GetChildWorkflowOptions(ctx Context) ChildWorkflowOptions {
	opts, _ := ctx.Value(childOptionsKey{}).(ChildWorkflowOptions)
	return opts
}

// ChildWorkflowError is how a child workflow's failure reaches its parent.
type ChildWorkflowError struct {
	WorkflowType string
	Step         string
	Cause        error
}

func (e *ChildWorkflowError) Error() string {
	return fmt.Sprintf("child workflow %s (step %s) failed: %v", e.WorkflowType, e.Step, e.Cause)
}

// Unwrap returns the child's own error.
func (e *ChildWorkflowError) Unwrap() error { return e.Cause }

// ExecuteChildWorkflow starts a child workflow (a function or a type name)
// with args, under the ChildWorkflowOptions of ctx, and returns the future of
// its result. The child is a run of its own, with its own history; its
// result becomes this workflow's step effect and is caught up into this
// history. A child that fails or is cancelled fails the future with a
// *ChildWorkflowError.
func ExecuteChildWorkflow(ctx Context, childWorkflow any, args ...any) Future {
	st := stateOf(ctx)
	f, set := newCommandFuture()
	name, input, err := prepareCommand(ctx, "child workflow", childWorkflow, args)
	if err != nil {
		set(nil, err)
		return f
	}
	opts := GetChildWorkflowOptions(ctx)
	cmd := st.x.Issue(replay.KindChild, name, input, opts, 0, func(r replay.Resolution) {
		if !r.Failed {
			set(converter.NewEncodedValue(r.Payload), nil)
			return
		}
		step := ""
		if r.Event != nil {
			step = r.Event.Step
		}
		cause := ErrCanceled
		if len(r.Payload) > 0 {
			cause = decodeFailure(r.Payload)
		}
		set(nil, &ChildWorkflowError{WorkflowType: name, Step: step, Cause: cause})
	})
	watchCancel(ctx, st.x, cmd, f, opts.WaitForCancellation)
	return f
}

// ContinueAsNewError, returned by a workflow function, ends the run and
// starts a new run of the same workflow id with a fresh history.
type ContinueAsNewError struct {
	WorkflowType string
	Input        []byte
}

func (e *ContinueAsNewError) Error() string {
	return fmt.Sprintf("continue as new: %s", e.WorkflowType)
}

// NewContinueAsNewError returns the error that continues the workflow as a
// new run of wf (a function or a type name) with args.
func NewContinueAsNewError(ctx Context, wf any, args ...any) error {
	name, err := activityNameOf(wf)
	if err != nil {
		return err
	}
	input, err := converter.Encode(args...)
	if err != nil {
		return fmt.Errorf("workflow: continue as new %s: %w", name, err)
	}
	return &ContinueAsNewError{WorkflowType: name, Input: input}
}
