package machine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

func isUnknownJob(err error) bool { return errors.Is(err, engine.ErrUnknownJob) }

func (a *applier) appendEvents(c *engine.AppendEvents) (engine.Result, error) {
	l, err := a.fenced(c.LeaseRef, "AppendEvents")
	if err != nil {
		return nil, err
	}
	res := &engine.AppendResult{AtMS: a.now}
	for _, ne := range c.Events {
		ev := engine.Event{Type: ne.Type, Attempt: c.Attempt, Step: ne.Step, Name: ne.Name, Payload: ne.Payload, StepAttempt: ne.StepAttempt}
		if err := a.workerEvent(l, ev, "AppendEvents"); err != nil {
			return nil, err
		}
		if res.FirstSeq == 0 {
			res.FirstSeq = l.job.LastSeq
		}
		res.LastSeq = l.job.LastSeq
	}
	for _, id := range c.CancelTimers {
		cancelTimer(l.job, id)
	}
	for _, t := range c.Timers {
		setTimer(l.job, engine.Timer{ID: t.ID, FireMS: max(t.FireMS, a.now)})
	}
	a.save(l)
	return res, nil
}

// cancelTimer removes the pending timer id, if any; its index entry stays
// behind, stale, until the timer sweep reaches it and finds it gone.
func cancelTimer(j *engine.Job, id string) {
	for i := range j.Timers {
		if j.Timers[i].ID == id {
			j.Timers = append(j.Timers[:i], j.Timers[i+1:]...)
			return
		}
	}
}

func (a *applier) commitStep(c *engine.CommitStep) (engine.Result, error) {
	l, err := a.fenced(c.LeaseRef, "CommitStep")
	if err != nil {
		return nil, err
	}
	id := l.job.ID
	eff, err := a.effect(id, c.Step)
	if err != nil {
		return nil, err
	}
	payload := c.Payload
	switch {
	case eff != nil && eff.CommittedSeq != 0:
		return nil, fmt.Errorf("%w: step %q of job %d at seq %d", engine.ErrStepCommitted, c.Step, id, eff.CommittedSeq)
	case c.CatchUp && eff == nil:
		return nil, engine.InvalidField("CommitStep", "CatchUp", fmt.Sprintf("step %q of job %d has no recorded effect to catch up", c.Step, id))
	case !c.CatchUp && eff != nil:
		return nil, fmt.Errorf("%w: step %q of job %d has a recorded effect: catch it up instead", engine.ErrStepCommitted, c.Step, id)
	case c.CatchUp:
		// The recorded effect stands as it is, its Failed flag included;
		// the event carries its payload.
		payload = eff.Payload
	default:
		// An inline commit keeps the payload in the event alone: the effect
		// record only marks the step as committed.
		eff = &engine.Effect{Step: c.Step, Attempt: c.Attempt, Failed: c.Failed, AtMS: a.now}
	}
	s, err := a.loadStep(id, c.Step)
	if err != nil {
		return nil, err
	}
	if err := a.commitAllowed(l.job, s, c); err != nil {
		return nil, err
	}
	ev := engine.Event{Type: c.Type, Attempt: c.Attempt, Step: c.Step, Name: c.Name, Payload: payload, Commit: true,
		StepAttempt: c.StepAttempt, Decision: c.Decision, Reason: c.Reason}
	var seq uint64
	if s != nil && engine.IsStepEvent(c.Type) {
		seq, err = a.commitExplicit(l, s, ev)
	} else {
		seq, err = a.appendEvent(l, ev)
	}
	if err != nil {
		return nil, err
	}
	eff.CommittedSeq = seq
	a.tx.Set(storage.EffectKey(uint64(id), c.Step), EncodeEffect(eff))
	if len(l.job.LiveSteps) > 0 && !eff.Failed {
		if err := a.promoteDependents(l, c.Step); err != nil {
			return nil, err
		}
	}
	a.save(l)
	// LastSeq covers what the commit led to in this job's history as well
	// (a step it leased), so a writer rebuilding its events sees there is
	// more than its own.
	return &engine.AppendResult{FirstSeq: seq, LastSeq: l.job.LastSeq, AtMS: a.now}, nil
}

