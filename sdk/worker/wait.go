package worker

import (
	"strconv"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
)

// wait releases the job until something it waits for happens: a timer, a
// signal, a remote step's effect or a retry delay. The worker records the
// scheduled timers in the same command, and the wait's timers become the
// job's only pending ones (a cancelled timer is dropped with it). woken
// reports that something it would wait for already happened: the job stays
// in hand.
func (r *run) wait(cmds []*replay.Command) (woken bool, err error) {
	spec := engine.WaitSpec{AnySignal: true}
	events := append([]engine.NewEvent(nil), r.pending...)
	for _, c := range cmds {
		switch {
		case c.CancelRequested && (c.Kind == replay.KindTimer || !c.Recorded && !c.Started):
			// A cancelled timer (its timer_canceled is among the events), or
			// a command cancelled before it was started: nothing to wait for.
		case c.Kind == replay.KindTimer:
			spec.Timers = append(spec.Timers, engine.Timer{ID: c.Step, FireMS: c.FireAt})
			if !c.Recorded {
				events = append(events, engine.NewEvent{Type: engine.EventTimerScheduled, Step: c.Step})
			}
		case c.Kind == replay.KindActivity && r.isInline(c):
			if at, attempt := retryAt(r.x.Records(c.Step), r.pending, c.Step); at > 0 {
				spec.Timers = append(spec.Timers, engine.Timer{ID: replay.RetryTimerPrefix + c.Step + ":" + strconv.Itoa(attempt), FireMS: at})
			}
			if _, ok := r.parked[c.Step]; ok {
				// A parked step's news (a unit granted, an answer, its
				// dependencies done) wakes the job.
				spec.Steps = append(spec.Steps, c.Step)
			}
		default:
			spec.Steps = append(spec.Steps, c.Step)
		}
	}
	spec.Signals = waitSignals(r.x, len(spec.Timers)+len(spec.Steps))
	res, err := r.w.e.Wait(r.ctx, engine.Wait{LeaseRef: r.ref, Spec: spec, SeenSeq: r.x.LastSeq(), Events: events})
	if err != nil {
		return false, err
	}
	if res.Woken {
		// Something happened already; the Wait wrote nothing. Write the
		// records (scheduled steps, markers) now, so that what woke the job
		// (say, a child's result) finds its step recorded and can be caught
		// up, instead of the job being woken by it again and again.
		return true, r.flush()
	}
	r.pending, r.cancelTimers = nil, nil
	return false, nil
}

// setTimers hands the engine the workflow timers the code started while
// activities run in this turn, with the records pending so far, so that
// the scheduler fires them (timer_fired) while the job is still Running.
// A straight-line workflow never gets here with a timer: it costs nothing
// there.
func (r *run) setTimers(cmds []*replay.Command) error {
	var timers []engine.Timer
	for _, c := range cmds {
		if c.Kind == replay.KindTimer && !c.Recorded && !c.CancelRequested {
			timers = append(timers, engine.Timer{ID: c.Step, FireMS: c.FireAt})
			r.pending = append(r.pending, engine.NewEvent{Type: engine.EventTimerScheduled, Step: c.Step})
		}
	}
	if len(timers) == 0 {
		return nil
	}
	return r.appendOwn(timers)
}

// The bounds of the signal names a wait carries: they only tell people
// what the run reads (AnySignal wakes it whatever the signal), so names
// that could exceed the engine's limits are left out rather than risk the
// wait.
const (
	maxWaitSignals     = 16
	maxWaitSignalBytes = 64
	maxWaitNames       = 1000 // Limits.MaxBatch's default
)

// waitSignals returns the names of the signals the workflow of x reads,
// for its wait's Signals, within the bounds above; others is how many
// timers and steps the wait names already.
func waitSignals(x *replay.Execution, others int) []string {
	var out []string
	for _, name := range sdkhook.SignalsRead(x) {
		if len(out) == maxWaitSignals || others+len(out) >= maxWaitNames {
			break
		}
		if name != "" && len(name) <= maxWaitSignalBytes && utf8.ValidString(name) {
			out = append(out, name)
		}
	}
	return out
}
