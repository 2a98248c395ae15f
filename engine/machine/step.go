package machine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// defaultAnswerLeaseMS is the step lease a person's answer grants a step
// that never had one (it needed a person while running under the job's
// lease).
const defaultAnswerLeaseMS = 60_000

// step is a step record as Apply read it, kept beside the version being
// changed so that saveStep can add the deadline entry it now needs.
type step struct {
	rec    *engine.StepRecord
	oldDue int64
	isNew  bool
}

func (a *applier) loadStep(id engine.JobID, name string) (*step, error) {
	rec, err := readStep(a.tx.Get, id, name)
	if err != nil {
		return nil, err
	}
	a.noteStepRead(id, name, rec)
	if rec == nil {
		return nil, nil
	}
	return &step{rec: rec, oldDue: stepDueMS(rec)}, nil
}

// newStep starts the record of a step that has none: in state from, the
// state its history leads to.
func newStep(id engine.JobID, name, activity string, from engine.StepState) *step {
	return &step{rec: &engine.StepRecord{Job: id, Step: name, Activity: activity, State: from}, isNew: true}
}

// saveStep writes the record, its deadline entry when that moved (the
// entry it leaves is stale and its sweep drops it), and the job's list of
// live steps. The job record itself is saved by the caller.
func (a *applier) saveStep(l *loaded, s *step) {
	r := s.rec
	r.UpdatedMS = a.now
	a.tx.Set(storage.StepKey(uint64(r.Job), r.Step), EncodeStepRecord(r))
	a.noteStepWritten(r.Job, r.Step, r.State)
	if due := stepDueMS(r); due > 0 && (due != s.oldDue || s.isNew) {
		a.tx.Set(storage.StepDueKey(due, uint64(r.Job), r.Step), nil)
	}
	s.oldDue, s.isNew = stepDueMS(r), false
	j := l.job
	live := !r.State.Terminal()
	if i := slices.Index(j.LiveSteps, r.Step); live && i < 0 {
		j.LiveSteps = append(j.LiveSteps, r.Step)
	} else if !live && i >= 0 {
		j.LiveSteps = slices.Delete(j.LiveSteps, i, i+1)
	}
}

// stepEvent appends ev (a step event of s) to l's history and moves the
// record along the route the projection takes; an event the state does
// not allow is refused with a *StepStateError.
func (a *applier) stepEvent(l *loaded, s *step, ev engine.Event, cmd string) (uint64, error) {
	r := s.rec
	route, ok := engine.StepRoute(r.State, &ev)
	if !ok {
		return 0, &engine.StepStateError{Job: r.Job, Step: r.Step, State: r.State, Command: cmd}
	}
	if r.Activity == "" {
		// A record an operator's command made from a heartbeat alone
		// learns its activity's name from the step's first own event.
		r.Activity = ev.Name
	}
	ev.Step, ev.Name = r.Step, r.Activity
	if ev.StepAttempt == 0 {
		ev.StepAttempt = r.Attempt
	}
	seq, err := a.appendEvent(l, ev)
	if err != nil {
		return 0, err
	}
	if len(route) > 0 {
		r.State = route[len(route)-1]
	}
	if ev.StepAttempt > r.Attempt {
		r.Attempt = ev.StepAttempt
	}
	return seq, nil
}

// stepResult starts the answer to a step command on job l.
func stepResult(l *loaded, name string) (*engine.StepResult, uint64) {
	return &engine.StepResult{Job: l.job.ID, Step: name}, l.job.LastSeq
}

// finish completes res from s and the events appended after seq before.
func (a *applier) finishStep(res *engine.StepResult, l *loaded, s *step, before uint64) {
	if s != nil {
		res.State, res.StepAttempt, res.Resource = s.rec.State, s.rec.Attempt, s.rec.Resource
		res.StepLeaseExpiryMS = s.rec.LeaseExpiryMS
		if s.rec.LeaseExpiryMS > 0 {
			res.StepLeaseRemainingMS = max(s.rec.LeaseExpiryMS-a.now, 0)
		}
		res.Queued, res.WaitingDeps = s.rec.WaiterSeq != 0 || asking(s.rec), s.rec.State == engine.StepWaitingDeps
		res.Paused, res.AttemptBase, res.Options = s.rec.Pause != nil, s.rec.AttemptBase, s.rec.Options.Clone()
	}
	res.Paused = res.Paused || l.job.Paused()
	if l.job.LastSeq > before {
		res.FirstSeq, res.LastSeq, res.AtMS = before+1, l.job.LastSeq, a.now
	}
	res.JobSeq = l.job.LastSeq
}

