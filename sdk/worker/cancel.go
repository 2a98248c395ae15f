package worker

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// cancels acts on the commands whose context the workflow code cancelled,
// with Temporal's semantics:
//   - a timer is cancelled: timer_canceled is recorded and the engine drops
//     the timer, so it never fires;
//   - a running inline activity has its context cancelled at once; its
//     outcome is committed when it returns;
//   - a remote activity or a child that was started is asked to cancel
//     itself (a cancel request it sees, never a termination);
//   - anything not started yet never starts, and its step fails as
//     cancelled.
//
// It reports whether it committed something.
func (r *run) cancels(cmds []*replay.Command) (bool, error) {
	progressed := false
	for _, c := range cmds {
		if !c.CancelRequested || c.CancelHandled {
			continue
		}
		switch {
		case c.Kind == replay.KindTimer:
			c.CancelHandled = true
			r.pending = append(r.pending, engine.NewEvent{Type: engine.EventTimerCanceled, Step: c.Step})
			if c.Recorded {
				r.cancelTimers = append(r.cancelTimers, c.Step)
			}
		case c.Kind == replay.KindActivity && r.isInline(c) && r.acts[c.Step] != nil:
			a := r.acts[c.Step]
			a.cancelled = true
			a.cancel()
			c.CancelHandled = true
		case r.isRemote(c) && (c.Recorded || c.Started):
			if err := r.requestCancelRemote(c, "canceled by the workflow"); err != nil {
				return false, err
			}
		default:
			// Never started: it fails as cancelled without running.
			c.CancelHandled = true
			err := temporal.NewCanceledErrorWithOptions(temporal.CanceledErrorOptions{Message: fmt.Sprintf("%s %s canceled before it started", c.Kind, c.Name)})
			if err := r.commitFailure(c, err); err != nil {
				return false, err
			}
			progressed = true
		}
	}
	return progressed, nil
}
