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
// RequestCancelExternalWorkflow, ChildWorkflowFuture.SignalChildWorkflow).
// Each goes to the engine on behalf of its step (engine.SenderStep): the
// engine applies it once under this run's lease and records its outcome as
// the step's effect, in the same transaction when the target lives on this
// run's shard, or when the target's shard answers when it lives on another
// (its delivery is then on its way, and the effect wakes the run). Sending
// again after a crash sends nothing: the engine finds the effect or the
// delivery. The worker then catches the effect up as the step's event.
func (r *run) externals(cmds []*replay.Command) (bool, error) {
	progressed := false
	for _, c := range cmds {
		if c.Kind != replay.KindSignalExternal && c.Kind != replay.KindCancelExternal || c.Recorded || c.CancelRequested && !c.Started {
			continue
		}
		if !c.Started {
			sent, err := r.sendExternal(c)
			if err != nil {
				return false, err
			}
			if !sent {
				progressed = true // refused: its failure is committed
				continue
			}
			c.Started = true
		}
		eff, err := r.w.e.Effect(r.ctx, r.job.Job, c.Step)
		if err != nil {
			return false, err
		}
		if eff == nil || eff.CommittedSeq != 0 {
			continue // on its way to another shard: the effect wakes the run
		}
		typ := engine.EventSignalExternalSent
		switch {
		case c.Kind == replay.KindSignalExternal && eff.Failed:
			typ = engine.EventSignalExternalFailed
		case c.Kind == replay.KindCancelExternal && eff.Failed:
			typ = engine.EventCancelExternalFailed
		case c.Kind == replay.KindCancelExternal:
			typ = engine.EventCancelExternalRequested
		}
		if err := r.flush(); err != nil {
			return false, err
		}
		if _, err := r.w.e.CommitStep(r.ctx, engine.CommitStep{LeaseRef: r.ref, Step: c.Step, Name: c.Name, Type: typ, CatchUp: true}); err != nil {
			return false, err
		}
		if err := r.catchUp(false); err != nil && r.x.Fault() == nil {
			return false, err
		}
		progressed = true
	}
	return progressed, nil
}

// sendExternal sends the signal or cancel request of command c on behalf
// of its step. sent is false when the engine refused it as malformed (an
// id too long, say): retrying cannot help, so the future fails with the
// reason, committed here.
func (r *run) sendExternal(c *replay.Command) (sent bool, err error) {
	ext, ok := c.Options.(sdkhook.External)
	if !ok {
		return false, errOptions(c)
	}
	t := engine.Target{WorkflowID: ext.WorkflowID}
	if id, err := strconv.ParseUint(ext.RunID, 10, 64); err == nil && id > 0 {
		t = engine.Target{Job: engine.JobID(id)}
	}
	// No request id: sending again, whether a retry of a lost answer or a
	// later attempt of the run after a crash (with a lease of its own), is
	// idempotent by the step, whose effect or delivery the engine finds.
	sender := &engine.SenderStep{LeaseRef: r.ref, Step: c.Step}
	if c.Kind == replay.KindSignalExternal {
		_, err = r.w.e.Signal(r.ctx, engine.Signal{Target: t, Name: c.Name, Payload: c.Input, Sender: sender})
	} else {
		reason := fmt.Sprintf("requested by workflow %s (run %d)", r.job.WorkflowID, r.job.Job)
		_, err = r.w.e.RequestCancel(r.ctx, engine.RequestCancel{Target: t, Reason: reason, Sender: sender})
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, engine.ErrInvalidCommand):
		return false, r.commitFailure(c, temporal.NewNonRetryableApplicationError(err.Error(), engine.FailureInvalidExternal, nil))
	}
	return false, err
}
