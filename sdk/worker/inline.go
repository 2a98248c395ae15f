package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// inflight is an inline activity running on a goroutine of its own.
type inflight struct {
	cancel context.CancelFunc
	// cancelled: the workflow cancelled it, so an error it returns is its
	// acknowledgement of the cancellation.
	cancelled bool
	// explicit: it runs with a step lease of its own, and try is the try
	// running under it (step.go).
	explicit bool
	try      tryLease
	// hold, set by the loop, stops the retries of a try on the straight
	// path: the run was paused, or an operator acted on the activity
	// (whose next try then takes a step lease).
	hold atomic.Bool
}

// outcome is how one activity's run in this worker ended.
type outcome struct {
	c       *replay.Command
	result  []byte
	err     error             // the final error, nil on success
	records []engine.NewEvent // failed tries to record
	retryAt int64             // > 0: the next try waits for a durable timer

	// stepAttempt is the try the result or error is of, and decision the
	// critic's verdict on it; notStarted: the error ends the step where it
	// waited (a failed dependency, no resource left, its deadline passed
	// between tries), recorded with engine.ReasonNotStarted.
	stepAttempt uint32
	decision    engine.CriticDecision
	notStarted  bool
	// parked: the step waits for news (a unit, its dependencies, a person,
	// a retry timer) and nothing is to be committed; parkSeq is the job's
	// last seq when it parked.
	parked  bool
	parkSeq uint64
	// parkedPaused: it parked because it or its run is paused.
	parkedPaused bool
	// question: a try that ran under the job's lease needs a person.
	question []byte
	// fault is an engine error that ends the turn.
	fault error
}

// startInline starts the runnable inline activities that are not running
// yet, each on its own goroutine under its own context. An activity whose
// ScheduleToStartTimeout has passed before it could start fails instead
// (this only happens when the turn that scheduled it ended without starting
// it, as after a crash); that commit is progress.
func (r *run) startInline(cmds []*replay.Command) (bool, error) {
	now := r.w.opts.Clock.Now()
	r.unpark()
	r.leasesLost()
	if r.x.Paused() {
		return false, nil // a paused run starts no activity
	}
	for _, c := range cmds {
		if !r.isInline(c) || c.CancelRequested || r.acts[c.Step] != nil {
			continue
		}
		if _, ok := r.parked[c.Step]; ok {
			continue
		}
		recs := r.x.Records(c.Step)
		if at, _ := retryAt(recs, r.pending, c.Step); at > now.UnixMilli() {
			continue // waits for its retry timer
		}
		opts, _, _ := activityOptions(c)
		failed := failedAttempts(recs)
		if s2s := opts.ScheduleToStartTimeout; s2s > 0 && failed == 0 && !now.Before(time.UnixMilli(c.IssuedAtMS).Add(s2s)) {
			err := sdkhook.NewTimeoutError(fmt.Sprintf("activity %s: schedule-to-start timeout of %v", c.Name, s2s), temporal.TimeoutTypeScheduleToStart, nil)
			return true, r.commitFailure(c, err)
		}
		if r.explicit(c) {
			r.startExplicit(c, recs)
			continue
		}
		ctx, cancel := context.WithCancel(r.ctx)
		a := &inflight{cancel: cancel}
		r.acts[c.Step] = a
		details := lastDetails(recs, r.pending, c.Step)
		go func(c *replay.Command, attempt int) {
			o := r.execute(ctx, c, attempt, details, &a.hold, nil)
			select {
			case r.results <- o:
			case <-r.turnDone: // the turn ended: nobody wants the outcome
			}
		}(c, failed+1)
	}
	return false, nil
}

// holdActs stops the retries in the worker of the straight tries that run
// when the run is paused, or when an operator acted on their activity
// (paused, reset or changed it): their next try is the loop's to start,
// on the explicit path, where the engine may refuse it.
func (r *run) holdActs() {
	for step, a := range r.acts {
		if a.explicit {
			continue
		}
		if r.x.Paused() || slices.ContainsFunc(r.x.Records(step), func(ev *engine.Event) bool { return engine.IsActivityControlEvent(ev.Type) }) {
			a.hold.Store(true)
		}
	}
}