func (a *applier) wait(c *engine.Wait) (engine.Result, error) {
	l, err := a.fenced(c.LeaseRef, "Wait")
	if err != nil {
		return nil, err
	}
	j := l.job
	if c.SeenSeq > j.LastSeq {
		return nil, engine.InvalidField("Wait", "SeenSeq", fmt.Sprintf("%d is beyond the job's last seq %d", c.SeenSeq, j.LastSeq))
	}
	woken, err := a.alreadyHappened(j, &c.Spec, c.SeenSeq)
	if err != nil {
		return nil, err
	}
	if woken && !j.Paused() {
		return &engine.WaitResult{Woken: true, Status: j.Status, Seq: j.LastSeq}, nil
	}
	for _, ne := range c.Events {
		ev := engine.Event{Type: ne.Type, Attempt: c.Attempt, Step: ne.Step, Name: ne.Name, Payload: ne.Payload, StepAttempt: ne.StepAttempt}
		if err := a.workerEvent(l, ev, "Wait"); err != nil {
			return nil, err
		}
	}
	spec := dueNoEarlierThan(c.Spec, a.now)
	seq, err := a.appendEvent(l, engine.Event{Type: engine.EventJobWaiting, Attempt: c.Attempt, Wait: &spec})
	if err != nil {
		return nil, err
	}
	// The wait's timers become the job's pending ones: a timer the worker
	// set earlier in the turn and still waits for is named again, and one
	// it no longer needs (cancelled by the workflow) is dropped.
	j.Timers = nil
	for _, t := range allTimers(&spec) {
		setTimer(j, t)
	}
	if woken {
		// A paused run takes no new turn: the wait that something already
		// ended is taken and ended at once, and the run waits, Queued and
		// unclaimable, for its unpause.
		if seq, err = a.appendEvent(l, engine.Event{Type: engine.EventWaitCompleted, Reason: ReasonAlreadyHappened}); err != nil {
			return nil, err
		}
	}
	a.save(l)
	return &engine.WaitResult{Status: j.Status, Seq: seq}, nil
}

// dueNoEarlierThan returns spec with every timer already due moved to now:
// the scheduler's timer index only holds entries at or above its low-water
// mark, which can be as late as now, and a timer due now fires at the next
// sweep just as one due earlier would.
func dueNoEarlierThan(spec engine.WaitSpec, now int64) engine.WaitSpec {
	if spec.TimerAtMS > 0 && spec.TimerAtMS < now {
		spec.TimerAtMS = now
	}
	if len(spec.Timers) > 0 {
		spec.Timers = append([]engine.Timer(nil), spec.Timers...)
		for i := range spec.Timers {
			spec.Timers[i].FireMS = max(spec.Timers[i].FireMS, now)
		}
	}
	return spec
}

// setTimer adds t to the job's pending timers, replacing a timer of the same id.
func setTimer(j *engine.Job, t engine.Timer) {
	for i := range j.Timers {
		if j.Timers[i].ID == t.ID {
			j.Timers[i] = t
			return
		}
	}
	j.Timers = append(j.Timers, t)
}

// stepNews reports a step event that others wrote for a step its worker
// parked: the engine granted it a lease on its own (a freed unit, its
// dependencies done), a person answered it, or its lease timed out.
func stepNews(ev *engine.Event) bool {
	return ev.Type == engine.EventStepLeased && ev.Attempt == 0 || ev.Type == engine.EventStepAnswered || ev.Type == engine.EventStepLeaseTimeout
}

// operatorNews reports an operator's command that may let the run start
// what it held back: its unpause, or an activity's unpause, reset or new
// options. The worker must see it before it waits, as an unpause or a
// reset of a waiting run wakes it.
func operatorNews(ev *engine.Event) bool {
	switch ev.Type {
	case engine.EventActivityUnpaused, engine.EventActivityReset, engine.EventActivityOptionsUpdated:
		return true
	case engine.EventWorkflowUnpaused:
		return ev.Name != engine.PauseParent
	}
	return false
}

// alreadyHappened reports whether something spec waits for happened after
// seenSeq: a matching signal or timer_fired event, news of a step it waits
// for (stepNews), or a recorded effect of a step. A timer that is merely
// due does not count: a Woken answer writes nothing, so the worker would
// find nothing new and ask again with the same timer forever. The wait is
// taken instead and the scheduler fires the timer at once.
func (a *applier) alreadyHappened(j *engine.Job, spec *engine.WaitSpec, seenSeq uint64) (bool, error) {
	for _, step := range spec.Steps {
		e, err := a.effect(j.ID, step)
		if err != nil || e != nil {
			return e != nil, err
		}
	}
	if seenSeq == j.LastSeq {
		return false, nil
	}
	found := false
	start := storage.EventKey(uint64(j.ID), seenSeq+1)
	err := a.tx.Scan(storage.EventPrefix(uint64(j.ID)), start, true, func(k, v []byte) (bool, error) {
		ev := new(engine.Event)
		if _, err := storage.DecodeAt(k, v, storage.KindEvent, eventVersion, ev); err != nil {
			return false, err
		}
		found = (ev.Type == engine.EventSignalReceived && waitsForSignal(spec, ev.Name)) ||
			(ev.Type == engine.EventTimerFired && waitsForTimer(spec, ev.Name)) ||
			(stepNews(ev) && waitsForStep(spec, ev.Step)) ||
			ev.Type == engine.EventCancelRequested || // the workflow must see it before waiting
			operatorNews(ev)
		return !found, nil
	})
	return found, err
}

