package workflow

import (
	"errors"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// SignalExternalWorkflow sends the signal signalName with arg to another
// workflow (runID "" means its current run) and returns a future that is
// ready, with no value, once the signal is recorded in the target's
// history. The send is a step of this workflow: it happens once, however
// often the code is replayed. A target that does not exist or has ended
// fails the future with a *temporal.UnknownExternalWorkflowExecutionError;
// a ctx cancelled before the send fails it with ErrCanceled and sends
// nothing.
func SignalExternalWorkflow(ctx Context, workflowID, runID, signalName string, arg any) Future {
	if o := outboundOf(ctx); o != nil {
		return o.SignalExternalWorkflow(ctx, workflowID, runID, signalName, arg)
	}
	return external(ctx, replay.KindSignalExternal, workflowID, runID, signalName, []any{arg})
}

// RequestCancelExternalWorkflow asks another workflow (runID "" means its
// current run) to cancel itself, as a client's CancelWorkflow does, and
// returns a future that is ready once the request is recorded in the
// target's history. A target that does not exist or has ended fails the
// future with a *temporal.UnknownExternalWorkflowExecutionError.
func RequestCancelExternalWorkflow(ctx Context, workflowID, runID string) Future {
	if o := outboundOf(ctx); o != nil {
		return o.RequestCancelExternalWorkflow(ctx, workflowID, runID)
	}
	return external(ctx, replay.KindCancelExternal, workflowID, runID, "cancel", nil)
}

func external(ctx Context, kind replay.CommandKind, workflowID, runID, name string, args []any) Future {
	st := stateOf(ctx)
	f, set := newCommandFuture()
	if workflowID == "" {
		set(nil, errors.New("workflow: "+kind.String()+": the target's workflow id is empty"))
		return f
	}
	if name == "" {
		set(nil, errors.New("workflow: external signal: the signal name is empty"))
		return f
	}
	if ctx.Err() != nil {
		set(nil, ErrCanceled)
		return f
	}
	if te := testEnvOf(ctx); te != nil {
		if mf, ok := mockedExternal(ctx, te, kind, workflowID, runID, name, args); ok {
			return mf
		}
	}
	var input []byte
	if len(args) > 0 {
		var err error
		if input, err = converter.Encode(args...); err != nil {
			set(nil, err)
			return f
		}
	}
	target := sdkhook.External{WorkflowID: workflowID, RunID: runID, Cancel: kind == replay.KindCancelExternal}
	cmd := st.x.Issue(kind, name, input, target, 0, func(r replay.Resolution) {
		if !r.Failed {
			set(nil, nil)
			return
		}
		var cause error = &temporal.UnknownExternalWorkflowExecutionError{}
		if len(r.Payload) > 0 {
			cause = sdkhook.DecodeFailure(r.Payload)
		}
		set(nil, cause)
	})
	watchCancel(ctx, st.x, cmd, f, false)
	return f
}
