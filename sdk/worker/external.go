package worker

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// externals carries out the signals and cancel requests the workflow sends
// to other workflows (workflow.SignalExternalWorkflow,
// RequestCancelExternalWorkflow, ChildWorkflowFuture.SignalChildWorkflow)
// and commits each outcome as the command's step. The engine command
// carries a request id derived from this job and the step, so doing it
// again after a crash (the commit was lost) does not signal twice.
func (r *run) externals(cmds []*replay.Command) (bool, error) {
	progressed := false
	for _, c := range cmds {
		if c.Kind != replay.KindSignalExternal && c.Kind != replay.KindCancelExternal || c.Recorded || c.CancelRequested {
			continue
		}
		ext, ok := c.Options.(sdkhook.External)
		if !ok {
			return false, errOptions(c)
		}
		t := engine.Target{WorkflowID: ext.WorkflowID}
		if id, err := strconv.ParseUint(ext.RunID, 10, 64); err == nil && id > 0 {
			t = engine.Target{Job: engine.JobID(id)}
		}
		requestID := fmt.Sprintf("heddle/%d/%s/external", r.job.Job, c.Step)
		var err error
		done := engine.EventSignalExternalSent
		if c.Kind == replay.KindSignalExternal {
			sig := engine.Signal{Target: t, Name: c.Name, Payload: c.Input}
			sig.RequestID = requestID
			_, err = r.w.e.Signal(r.ctx, sig)
		} else {
			rc := engine.RequestCancel{Target: t, Reason: fmt.Sprintf("requested by workflow %s (run %d)", r.job.WorkflowID, r.job.Job)}
			rc.RequestID = requestID
			_, err = r.w.e.RequestCancel(r.ctx, rc)
			done = engine.EventCancelExternalRequested
		}
		switch {
		case err == nil:
			if err := r.commitStep(engine.CommitStep{LeaseRef: r.ref, Step: c.Step, Name: c.Name, Type: done}); err != nil {
				return false, err
			}
		case isGone(err):
			if err := r.commitFailure(c, &temporal.UnknownExternalWorkflowExecutionError{}); err != nil {
				return false, err
			}
		case errors.Is(err, engine.ErrInvalidCommand):
			// The target or the signal is malformed (an id too long, say):
			// retrying cannot help, so the future fails with the reason.
			if err := r.commitFailure(c, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidExternalCommand", nil)); err != nil {
				return false, err
			}
		default:
			return false, err
		}
		progressed = true
	}
	return progressed, nil
}