// nextRetry returns the earliest time an inline activity waiting for a
// retry delay may run again, or the zero time.
func (r *run) nextRetry(cmds []*replay.Command) time.Time {
	var next int64
	for _, c := range cmds {
		if !r.isInline(c) || c.CancelRequested || r.acts[c.Step] != nil {
			continue
		}
		if _, ok := r.parked[c.Step]; ok {
			continue // its retry timer, if it has one, wakes the job
		}
		if at, _ := retryAt(r.x.Records(c.Step), r.pending, c.Step); at > 0 && (next == 0 || at < next) {
			next = at
		}
	}
	if next == 0 {
		return time.Time{}
	}
	return time.UnixMilli(next)
}

// await blocks while inline activities run, until one of them ends (then
// every outcome already waiting is committed together), until others wrote
// to the job's history (then the workflow code sees it), or until a retry
// delay ends. The watch on the history starts at once when the workflow
// waits for something besides its inline activities (a timer, a remote
// step), and otherwise only once the activities have run for watchDelay,
// so that short activities cost no watch at all.
func (r *run) await(cmds []*replay.Command) error {
	var delayC, retryC <-chan time.Time
	if r.watch == nil {
		if r.expectsEvents(cmds) {
			r.startWatch()
		} else {
			t := r.w.opts.Clock.NewTimer(watchDelay)
			defer t.Stop()
			delayC = t.C()
		}
	}
	var watchC <-chan watchResult
	if r.watch != nil {
		watchC = r.watch.ask(r.x.LastSeq())
	}
	if at := r.nextRetry(cmds); !at.IsZero() {
		t := r.w.opts.Clock.NewTimer(max(at.Sub(r.w.opts.Clock.Now()), 0))
		defer t.Stop()
		retryC = t.C()
	}
	defer r.probeWait(cmds)()
	select {
	case o := <-r.results:
		return r.outcomes(o)
	case res := <-watchC:
		return r.watched(res)
	case <-delayC:
		r.startWatch()
	case <-retryC:
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
	return nil
}

// expectsEvents reports whether the workflow waits for something only
// others write to its history: a timer, a remote command's result, or the
// outcome of a signal or cancel request on its way to another shard.
func (r *run) expectsEvents(cmds []*replay.Command) bool {
	for _, c := range cmds {
		if c.Kind == replay.KindTimer || r.isRemote(c) || c.Started && (c.Kind == replay.KindSignalExternal || c.Kind == replay.KindCancelExternal) {
			return true
		}
	}
	return len(r.parked) > 0
}

// outcomes takes first and every other outcome already waiting, so that
// activities finishing together commit together: their step commits are
// proposed at once and share one group commit (one sync, or one Raft
// entry), instead of one sync per activity.
func (r *run) outcomes(first outcome) error {
	batch := []outcome{r.take(first)}
drain:
	for len(r.acts) > 0 {
		select {
		case o := <-r.results:
			batch = append(batch, r.take(o))
		default:
			break drain
		}
	}
	if err := r.ctx.Err(); err != nil {
		// The worker itself stopped, or the attempt turned stale: what the
		// activities returned under a cancelled context is not their result
		// and must not be committed.
		return err
	}
	var commits []outcome
	var seen uint64
	for _, o := range batch {
		r.pending = append(r.pending, o.records...)
		switch {
		case o.fault != nil:
			return o.fault
		case o.parked:
			r.parked[o.c.Step] = parked{seq: o.parkSeq, deps: stepDeps(o.c), paused: o.parkedPaused}
			seen = max(seen, o.parkSeq)
		case o.question != nil:
			if err := r.askUser(o); err != nil {
				return err
			}
		case o.retryAt == 0:
			commits = append(commits, o)
		}
		// A try that waits for a durable retry timer is recorded with the
		// next write; a wait sets its timer.
	}
	if seen > r.x.LastSeq() {
		// A parked step's own events (a retry's record with its timer, a
		// question) must be seen before the turn decides what to wait for.
		if err := r.catchUp(false); err != nil && r.x.Fault() == nil {
			return err
		}
	}
	if len(commits) == 0 {
		return nil
	}
	return r.commitActivities(commits)
}

// askUser ends a try that ran under the job's lease and needs a person:
// the step gets a step record in NEEDS_USER (EndStepAttempt) and is
// parked, on the explicit path from now on.
func (r *run) askUser(o outcome) error {
	if err := r.flush(); err != nil {
		return err
	}
	opts, _, _ := activityOptions(o.c)
	res, err := r.w.e.EndStepAttempt(r.ctx, engine.EndStepAttempt{LeaseRef: r.ref, Step: o.c.Step, Name: o.c.Name,
		StepAttempt: o.stepAttempt, Outcome: engine.OutcomeNeedsUser, Payload: o.question,
		AnswerTimeoutMS: opts.NeedsUserTimeout.Milliseconds()})
	if err != nil {
		return err
	}
	r.recorded[o.c.Step] = true
	r.parked[o.c.Step] = parked{seq: res.JobSeq}
	return r.catchUp(false)
}

// take removes a finished activity from the running ones. An activity the
// workflow cancelled that returned an error acknowledged the cancellation:
// it fails as cancelled.
func (r *run) take(o outcome) outcome {
	if a := r.acts[o.c.Step]; a != nil && a.cancelled && o.err != nil {
		o.err = canceledActivity(o.c.Name, o.err)
		o.records, o.retryAt, o.question, o.parked = nil, 0, nil, false
	}
	delete(r.acts, o.c.Step)
	return o
}

// commitStepOf is the step commit of an activity's outcome.
func (r *run) commitStepOf(o outcome) engine.CommitStep {
	cs := engine.CommitStep{LeaseRef: r.ref, Step: o.c.Step, Name: o.c.Name, Type: engine.EventActivityCompleted, Payload: o.result,
		StepAttempt: o.stepAttempt, Decision: o.decision}
	if o.err != nil {
		cs.Type, cs.Payload, cs.Failed = engine.EventActivityFailed, sdkhook.EncodeFailure(o.err), true
		if o.notStarted {
			cs.Reason = engine.ReasonNotStarted
		}
	}
	return cs
}

// commitActivities commits the outcomes of activities that finished
// together: one alone as commitStep does, several concurrently (each is its
// own fenced CommitStep; the log puts them in one batch), after which the
// history is read once to learn the order they landed in.
func (r *run) commitActivities(outs []outcome) error {
	if len(outs) == 1 {
		return r.commitStep(r.commitStepOf(outs[0]))
	}
	if err := r.flush(); err != nil {
		return err
	}
	errs := make([]error, len(outs))
	var wg sync.WaitGroup
	for i, o := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.w.e.CommitStep(r.ctx, r.commitStepOf(o))
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if errs[i] == nil {
			r.stepEnded(r.commitStepOf(o))
		}
	}
	// Whatever was committed must be seen before anything else happens,
	// even if another commit of the group failed.
	if err := r.catchUp(false); err != nil && r.x.Fault() == nil {
		return err
	}
	for i, err := range errs {
		if isStaleStep(err) {
			errs[i] = nil // the step's try lost its lease: it runs again
		}
	}
	return errors.Join(errs...)
}

// commitStep writes the pending records, then one step commit, and applies
// what it wrote.
func (r *run) commitStep(cs engine.CommitStep) error {
	if err := r.flush(); err != nil {
		return err
	}
	res, err := r.w.e.CommitStep(r.ctx, cs)
	if isStaleStep(err) {
		// The try's step lease ended before its result came (the engine
		// recorded that): the step runs again, and its news is read now.
		if err := r.catchUp(false); err != nil && r.x.Fault() == nil {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	r.stepEnded(cs)
	// Advancing here keeps the commit and its event together. A fault it
	// raises is the caller's loop's to handle; any other error (the history
	// could not be read) ends the turn, since the execution would not know
	// the step is done.
	ev := engine.Event{Type: cs.Type, Step: cs.Step, Name: cs.Name, Payload: cs.Payload, Commit: true,
		StepAttempt: cs.StepAttempt, Decision: cs.Decision, Reason: cs.Reason}
	if cs.Reason == engine.ReasonNotStarted {
		// The engine numbers the try of a step that failed where it
		// waited: read the event back rather than guess.
		res = nil
	}
	if err := r.advanceOwn(res, []engine.Event{ev}); err != nil && r.x.Fault() == nil {
		return err
	}
	return nil
}
