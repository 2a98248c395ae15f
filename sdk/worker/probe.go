package worker

import (
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
)

// probeWait tells the worker's clock that the turn is about to wait in
// await, when the clock asks to know (package testsuite's clock does: it
// skips time only while every turn waits with nothing left to do). It
// returns the function to call when the wait ends; for any other clock it
// costs one type assertion.
func (r *run) probeWait(cmds []*replay.Command) (done func()) {
	p, ok := r.w.opts.Clock.(sdkhook.TurnProbe)
	if !ok {
		return func() {}
	}
	return p.TurnWaiting(uint64(r.job.Job), r.x.LastSeq(), len(r.acts), r.nextRetry(cmds))
}