func (a *applier) signal(c *engine.Signal) (engine.Result, error) {
	if c.Sender != nil {
		return a.sendExternal(c, c.Target, *c.Sender)
	}
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	j := l.job
	if j.Status.Terminal() {
		return nil, fmt.Errorf("%w: signal %q to job %d in status %s", engine.ErrJobClosed, c.Name, j.ID, j.Status)
	}
	seq, err := a.appendEvent(l, engine.Event{Type: engine.EventSignalReceived, Name: c.Name, Payload: c.Payload, By: c.By})
	if err != nil {
		return nil, err
	}
	woke := false
	if waitsForSignal(j.Wait, c.Name) {
		if woke, err = a.wake(l, "signal", c.Name); err != nil {
			return nil, err
		}
	}
	a.save(l)
	return &engine.SignalResult{Job: j.ID, Seq: seq, Woke: woke}, nil
}

func (a *applier) fireTimers(c *engine.FireTimers) (engine.Result, error) {
	return a.sweep(storage.TimerPrefix, storage.KeyLowTimer, c.Max, func(tk storage.TimeKey, key []byte, res *engine.SweepResult) error {
		l, err := a.load(engine.JobID(tk.Job))
		if err != nil {
			return err
		}
		j := l.job
		if !removeTimer(j, engine.Timer{ID: tk.Rest, FireMS: tk.AtMS}) {
			return nil // stale: the job ended or set the timer anew
		}
		if _, err := a.appendEvent(l, engine.Event{Type: engine.EventTimerFired, Name: tk.Rest}); err != nil {
			return err
		}
		res.Jobs = append(res.Jobs, j.ID)
		if waitsForTimer(j.Wait, tk.Rest) {
			woke, err := a.wake(l, "timer", tk.Rest)
			if err != nil {
				return err
			}
			if woke {
				res.Ready = append(res.Ready, j.ID)
			}
		}
		a.save(l)
		return nil
	})
}

func removeTimer(j *engine.Job, t engine.Timer) bool {
	for i := range j.Timers {
		if j.Timers[i] == t {
			j.Timers = append(j.Timers[:i], j.Timers[i+1:]...)
			return true
		}
	}
	return false
}

func (a *applier) requestCancel(c *engine.RequestCancel) (engine.Result, error) {
	if c.Sender != nil {
		return a.sendExternal(c, c.Target, *c.Sender)
	}
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	j := l.job
	if j.Status.Terminal() {
		return nil, fmt.Errorf("%w: cancel request to job %d in status %s", engine.ErrJobClosed, j.ID, j.Status)
	}
	j.CancelRequested = true
	seq, err := a.appendEvent(l, engine.Event{Type: engine.EventCancelRequested, Reason: c.Reason, By: c.By})
	if err != nil {
		return nil, err
	}
	if _, err := a.wake(l, "cancel", ""); err != nil {
		return nil, err
	}
	a.save(l)
	return &engine.StatusResult{Job: j.ID, Status: j.Status, Seq: seq}, nil
}

func waitsForSignal(w *engine.WaitSpec, name string) bool {
	return w != nil && (w.AnySignal || slices.Contains(w.Signals, name))
}

func waitsForStep(w *engine.WaitSpec, step string) bool {
	return w != nil && slices.Contains(w.Steps, step)
}

func waitsForTimer(w *engine.WaitSpec, id string) bool {
	if w == nil {
		return false
	}
	if w.TimerAtMS > 0 && w.TimerID == id {
		return true
	}
	for _, t := range w.Timers {
		if t.ID == id {
			return true
		}
	}
	return false
}

// allTimers lists the timers a wait sets, the shorthand one first.
func allTimers(w *engine.WaitSpec) []engine.Timer {
	var ts []engine.Timer
	if w.TimerAtMS > 0 {
		ts = append(ts, engine.Timer{ID: w.TimerID, FireMS: w.TimerAtMS})
	}
	return append(ts, w.Timers...)
}