func (a *applier) leaseStep(c *engine.LeaseStep) (engine.Result, error) {
	l, err := a.fenced(c.LeaseRef, "LeaseStep")
	if err != nil {
		return nil, err
	}
	id := l.job.ID
	if eff, err := a.effect(id, c.Step); err != nil || eff != nil {
		if err == nil {
			err = fmt.Errorf("%w: step %q of job %d", engine.ErrStepCommitted, c.Step, id)
		}
		return nil, err
	}
	s, err := a.loadStep(id, c.Step)
	if err != nil {
		return nil, err
	}
	if s == nil {
		s = newStep(id, c.Step, c.Name, engine.StepNone)
		// A try that ran under the job's lease is over: the step has a
		// lease of its own from now on.
		if i := slices.IndexFunc(l.job.Beats, func(b engine.StepBeat) bool { return b.Step == c.Step }); i >= 0 {
			l.job.Beats = slices.Delete(l.job.Beats, i, i+1)
		}
	}
	r := s.rec
	res, before := stepResult(l, c.Step)
	if (l.job.Paused() || r.Pause != nil) && (!r.State.HoldsLease() || r.JobAttempt != c.Attempt) {
		// A paused activity (or an activity of a paused run) starts no
		// try: nothing is leased or written, and the worker parks the step
		// until news of it (its unpause) wakes the job. A lease the
		// attempt already holds stays its own.
		if s.isNew {
			s = nil
		}
		a.finishStep(res, l, s, before)
		res.Paused = true
		return res, nil
	}
	if r.State.HoldsLease() && r.JobAttempt != 0 && r.JobAttempt != c.Attempt {
		// An older attempt of the job leased it and is fenced out: its
		// lease ends now, not when it would have run out.
		if err := a.timeoutStep(l, s, engine.ReasonStepTakenOver); err != nil {
			return nil, err
		}
	}
	switch {
	case r.State.HoldsLease():
		if r.JobAttempt == 0 {
			// Granted by the engine (a freed unit, dependencies done, an
			// answer): this attempt adopts the lease.
			r.JobAttempt, r.Owner = c.Attempt, l.job.LeaseOwner
			r.LeaseExpiryMS = max(r.LeaseExpiryMS, a.now+r.LeaseMS)
			a.saveStep(l, s)
		}
		res.Granted = true
	case r.State == engine.StepNeedsUser || r.State == engine.StepFailedFatal:
		// It waits for a person, or its lease ran out for good: there is
		// nothing to lease, and the answer's State says why.
	case r.State.Terminal():
		return nil, &engine.StepStateError{Job: id, Step: c.Step, State: r.State, Command: "LeaseStep"}
	case r.WaiterSeq != 0 || asking(r):
		// Still waiting for a unit, in its place in the queue (here, or
		// on the pool's shard).
	case r.UnitRefusal != nil:
		// The pool's shard found no resource that could serve it: the
		// refusal LeaseStep would have met here.
		return nil, DeliveryError(r.UnitRefusal.Outcome, r.UnitRefusal.Error)
	default:
		r.Activity, r.LeaseMS, r.TimeoutFatal = c.Name, c.LeaseMS, c.TimeoutFatal
		r.Capabilities, r.Selector, r.DependsOn = slices.Clone(c.Capabilities), cloneLabels(c.Selector), slices.Clone(c.DependsOn)
		if cycle, err := a.dependencyCycle(id, c.Step, r.DependsOn); err != nil || cycle != nil {
			if err == nil {
				err = &engine.DependencyCycleError{Job: id, Step: c.Step, Cycle: cycle}
			}
			return nil, err
		}
		done, err := a.depsDone(id, r)
		if err != nil {
			return nil, err
		}
		if !done {
			if r.State != engine.StepWaitingDeps {
				if _, err := a.stepEvent(l, s, engine.Event{Type: engine.EventStepWaitingDeps, Attempt: c.Attempt}, "LeaseStep"); err != nil {
					return nil, err
				}
			}
			a.saveStep(l, s)
			break
		}
		granted, err := a.acquire(l, s, c.Attempt)
		if err != nil {
			return nil, err
		}
		res.Granted = granted
	}
	if c.Start && res.Granted && r.State == engine.StepLeased {
		if _, err := a.stepEvent(l, s, engine.Event{Type: engine.EventStepStarted, Attempt: c.Attempt}, "LeaseStep"); err != nil {
			return nil, err
		}
		r.JobAttempt, r.Owner = c.Attempt, l.job.LeaseOwner
		a.saveStep(l, s)
	}
	a.save(l)
	a.finishStep(res, l, s, before)
	if res.Granted {
		if err := a.labelsOf(res, s.rec); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func cloneLabels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// labelsOf fills in the labels of the resource a granted step (record r)
// holds: the pool's, or those its shard sent with the grant.
func (a *applier) labelsOf(res *engine.StepResult, r *engine.StepRecord) error {
	if res.Resource == "" {
		return nil
	}
	if r.UnitTry != 0 {
		res.Labels = cloneLabels(r.UnitLabels)
		return nil
	}
	rs, err := readResource(a.tx.Get, res.Resource)
	if err != nil || rs == nil {
		return err
	}
	res.Labels = cloneLabels(rs.Labels)
	return nil
}

// dependencyCycle returns the steps of a cycle that making step depend on
// deps would close (step, the steps in between, step again), or nil. It
// follows the dependencies the job's open step records hold; a step that
// ended, or has no record yet, ends the path (a step leased later is
// checked when it is). Such a cycle would never resolve: every step of it
// waits for another.
func (a *applier) dependencyCycle(id engine.JobID, step string, deps []string) ([]string, error) {
	seen := map[string]bool{}
	var walk func(path []string, deps []string) ([]string, error)
	walk = func(path []string, deps []string) ([]string, error) {
		for _, d := range deps {
			if d == step {
				return append(slices.Clone(path), d), nil
			}
			if seen[d] {
				continue
			}
			seen[d] = true
			rec, err := readStep(a.tx.Get, id, d)
			if err != nil {
				return nil, err
			}
			if rec == nil || rec.State.Terminal() || len(rec.DependsOn) == 0 {
				continue
			}
			if cycle, err := walk(append(path, d), rec.DependsOn); cycle != nil || err != nil {
				return cycle, err
			}
		}
		return nil, nil
	}
	return walk([]string{step}, deps)
}

// depsDone reports whether every step r depends on succeeded; one that
// failed refuses the lease with ErrDependencyFailed.
func (a *applier) depsDone(id engine.JobID, r *engine.StepRecord) (bool, error) {
	done := true
	for _, d := range r.DependsOn {
		eff, err := a.effect(id, d)
		switch {
		case err != nil:
			return false, err
		case eff == nil || eff.CommittedSeq == 0:
			done = false
		case eff.Failed:
			return false, fmt.Errorf("%w: step %q of job %d depends on step %q, which failed", engine.ErrDependencyFailed, r.Step, id, d)
		}
	}
	return done, nil
}

// acquire leases step s for its next try: at once when it needs no
// resource, else a unit of the serving resource with the most free units,
// or a place in the waiter queue when none is free. jobAttempt is the job
// attempt taking the lease, or 0 when the engine grants it on its own.
func (a *applier) acquire(l *loaded, s *step, jobAttempt uint64) (bool, error) {
	r := s.rec
	if !needsResource(r) {
		return true, a.grant(l, s, nil, jobAttempt)
	}
	if !a.poolHere() {
		return false, a.askUnit(l, s)
	}
	best, err := a.bestResource(r)
	switch {
	case err != nil:
		return false, err
	case best.Free() == 0:
		// The invariant that no waiter could use a free unit makes joining
		// the back of the queue first come, first served.
		return false, a.enqueue(l, s)
	}
	return true, a.grant(l, s, best, jobAttempt)
}

// bestResource returns the resource serving r with the most free units
// (perhaps none); a pool where no resource serves r refuses it with a
// *NoResourceError.
func (a *applier) bestResource(r *engine.StepRecord) (*engine.Resource, error) {
	var best *engine.Resource
	found := false
	err := a.eachResource(func(rs *engine.Resource) (bool, error) {
		if !serves(rs, r) {
			return true, nil
		}
		found = true
		if best == nil || rs.Free() > best.Free() {
			best = rs
		}
		return true, nil
	})
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, &engine.NoResourceError{Job: r.Job, Step: r.Step, Capabilities: slices.Clone(r.Capabilities),
			Selector: cloneLabels(r.Selector), Avoid: slices.Clone(r.Avoid)}
	}
	return best, nil
}

// eachResource calls fn with every resource record, in id order.
func (a *applier) eachResource(fn func(*engine.Resource) (bool, error)) error {
	var all []*engine.Resource
	err := a.tx.Scan(storage.ResourcePrefix, nil, true, func(k, v []byte) (bool, error) {
		rs := new(engine.Resource)
		if _, err := storage.DecodeAt(k, v, storage.KindResource, resourceVersion, rs); err != nil {
			return false, err
		}
		all = append(all, rs)
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, rs := range all {
		if more, err := fn(rs); err != nil || !more {
			return err
		}
	}
	return nil
}

// grant gives step s a step lease for its next try, on a unit of rs when
// rs is not nil, and writes step_leased. A grant the engine makes on its
// own (jobAttempt 0) wakes the job if it waits for the step.
func (a *applier) grant(l *loaded, s *step, rs *engine.Resource, jobAttempt uint64) error {
	resource := ""
	if rs != nil {
		r := s.rec
		resource = rs.ID
		rs.Holders = append(rs.Holders, engine.ResourceHolder{Job: r.Job, Step: r.Step, StepAttempt: r.Attempt + 1, SinceMS: a.now})
		a.saveResource(rs)
	}
	return a.lease(l, s, resource, jobAttempt)
}

// lease gives step s a step lease for its next try, on a unit of resource
// when it is not empty (leased already, here or by the pool's shard), and
// writes step_leased.
func (a *applier) lease(l *loaded, s *step, resource string, jobAttempt uint64) error {
	r := s.rec
	ev := engine.Event{Type: engine.EventStepLeased, Attempt: jobAttempt, StepAttempt: r.Attempt + 1, LeaseExpiryMS: a.now + r.LeaseMS,
		Resource: resource}
	if _, err := a.stepEvent(l, s, ev, "LeaseStep"); err != nil {
		return err
	}
	r.Resource, r.Released = ev.Resource, false
	r.JobAttempt, r.Owner, r.WaiterSeq = jobAttempt, "", 0
	r.Straight = false // a try of its own now: a try under the job's lease is stale
	if jobAttempt != 0 {
		r.Owner = l.job.LeaseOwner
	}
	r.LeaseExpiryMS = ev.LeaseExpiryMS
	a.saveStep(l, s)
	if jobAttempt == 0 {
		return a.wakeForStep(l, r.Step)
	}
	return nil
}

// wakeForStep ends l's wait if it waits for step.
func (a *applier) wakeForStep(l *loaded, name string) error {
	if waitsForStep(l.job.Wait, name) {
		_, err := a.wake(l, "step", name)
		return err
	}
	return nil
}

// enqueue puts step s at the back of the resource waiter queue.
func (a *applier) enqueue(l *loaded, s *step) error {
	n, err := a.nextWaiter(s.rec.Job, s.rec.Step)
	if err != nil {
		return err
	}
	s.rec.WaiterSeq = n
	if s.rec.State == engine.StepNone {
		s.rec.State = engine.StepPending // issued, nothing recorded yet
	}
	a.saveStep(l, s)
	return nil
}

// nextWaiter writes the entry of step of job at the back of the resource
// waiter queue and returns its place.
func (a *applier) nextWaiter(job engine.JobID, step string) (uint64, error) {
	n, err := a.u64(storage.KeyNextWaiter)
	if err != nil {
		return 0, err
	}
	n++
	a.tx.Set(storage.KeyNextWaiter, storage.U64(n))
	a.tx.Set(storage.WaiterKey(n, uint64(job), step), nil)
	return n, nil
}

func (a *applier) saveResource(rs *engine.Resource) {
	rs.UpdatedMS = a.now
	a.tx.Set(storage.ResourceKey(rs.ID), EncodeResource(rs))
}

// release gives back the unit step s holds, if any, and serves the
// waiters it may go to.
func (a *applier) release(s *step) error {
	r := s.rec
	if r.UnitTry != 0 {
		// The unit (or the ask) is the pool's shard's to take back.
		r.Resource, r.Released = "", false
		return a.giveUnitBack(r)
	}
	id := r.Resource
	r.Resource, r.Released = "", false
	if id == "" {
		return nil
	}
	rs, err := readResource(a.tx.Get, id)
	if err != nil || rs == nil {
		return err
	}
	i := holderOf(rs, r.Job, r.Step)
	if i < 0 {
		return nil // released when its job ended
	}
	rs.Holders = slices.Delete(rs.Holders, i, i+1)
	a.saveResource(rs)
	_, err = a.serveWaiters(rs)
	return err
}

// waiterBatch bounds the waiter entries read at once while serving.
const waiterBatch = 64

// serveWaiters leases rs's free units to the steps waiting for one it can
// serve, in the order they asked, and drops the entries of steps that no
// longer wait (their job ended, or they were leased or failed another
// way). It returns how many it served. Afterwards no waiter rs serves is
// left while rs has a free unit: the invariant that keeps the queue first
// come, first served.
func (a *applier) serveWaiters(rs *engine.Resource) (int, error) {
	if rs.Drained || rs.Free() == 0 {
		return 0, nil
	}
	low, err := a.u64(storage.KeyLowWaiter)
	if err != nil {
		return 0, err
	}
	start := storage.WaiterKey(low, 0, "")
	served := 0
	front := true // every entry met so far was removed
	for rs.Free() > 0 {
		var batch [][]byte
		err := a.tx.Scan(storage.WaiterPrefix, start, false, func(k, _ []byte) (bool, error) {
			batch = append(batch, k)
			return len(batch) < waiterBatch, nil
		})
		if err != nil {
			return served, err
		}
		if len(batch) == 0 {
			break
		}
		start = append(append([]byte(nil), batch[len(batch)-1]...), 0)
		for _, k := range batch {
			if rs.Free() == 0 {
				break
			}
			e, err := storage.ParseWaiterKey(k)
			if err != nil {
				return served, err
			}
			gone, took, err := a.serveWaiter(e, rs)
			if err != nil {
				return served, err
			}
			if took {
				served++
			}
			if gone || took {
				a.tx.Delete(k)
				if front {
					a.tx.Set(storage.KeyLowWaiter, storage.U64(e.Seq+1))
				}
			} else {
				front = false
			}
		}
	}
	return served, nil
}

// serveWaiter leases a unit of rs to the waiter e when rs serves it. gone
// reports an entry of a step that no longer waits.
func (a *applier) serveWaiter(e storage.WaiterEntry, rs *engine.Resource) (gone, took bool, err error) {
	if a.remoteJob(engine.JobID(e.Job)) {
		return a.serveRemoteWaiter(e, rs)
	}
	s, err := a.loadStep(engine.JobID(e.Job), e.Step)
	if err != nil || s == nil || s.rec.WaiterSeq != e.Seq {
		return true, false, err
	}
	l, err := a.load(engine.JobID(e.Job))
	if err != nil {
		return false, false, err
	}
	if l.job.Status.Terminal() {
		return true, false, nil
	}
	if !serves(rs, s.rec) {
		return false, false, nil
	}
	s.rec.WaiterSeq = 0
	if err := a.grant(l, s, rs, 0); err != nil {
		return false, false, err
	}
	a.save(l)
	return false, true, nil
}

// timeoutStep ends the step lease of s: a leased try that never ran goes
// back to PENDING (LEASE_TIMEOUT), a running one fails (FAILED_RETRYABLE,
// or FAILED_FATAL when the step's lease ran out and its options say so).
// Its unit is released and the job, if it waits for the step, woken.
func (a *applier) timeoutStep(l *loaded, s *step, reason string) error {
	r := s.rec
	if reason == engine.ReasonStepLeaseExpired && r.State == engine.StepRunning && r.TimeoutFatal {
		reason = engine.ReasonStepTimeoutFatal
	}
	if _, err := a.stepEvent(l, s, engine.Event{Type: engine.EventStepLeaseTimeout, Reason: reason}, "ExpireSteps"); err != nil {
		return err
	}
	r.LeaseExpiryMS, r.JobAttempt = 0, 0
	if err := a.release(s); err != nil {
		return err
	}
	a.saveStep(l, s)
	return a.wakeForStep(l, r.Step)
}

// endSteps releases what the live steps of a job that just ended hold:
// their units (the records keep the resource their history names, marked
// Released) and their places in the waiter queue. Their records keep
// their state: the job ended while they were in it.
func (a *applier) endSteps(l *loaded) error {
	var freed []string
	for _, name := range l.job.LiveSteps {
		s, err := a.loadStep(l.job.ID, name)
		if err != nil {
			return err
		}
		if s == nil {
			continue
		}
		r := s.rec
		if r.WaiterSeq != 0 {
			a.tx.Delete(storage.WaiterKey(r.WaiterSeq, uint64(r.Job), r.Step))
			r.WaiterSeq = 0
		}
		if r.UnitTry != 0 {
			// The pool's shard takes back the unit, or the ask.
			r.Released = r.Resource != ""
			if err := a.giveUnitBack(r); err != nil {
				return err
			}
		}
		if r.Resource != "" && !r.Released {
			rs, err := readResource(a.tx.Get, r.Resource)
			if err != nil {
				return err
			}
			if rs != nil {
				if i := holderOf(rs, r.Job, r.Step); i >= 0 {
					rs.Holders = slices.Delete(rs.Holders, i, i+1)
					a.saveResource(rs)
					freed = append(freed, rs.ID)
				}
			}
			r.Released = true
		}
		r.LeaseExpiryMS, r.AnswerDueMS, r.JobAttempt = 0, 0, 0
		a.saveStep(l, s)
	}
	for _, id := range freed {
		rs, err := readResource(a.tx.Get, id)
		if err != nil {
			return err
		}
		if _, err := a.serveWaiters(rs); err != nil {
			return err
		}
	}
	return nil
}

// stale answers a write of try attempt of step s (nil: the step has no
// record) that is not the step's live try.
func staleStep(id engine.JobID, name string, attempt uint32, s *step, cmd string) error {
	e := &engine.StaleStepError{Job: id, Step: name, Attempt: attempt, Command: cmd}
	if s != nil {
		e.Current, e.State = s.rec.Attempt, s.rec.State
	}
	return e
}

func (a *applier) stepHeartbeat(c *engine.StepHeartbeat) (engine.Result, error) {
	l, err := a.fenced(c.LeaseRef, "StepHeartbeat")
	if err != nil {
		return nil, err
	}
	j := l.job
	s, err := a.loadStep(j.ID, c.Step)
	if err != nil {
		return nil, err
	}
	res, before := stepResult(l, c.Step)
	if s == nil {
		if err := a.beat(j, c.Step, c.StepAttempt); err != nil {
			return nil, err
		}
		res.State, res.StepAttempt = engine.StepRunning, c.StepAttempt
	} else if straightTry(s, c.StepAttempt) {
		// The try under the job's lease that ran when an operator gave the
		// step its record: it runs on, and its heartbeat is noted there.
		s.rec.LastHeartbeatMS = a.now
		a.saveStep(l, s)
		res.State, res.StepAttempt = engine.StepRunning, c.StepAttempt
	} else {
		r := s.rec
		if r.Attempt != c.StepAttempt || !r.State.HoldsLease() || r.JobAttempt != 0 && r.JobAttempt != c.Attempt {
			return nil, staleStep(j.ID, c.Step, c.StepAttempt, s, "StepHeartbeat")
		}
		if r.State == engine.StepLeased {
			if _, err := a.stepEvent(l, s, engine.Event{Type: engine.EventStepStarted, Attempt: c.Attempt}, "StepHeartbeat"); err != nil {
				return nil, err
			}
		}
		r.JobAttempt, r.Owner, r.LastHeartbeatMS = c.Attempt, j.LeaseOwner, a.now
		if r.LeaseMS > 0 {
			r.LeaseExpiryMS = max(r.LeaseExpiryMS, a.now+r.LeaseMS)
		}
		a.saveStep(l, s)
	}
	if exp := a.now + c.LeaseMS; exp > j.LeaseExpiryMS {
		j.LeaseExpiryMS = exp
	}
	a.save(l)
	state, attempt := res.State, res.StepAttempt
	a.finishStep(res, l, s, before)
	if s != nil && s.rec.Straight {
		res.State, res.StepAttempt = state, attempt // the straight try's, not the record's
	}
	res.LeaseExpiryMS, res.CancelRequested = j.LeaseExpiryMS, j.CancelRequested
	return res, nil
}

// beat notes the heartbeat of try attempt of a step the job's lease
// covers. A heartbeat of an older try than one already noted, or of a
// step already committed, is stale.
func (a *applier) beat(j *engine.Job, name string, attempt uint32) error {
	i := slices.IndexFunc(j.Beats, func(b engine.StepBeat) bool { return b.Step == name })
	if i >= 0 && j.Beats[i].StepAttempt > attempt {
		return &engine.StaleStepError{Job: j.ID, Step: name, Attempt: attempt, Current: j.Beats[i].StepAttempt, State: engine.StepRunning, Command: "StepHeartbeat"}
	}
	if eff, err := a.effect(j.ID, name); err != nil || eff != nil {
		if err == nil {
			err = &engine.StaleStepError{Job: j.ID, Step: name, Attempt: attempt, State: engine.StepSucceeded, Command: "StepHeartbeat"}
		}
		return err
	}
	b := engine.StepBeat{Step: name, StepAttempt: attempt, AtMS: a.now}
	if i >= 0 {
		j.Beats[i] = b
	} else {
		j.Beats = append(j.Beats, b)
	}
	return nil
}

// dropBeat removes the noted heartbeat of a step, reporting a stale try:
// one older than the heartbeat noted.
func dropBeat(j *engine.Job, name string, attempt uint32, cmd string) error {
	i := slices.IndexFunc(j.Beats, func(b engine.StepBeat) bool { return b.Step == name })
	if i < 0 {
		return nil
	}
	if attempt != 0 && j.Beats[i].StepAttempt > attempt {
		return &engine.StaleStepError{Job: j.ID, Step: name, Attempt: attempt, Current: j.Beats[i].StepAttempt, State: engine.StepRunning, Command: cmd}
	}
	j.Beats = slices.Delete(j.Beats, i, i+1)
	return nil
}

func (a *applier) endStepAttempt(c *engine.EndStepAttempt) (engine.Result, error) {
	l, err := a.fenced(c.LeaseRef, "EndStepAttempt")
	if err != nil {
		return nil, err
	}
	j := l.job
	if eff, err := a.effect(j.ID, c.Step); err != nil || eff != nil {
		if err == nil {
			err = fmt.Errorf("%w: step %q of job %d", engine.ErrStepCommitted, c.Step, j.ID)
		}
		return nil, err
	}
	s, err := a.loadStep(j.ID, c.Step)
	if err != nil {
		return nil, err
	}
	if s == nil {
		// It ran under the job's lease: its history leads to RUNNING (a
		// first try, or one after tries recorded as failed).
		s = newStep(j.ID, c.Step, c.Name, engine.StepRunning)
		s.rec.Attempt = c.StepAttempt
	} else if straightTry(s, c.StepAttempt) {
		// The try that ran under the job's lease when an operator gave the
		// step its record ends as it would have without one.
		s.rec.Straight = false
	} else if r := s.rec; r.Attempt != c.StepAttempt || !r.State.HoldsLease() || r.JobAttempt != 0 && r.JobAttempt != c.Attempt {
		return nil, staleStep(j.ID, c.Step, c.StepAttempt, s, "EndStepAttempt")
	}
	if err := dropBeat(j, c.Step, c.StepAttempt, "EndStepAttempt"); err != nil {
		return nil, err
	}
	r := s.rec
	res, before := stepResult(l, c.Step)
	ev := engine.Event{Attempt: c.Attempt, StepAttempt: c.StepAttempt, Payload: c.Payload, Decision: c.Decision}
	switch c.Outcome {
	case engine.OutcomeRetry:
		ev.Type = engine.EventActivityAttemptFailed
	case engine.OutcomeSwitchResource:
		ev.Type, ev.Resource = engine.EventStepResourceFailed, r.Resource
	case engine.OutcomeNeedsUser:
		ev.Type = engine.EventStepNeedsUser
	}
	if _, err := a.stepEvent(l, s, ev, "EndStepAttempt"); err != nil {
		return nil, err
	}
	r.LeaseExpiryMS, r.JobAttempt = 0, 0
	switch c.Outcome {
	case engine.OutcomeNeedsUser:
		// The unit stays: the person answers for the resource the
		// question came from.
		r.Question, r.AnswerDueMS = c.Payload, 0
		if c.AnswerTimeoutMS > 0 {
			r.AnswerDueMS = a.now + c.AnswerTimeoutMS
		}
		if c.LeaseMS > 0 {
			r.LeaseMS = c.LeaseMS
		} else if r.LeaseMS == 0 {
			r.LeaseMS = defaultAnswerLeaseMS
		}
	case engine.OutcomeSwitchResource:
		if ev.Resource != "" && !slices.Contains(r.Avoid, ev.Resource) {
			r.Avoid = append(r.Avoid, ev.Resource)
		}
		fallthrough
	default:
		if err := a.release(s); err != nil {
			return nil, err
		}
	}
	a.saveStep(l, s)
	a.save(l)
	a.finishStep(res, l, s, before)
	return res, nil
}

func (a *applier) answerStep(c *engine.AnswerStep) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	j := l.job
	if j.Status.Terminal() {
		return nil, fmt.Errorf("%w: answer to step %q of job %d in status %s", engine.ErrJobClosed, c.Step, j.ID, j.Status)
	}
	s, err := a.loadStep(j.ID, c.Step)
	if err != nil {
		return nil, err
	}
	if s == nil || s.rec.State != engine.StepNeedsUser {
		e := &engine.StepStateError{Job: j.ID, Step: c.Step, Command: "AnswerStep"}
		if s != nil {
			e.State = s.rec.State
		}
		return nil, e
	}
	res, before := stepResult(l, c.Step)
	if err := a.answer(l, s, c.Answer, "", c.By); err != nil {
		return nil, err
	}
	a.save(l)
	a.finishStep(res, l, s, before)
	return res, nil
}

// answer moves a NEEDS_USER step to RUNNING under a new try with a step
// lease the job's next LeaseStep adopts, and wakes the job. by names the
// person who answered (Header.By), when known.
func (a *applier) answer(l *loaded, s *step, answer []byte, reason, by string) error {
	r := s.rec
	ev := engine.Event{Type: engine.EventStepAnswered, StepAttempt: r.Attempt + 1, Payload: answer, Reason: reason, By: by}
	if _, err := a.stepEvent(l, s, ev, "AnswerStep"); err != nil {
		return err
	}
	r.Question, r.AnswerDueMS, r.JobAttempt, r.Owner = nil, 0, 0, ""
	r.LeaseExpiryMS = a.now + r.LeaseMS
	if r.Resource != "" && !r.Released {
		// The unit it kept is now the new try's.
		rs, err := readResource(a.tx.Get, r.Resource)
		if err != nil {
			return err
		}
		if rs != nil {
			if i := holderOf(rs, r.Job, r.Step); i >= 0 {
				rs.Holders[i].StepAttempt = r.Attempt
				a.saveResource(rs)
			}
		}
	}
	a.saveStep(l, s)
	return a.wakeForStep(l, r.Step)
}

func (a *applier) expireSteps(c *engine.ExpireSteps) (engine.Result, error) {
	return a.sweep(storage.StepDuePrefix, storage.KeyLowStepDue, c.Max, func(tk storage.TimeKey, key []byte, res *engine.SweepResult) error {
		s, err := a.loadStep(engine.JobID(tk.Job), tk.Rest)
		if err != nil || s == nil {
			return err
		}
		l, err := a.load(engine.JobID(tk.Job))
		if err != nil {
			return err
		}
		r := s.rec
		// Only the entry the record names is live; any other is stale
		// (renewed, ended, answered, or its job ended).
		switch {
		case l.job.Status.Terminal():
			return nil
		case r.State == engine.StepNeedsUser && r.AnswerDueMS == tk.AtMS:
			if err := a.answer(l, s, nil, engine.ReasonAnswerTimeout, ""); err != nil {
				return err
			}
		case r.State.HoldsLease() && r.LeaseExpiryMS == tk.AtMS:
			if err := a.timeoutStep(l, s, engine.ReasonStepLeaseExpired); err != nil {
				return err
			}
		default:
			return nil
		}
		a.save(l)
		res.Jobs = append(res.Jobs, l.job.ID)
		return nil
	})
}

// workerEvent appends an event a worker wrote (AppendEvents, Wait.Events).
// An activity event of a step that has a step record is refused: its
// tries are recorded by EndStepAttempt, which keeps the record and the
// history together. The one exception is the failed try of a Straight
// record's step (an operator gave it the record while the try ran under
// the job's lease): its record goes through the step record, and ends the
// exception. A failed try of any other try of such a step is stale.
func (a *applier) workerEvent(l *loaded, ev engine.Event, cmd string) error {
	if engine.IsStepEvent(ev.Type) && ev.Step != "" {
		s, err := a.loadStep(l.job.ID, ev.Step)
		if err != nil {
			return err
		}
		switch {
		case s == nil:
		case ev.Type == engine.EventActivityAttemptFailed && straightTry(s, ev.StepAttempt):
			s.rec.Straight = false
			if _, err := a.stepEvent(l, s, ev, cmd); err != nil {
				return err
			}
			a.saveStep(l, s)
			return nil
		case ev.Type == engine.EventActivityAttemptFailed:
			return staleStep(l.job.ID, ev.Step, ev.StepAttempt, s, cmd)
		default:
			return engine.InvalidField(cmd, "Events", fmt.Sprintf("step %q has a step record: record its tries with EndStepAttempt", ev.Step))
		}
	}
	_, err := a.appendEvent(l, ev)
	return err
}

// straightTry reports whether attempt is the try of a Straight record's
// step that may still end it: the one after the tries its record counts.
func straightTry(s *step, attempt uint32) bool {
	return s != nil && s.rec.Straight && attempt == s.rec.Attempt+1
}

// commitAllowed checks a step commit against the step's live try: a step
// with a record commits from its newest try, leased or running (a failure
// also once FAILED_FATAL); a commit that fails the step where it waits
// (ReasonNotStarted) only while it waits, from its newest try (or with no
// try, which the engine numbers as the newest); one without a record from
// a try no older than its last heartbeat. Any other try is stale
// (ErrStaleAttempt), even one of the newest attempt whose lease ran out.
func (a *applier) commitAllowed(j *engine.Job, s *step, c *engine.CommitStep) error {
	if s == nil {
		return dropBeat(j, c.Step, c.StepAttempt, "CommitStep")
	}
	r := s.rec
	switch {
	case c.CatchUp:
		return nil
	case straightTry(s, c.StepAttempt) && c.Reason != engine.ReasonNotStarted:
		return nil // the try that ran when an operator gave the step its record
	case c.Reason == engine.ReasonNotStarted:
		// Not from an older try, one never leased, or one a person's
		// answer replaced; and never while a try runs, whose own end
		// decides the step.
		if !r.State.Waits() || (c.StepAttempt != 0 && c.StepAttempt != r.Attempt) {
			return staleStep(j.ID, c.Step, c.StepAttempt, s, "CommitStep(not_started)")
		}
		return nil
	case c.StepAttempt != r.Attempt:
		return staleStep(j.ID, c.Step, c.StepAttempt, s, "CommitStep")
	case r.State.HoldsLease(), r.State == engine.StepFailedFatal && c.Failed:
		return nil
	case r.State.Terminal():
		return fmt.Errorf("%w: step %q of job %d", engine.ErrStepCommitted, c.Step, j.ID)
	}
	// Its try no longer holds the step: its lease ran out, or it ended.
	return staleStep(j.ID, c.Step, c.StepAttempt, s, "CommitStep")
}

// commitExplicit appends the commit event of a step with a record, ends
// the step in it and releases what it held.
func (a *applier) commitExplicit(l *loaded, s *step, ev engine.Event) (uint64, error) {
	r := s.rec
	if ev.StepAttempt == 0 {
		ev.StepAttempt = r.Attempt
	}
	seq, err := a.stepEvent(l, s, ev, "CommitStep")
	if err != nil {
		return 0, err
	}
	if r.WaiterSeq != 0 {
		a.tx.Delete(storage.WaiterKey(r.WaiterSeq, uint64(r.Job), r.Step))
		r.WaiterSeq = 0
	}
	r.LeaseExpiryMS, r.AnswerDueMS, r.JobAttempt, r.Question, r.UnitRefusal = 0, 0, 0, nil, nil
	if err := a.release(s); err != nil {
		return 0, err
	}
	a.saveStep(l, s)
	return seq, nil
}

// promoteDependents leases the steps of l that waited for done and whose
// dependencies have now all succeeded (WAITING_DEPS to LEASED, or to the
// waiter queue for a unit). A step no resource can serve stays where it
// is: the worker's LeaseStep learns why and fails it.
func (a *applier) promoteDependents(l *loaded, done string) error {
	for _, name := range slices.Clone(l.job.LiveSteps) {
		s, err := a.loadStep(l.job.ID, name)
		if err != nil {
			return err
		}
		if s == nil || s.rec.State != engine.StepWaitingDeps || !slices.Contains(s.rec.DependsOn, done) || s.rec.Pause != nil {
			continue // a paused step is leased by its worker once unpaused
		}
		ok, err := a.depsDone(l.job.ID, s.rec)
		if err != nil || !ok {
			if errors.Is(err, engine.ErrDependencyFailed) {
				continue
			}
			return err
		}
		if _, err := a.acquire(l, s, 0); err != nil && !errors.Is(err, engine.ErrNoResource) {
			return err
		}
	}
	return nil
}

// stepDueMS is the time of the step's entry in the step deadline index: its
// answer's timeout while it needs a person, else its lease's expiry; 0
// when it has neither.
func stepDueMS(s *engine.StepRecord) int64 {
	if s.State == engine.StepNeedsUser {
		return s.AnswerDueMS
	}
	return s.LeaseExpiryMS
}

// serves reports whether resource r may take a new lease of step rec: it offers what
// the step needs, is not drained and is not on the step's avoid-list.
func serves(r *engine.Resource, rec *engine.StepRecord) bool {
	return !r.Drained && !slices.Contains(rec.Avoid, r.ID) && r.Offers(rec.Capabilities, rec.Selector)
}

func holderOf(r *engine.Resource, job engine.JobID, step string) int {
	for i, h := range r.Holders {
		if h.Job == job && h.Step == step {
			return i
		}
	}
	return -1
}

// needsResource reports whether a step leases a resource unit.
func needsResource(s *engine.StepRecord) bool { return len(s.Capabilities) > 0 || len(s.Selector) > 0 }
