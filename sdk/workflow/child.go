package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
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
	// WorkflowID names the child; "" means "<parent workflow id>/<run
	// id>/<step>".
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
	// WorkflowExecutionTimeout bounds the child's whole chain of runs, and
	// WorkflowRunTimeout each of its runs, as the client's
	// StartWorkflowOptions do; 0: no bound.
	WorkflowExecutionTimeout time.Duration
	WorkflowRunTimeout       time.Duration
	// RetryPolicy, if set, retries a failed run of the child as a new run
	// of the same workflow id; the parent sees the last run's outcome.
	RetryPolicy *RetryPolicy
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

// ChildWorkflowFuture is the future of a child workflow's result, which
// also knows the child's run once it has started.
type ChildWorkflowFuture interface {
	Future
	// GetChildWorkflowExecution returns a future that becomes ready with
	// the child's Execution once the child has started, or with the error
	// that kept it from starting.
	GetChildWorkflowExecution() Future
	// SignalChildWorkflow waits for the child to start, then sends it a
	// signal, as SignalExternalWorkflow does.
	SignalChildWorkflow(ctx Context, signalName string, data any) Future
}

type childFuture struct {
	*futureImpl
	execution *futureImpl
	cmd       *replay.Command
}

func (f *childFuture) GetChildWorkflowExecution() Future {
	if f.cmd != nil && !f.execution.ready {
		f.cmd.WaitsForRecord = true
	}
	return f.execution
}

func (f *childFuture) SignalChildWorkflow(ctx Context, signalName string, data any) Future {
	var exe Execution
	if err := f.GetChildWorkflowExecution().Get(ctx, &exe); err != nil {
		return f.execution
	}
	if o := outboundOf(ctx); o != nil {
		return o.SignalChildWorkflow(ctx, exe.ID, signalName, data)
	}
	return external(ctx, replay.KindSignalExternal, exe.ID, "", signalName, []any{data})
}

// ExecuteChildWorkflow starts a child workflow (a function or a type name)
// with args, under the ChildWorkflowOptions of ctx, and returns the future of
// its result. The child is a run of its own, with its own history; its
// result becomes this workflow's step effect and is caught up into this
// history. A child that fails, is cancelled, times out or cannot start
// fails the future with a *temporal.ChildWorkflowExecutionError wrapping
// why.
func ExecuteChildWorkflow(ctx Context, childWorkflow any, args ...any) ChildWorkflowFuture {
	if o := outboundOf(ctx); o != nil {
		if name := typeName(childWorkflow); name != "" {
			return o.ExecuteChildWorkflow(ctx, name, args...)
		}
	}
	return executeChildWorkflow(ctx, childWorkflow, args...)
}

func executeChildWorkflow(ctx Context, childWorkflow any, args ...any) ChildWorkflowFuture {
	st := stateOf(ctx)
	f, set := newCommandFuture()
	cf := &childFuture{futureImpl: f, execution: &futureImpl{}}
	name, input, err := prepareCommand(ctx, "child workflow", childWorkflow, args)
	if err != nil {
		set(nil, err)
		cf.execution.resolve(nil, err)
		return cf
	}
	opts := GetChildWorkflowOptions(ctx)
	if err := opts.RetryPolicy.Validate(); err != nil {
		err = fmt.Errorf("workflow: child workflow %s: %w", name, err)
		set(nil, err)
		cf.execution.resolve(nil, err)
		return cf
	}
	started := Execution{ID: opts.WorkflowID}
	cmd := st.x.Issue(replay.KindChild, name, input, sdkhook.Child[ChildWorkflowOptions]{Options: opts}, 0, func(r replay.Resolution) {
		step := ""
		if r.Event != nil {
			step = r.Event.Step
		}
		if !r.Failed {
			set(converter.NewEncodedValue(r.Payload), nil)
		} else {
			cause := ErrCanceled
			if len(r.Payload) > 0 {
				cause = sdkhook.DecodeFailure(r.Payload)
			}
			if ce, ok := cause.(*temporal.ChildWorkflowExecutionError); ok && ce.WorkflowID() == started.ID && ce.Step() == step {
				// The worker recorded this child's error whole (a child
				// that could not start: its id is held by an open run);
				// wrapped again, its message said it twice.
				set(nil, ce)
			} else {
				set(nil, temporal.NewChildWorkflowExecutionError(started.ID, started.RunID, name, step, cause))
			}
		}
		if !cf.execution.ready {
			// The child ended without a start record: it never started.
			err := f.err
			if err == nil {
				err = fmt.Errorf("workflow: child workflow %s ended before its start was recorded", name)
			}
			cf.execution.resolve(nil, err)
		}
	})
	cmd.OnRecord = func(ev *engine.Event) {
		if ev.Type != engine.EventChildScheduled || cf.execution.ready {
			return
		}
		var rec sdkhook.ChildStarted
		if len(ev.Payload) > 0 && json.Unmarshal(ev.Payload, &rec) == nil {
			started = Execution{ID: rec.WorkflowID, RunID: rec.RunID}
		}
		cf.execution.resolve(started, nil)
	}
	cf.cmd = cmd
	watchCancel(ctx, st.x, cmd, f, opts.WaitForCancellation)
	return cf
}

// ContinueAsNewError, returned by a workflow function, ends the run and
// starts a new run of the same workflow id with a fresh history.
type ContinueAsNewError struct {
	WorkflowType *Type
	// Input is the new run's arguments, encoded by converter.Encode.
	Input []byte
}

func (e *ContinueAsNewError) Error() string {
	return fmt.Sprintf("continue as new: %s", e.WorkflowType.GetName())
}

// NewContinueAsNewError returns the error that continues the workflow as a
// new run of wf (a function or a type name) with args.
func NewContinueAsNewError(ctx Context, wf any, args ...any) error {
	if o := outboundOf(ctx); o != nil {
		return o.NewContinueAsNewError(ctx, wf, args...)
	}
	return newContinueAsNewError(ctx, wf, args...)
}

func newContinueAsNewError(_ Context, wf any, args ...any) error {
	name, err := activityNameOf(wf)
	if err != nil {
		return err
	}
	input, err := converter.Encode(args...)
	if err != nil {
		return fmt.Errorf("workflow: continue as new %s: %w", name, err)
	}
	return &ContinueAsNewError{WorkflowType: &Type{Name: name}, Input: input}
}

// IsContinueAsNewError reports whether err is, or wraps, a
// ContinueAsNewError: a run that ends this way was continued, not failed.
func IsContinueAsNewError(err error) bool {
	var can *ContinueAsNewError
	return errors.As(err, &can)
}
