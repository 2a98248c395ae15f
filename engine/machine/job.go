package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// loaded is a job as Apply read it, kept beside the version being changed so
// that save can move exactly the index entries that changed.
type loaded struct {
	old *engine.Job // nil for a job created by this command
	job *engine.Job
}

// load reads job id. A command that loads the same job twice (a step of
// one job freeing a unit for another step of it, a sweep reaching two
// entries of one job) gets the same *loaded, so no change is lost to a
// stale copy.
func (a *applier) load(id engine.JobID) (*loaded, error) {
	if l, ok := a.jobs[id]; ok {
		return l, nil
	}
	key := storage.JobKey(uint64(id))
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownJob(id)
	}
	if err != nil {
		return nil, err
	}
	j := new(engine.Job)
	if _, err := storage.DecodeAt(key, b, storage.KindJob, jobVersion, j); err != nil {
		return nil, err
	}
	l := &loaded{old: j.Clone(), job: j}
	a.remember(l)
	return l, nil
}

// remember keeps l for the later loads of its job in this command.
func (a *applier) remember(l *loaded) {
	if a.jobs == nil {
		a.jobs = map[engine.JobID]*loaded{}
	}
	a.jobs[l.job.ID] = l
}

// resolve finds the job a Target names.
func (a *applier) resolve(t engine.Target) (*loaded, error) {
	if t.Job != 0 {
		return a.load(t.Job)
	}
	b, err := a.tx.Get(storage.WorkflowKey(t.WorkflowID))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: workflow id %q", engine.ErrUnknownJob, t.WorkflowID)
	}
	if err != nil {
		return nil, err
	}
	id, err := storage.ParseU64(b)
	if err != nil {
		return nil, err
	}
	return a.load(engine.JobID(id))
}

// fenced loads a job for a write by attempt ref and refuses it unless that
// attempt is the job's current one, the job is Running under it, and ref
// carries the attempt's lease token.
func (a *applier) fenced(ref engine.LeaseRef, cmd string) (*loaded, error) {
	l, err := a.load(ref.Job)
	if err != nil {
		return nil, err
	}
	j := l.job
	if j.Status != engine.StatusRunning || j.Attempt != ref.Attempt {
		return nil, &engine.StaleAttemptError{Job: j.ID, Attempt: ref.Attempt, Current: j.Attempt, Status: j.Status, Command: cmd}
	}
	if !tokenMatches(j.LeaseDigest, ref.Token) {
		// The attempt is public; the token is what proves the lease.
		return nil, &engine.StaleAttemptError{Job: j.ID, Attempt: ref.Attempt, Current: j.Attempt, Status: j.Status, Command: cmd, WrongToken: true}
	}
	return l, nil
}

// save writes the job record and brings the indexes along. Exact indexes
// (status, type, queue, ready, delayed) move from what the old record
// implied to what the new one implies. Swept indexes (leases, timers,
// deadlines) only
// gain entries: an entry the job no longer needs stays behind, stale, until
// the sweep that reaches its time removes it. Deleting it now would leave a
// deletion marker ahead of the index's low-water mark, where every scan would
// have to walk it until Badger compacts — and a busy engine finishes jobs
// far faster than that.
func (a *applier) save(l *loaded) {
	j := l.job
	j.UpdatedMS = a.now
	a.armDeadline(j)
	a.noteJobSaved(l)
	a.tx.Set(storage.JobKey(uint64(j.ID)), EncodeJob(j))
	var exactBefore, sweptBefore []string
	if l.old != nil {
		exactBefore, sweptBefore = exactIndexKeys(l.old), sweptIndexKeys(l.old)
	}
	exactAfter := exactIndexKeys(j)
	for _, k := range exactBefore {
		if !containsKey(exactAfter, k) {
			a.tx.Delete([]byte(k))
		}
	}
	for _, k := range exactAfter {
		if !containsKey(exactBefore, k) {
			a.tx.Set([]byte(k), nil)
		}
	}
	for _, k := range sweptIndexKeys(j) {
		if !containsKey(sweptBefore, k) {
			a.tx.Set([]byte(k), nil)
		}
	}
	l.old = j.Clone()
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// exactIndexKeys lists the entries of the exact indexes a job record implies:
// the list's (status, type, queue, the runs of its workflow id, and the
// closing time of a run that ended), a parent's open children, and the
// ready and delayed queues. The workflow-id key is not among them: it names
// the latest run and holds a value.
func exactIndexKeys(j *engine.Job) []string {
	id := uint64(j.ID)
	keys := make([]string, 0, 6)
	keys = append(keys,
		string(storage.StatusKey(byte(j.Status), id)),
		string(storage.TypeKey(j.Type, id)),
		string(storage.QueueKey(j.Queue, id)),
		string(storage.RunsKey(j.WorkflowID, id)))
	if j.Status.Terminal() {
		keys = append(keys, string(storage.ClosedKey(j.ClosedMS, id)))
	}
	if j.ParentID != 0 && !j.Status.Terminal() {
		keys = append(keys, string(storage.ChildKey(uint64(j.ParentID), id)))
	}
	if j.Paused() && !j.Status.Terminal() {
		keys = append(keys, string(storage.PausedKey(id)))
	}
	switch {
	case j.Status == engine.StatusQueued && j.Paused():
		// Held by a pause: in no claim index until it is unpaused.
	case j.Status == engine.StatusQueued && j.DeferredUntilMS > 0:
		// Passed over by a claimer that does not run its type: held back
		// in the delayed index until its backoff ends.
		keys = append(keys, string(storage.DelayedKey(j.DeferredUntilMS, id)))
	case j.Status == engine.StatusQueued:
		keys = append(keys, string(storage.ReadyKey(j.Queue, j.ReadyAtMS, id)))
	case j.Status == engine.StatusRetrying:
		keys = append(keys, string(storage.DelayedKey(j.ReleaseAtMS, id)))
	}
	return keys
}

// sweptIndexKeys lists the lease, timer and deadline entries a job record
// needs.
func sweptIndexKeys(j *engine.Job) []string {
	id := uint64(j.ID)
	keys := make([]string, 0, 2+len(j.Timers))
	if j.Status == engine.StatusRunning {
		keys = append(keys, string(storage.LeaseKey(j.LeaseExpiryMS, id)))
	}
	if j.TimeoutAtMS > 0 {
		keys = append(keys, string(storage.DeadlineKey(j.TimeoutAtMS, id)))
	}
	for _, t := range j.Timers {
		keys = append(keys, string(storage.TimerKey(t.FireMS, id, t.ID)))
	}
	return keys
}

// nextDeadline returns the earliest of an open job's schedule-to-start,
// execution and run deadlines and the reason its passing records; 0 when
// the job has none or has ended. Equal deadlines are reported in that
// order: a job never claimed by the time its execution deadline passes
// too ends as a schedule-to-start timeout, as Temporal's server reports an
// activity whose ScheduleToStart and ScheduleToClose timers fall together
// (its ScheduleToStartTimeout defaults to the ScheduleToCloseTimeout).
func nextDeadline(j *engine.Job) (int64, string) {
	if j.Status.Terminal() {
		return 0, ""
	}
	at, reason := int64(0), ""
	for _, d := range []struct {
		at     int64
		reason string
	}{{j.StartDeadlineMS, engine.ReasonScheduleToStart}, {j.DeadlineMS, engine.ReasonExecutionTimeout}, {j.RunDeadlineMS, engine.ReasonRunTimeout}} {
		if d.at > 0 && (at == 0 || d.at < at) {
			at, reason = d.at, d.reason
		}
	}
	return at, reason
}

// armDeadline sets j.TimeoutAtMS, the time of j's entry in the deadline
// index, from its deadlines. The entry goes at the earliest deadline, but
// never below now: a deadline that already passed when the entry is made
// (a continued run's inherited execution deadline, an operator's retry of
// a failed run) is entered as due now, because the index's low-water mark
// may already be as late as now and nothing below it is ever looked at.
// The entry moves when the earliest deadline does: later when one is
// cleared (the first claim clears the schedule-to-start one), earlier when
// one is added (the deadline a continued run inherits). An entry already
// due stays where it is until its sweep. The entry it leaves behind is
// stale, and its sweep drops it.
func (a *applier) armDeadline(j *engine.Job) {
	next, _ := nextDeadline(j)
	switch t := j.TimeoutAtMS; {
	case next == 0:
		j.TimeoutAtMS = 0
	case t == 0 || next > t || (next < t && t > a.now):
		j.TimeoutAtMS = max(next, a.now)
	}
}

// appendEvent numbers and stamps ev, checks that a status event is legal in
// the job's status, writes it and brings the job record along: status, lease,
// ready time, wait and timers. It does not save the record (the caller does,
// once per command, after all its events).
func (a *applier) appendEvent(l *loaded, ev engine.Event) (uint64, error) {
	j := l.job
	from := j.Status
	to, ok := engine.Next(from, &ev)
	if !ok {
		return 0, &engine.TransitionError{Job: j.ID, From: from, Event: ev.Type}
	}
	j.LastSeq++
	ev.Seq = j.LastSeq
	ev.AtMS = a.now
	a.tx.Set(storage.EventKey(uint64(j.ID), ev.Seq), EncodeEvent(&ev))
	a.noteStepEvent(j.ID, &ev)
	if engine.IsStatusEvent(ev.Type) {
		a.enter(j, to, &ev)
		if to.Terminal() && len(j.LiveSteps) > 0 {
			if err := a.endSteps(l); err != nil {
				return 0, err
			}
		}
		if to.Terminal() && j.Pause != nil {
			// A paused run that ended holds its activity tasks no more:
			// held, they would wait for an unpause that cannot come.
			if err := a.holdTasks(j, false, ""); err != nil {
				return 0, err
			}
		}
	}
	return ev.Seq, nil
}

// enter sets the fields that belong to status to; the index entries follow
// from them in save.
func (a *applier) enter(j *engine.Job, to engine.Status, ev *engine.Event) {
	j.Status = to
	j.LeaseOwner, j.LeaseExpiryMS = "", 0
	if to != engine.StatusWaiting && to != engine.StatusParked {
		// A waiting attempt keeps its token's digest: an activity task
		// parked for asynchronous completion is completed by it. A claim
		// sets the new attempt's after this.
		j.LeaseDigest = nil
	}
	j.ReadyAtMS, j.ReleaseAtMS, j.DeferredUntilMS = 0, 0, 0
	j.Wait = nil
	j.Beats = nil
	switch to {
	case engine.StatusQueued:
		j.ReadyAtMS = a.now
	case engine.StatusRunning:
		j.LeaseOwner, j.LeaseExpiryMS = ev.Name, ev.LeaseExpiryMS
	case engine.StatusRetrying:
		j.ReleaseAtMS = a.now + ev.DelayMS
	case engine.StatusWaiting, engine.StatusParked:
		w := *ev.Wait
		j.Wait = &w
	case engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled, engine.StatusTimedOut, engine.StatusTerminated:
		j.ClosedMS = a.now
		j.Timers = nil
	}
}

// linkRuns records that next continued prev (prev ended and next took its
// place as the run of its workflow id), and how: one of the reasons of
// Job.NextRunReason. Both records are saved.
func (a *applier) linkRuns(prev, next *loaded, reason string) {
	prev.job.NextRunID, prev.job.NextRunReason = next.job.ID, reason
	next.job.PrevRunID = prev.job.ID
	a.save(prev)
	a.save(next)
}

// nextJobID takes the next job id from the counter; a shard of a sharded
// cluster puts its index in the id's high bits (shard.go).
func (a *applier) nextJobID() (engine.JobID, error) {
	n, err := a.u64(storage.KeyNextJob)
	if err != nil {
		return 0, err
	}
	n++
	id, err := a.shardID(n, "job")
	if err != nil {
		return 0, err
	}
	a.tx.Set(storage.KeyNextJob, storage.U64(n))
	return engine.JobID(id), nil
}

// wake ends a job's wait with wait_completed when it is Waiting or Parked.
func (a *applier) wake(l *loaded, reason, name string) (bool, error) {
	if s := l.job.Status; s != engine.StatusWaiting && s != engine.StatusParked {
		return false, nil
	}
	_, err := a.appendEvent(l, engine.Event{Type: engine.EventWaitCompleted, Reason: reason, Name: name})
	return err == nil, err
}

// effect reads the effect record of step in job id, or nil.
func (a *applier) effect(id engine.JobID, step string) (*engine.Effect, error) {
	key := storage.EffectKey(uint64(id), step)
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e := new(engine.Effect)
	if _, err := storage.DecodeAt(key, b, storage.KindEffect, effectVersion, e); err != nil {
		return nil, err
	}
	return e, nil
}

// closeChildren applies each open child's parent-close policy after its
// parent ended by Terminate or a timeout: a terminated child's own children
// follow in turn. Children are visited in job id order.
func (a *applier) closeChildren(parent *engine.Job) error {
	// The children on other shards first: their policies travel through
	// the outbox (outbox.go).
	if err := a.closeRemoteChildren(parent); err != nil {
		return err
	}
	ids, err := a.openChildren(parent.ID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		c, err := a.load(id)
		if err != nil {
			return err
		}
		if err := a.closeChild(parent, c); err != nil {
			return err
		}
	}
	return nil
}

// openChildren returns the ids of the open children of a job, in job id
// order.
func (a *applier) openChildren(parent engine.JobID) ([]engine.JobID, error) {
	var ids []engine.JobID
	err := a.tx.Scan(storage.ChildPrefix(uint64(parent)), nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.ParseChildKey(k)
		ids = append(ids, engine.JobID(id))
		return err == nil, err
	})
	return ids, err
}

// closeChild applies c's parent-close policy after its parent ended by
// Terminate, a timeout or a reset; a child that ended already is left
// alone.
func (a *applier) closeChild(parent *engine.Job, c *loaded) error {
	if c.job.Status.Terminal() {
		return nil
	}
	reason := "parent " + parent.WorkflowID + " ended"
	switch c.job.ParentClosePolicy {
	case engine.ParentCloseTerminate:
		ev := engine.Event{Type: engine.EventJobTerminated, Attempt: c.job.Attempt, Reason: reason, Payload: engine.EncodeTerminatedFailure(reason)}
		if _, err := a.appendEvent(c, ev); err != nil {
			return err
		}
		if err := a.closed(c, &ev); err != nil {
			return err
		}
	case engine.ParentCloseRequestCancel:
		c.job.CancelRequested = true
		if _, err := a.appendEvent(c, engine.Event{Type: engine.EventCancelRequested, Reason: reason}); err != nil {
			return err
		}
		if _, err := a.wake(c, "cancel", ""); err != nil {
			return err
		}
	default:
		return nil // abandoned
	}
	a.save(c)
	return nil
}

// closed runs what a job's end implies beyond its own record: a child's
// result becomes the effect of its parent's step (phase 1). A parent waiting
// for that step is woken (wait_completed); a parent that is not blocked at
// all (Queued, Running, Retrying, Draft, Suspended) gets effect_recorded, so
// a worker driving it learns of the effect from its history. The first
// result recorded for a step wins; a parent that ended takes none.
func (a *applier) closed(l *loaded, ev *engine.Event) error {
	j := l.job
	a.scheduleRunClosed(j)
	if ev.Type == engine.EventJobTerminated || ev.Type == engine.EventJobTimedOut {
		// Ended by the engine, not by its code: no worker will apply the
		// parent-close policies of its children, so the engine does. The
		// record is saved first: a child that ends loads its parent again
		// and must find it ended.
		a.save(l)
		if err := a.closeChildren(j); err != nil {
			return err
		}
	}
	if j.ParentID == 0 {
		return nil
	}
	failed := ev.Type != engine.EventJobCompleted
	if a.remoteJob(j.ParentID) {
		// The parent lives on another shard: the effect travels there
		// through this shard's outbox, written in this transaction.
		return a.sendChildClosed(j, ev.Payload, failed)
	}
	p, err := a.load(j.ParentID)
	if errors.Is(err, engine.ErrUnknownJob) {
		return nil
	}
	if err != nil {
		return err
	}
	return a.recordChildEffect(p, j.ParentStep, ev.Payload, failed)
}

// recordChildEffect writes a child's end as the effect of step of its
// parent p and wakes p, as closed describes; a parent that ended, or a step
// whose effect is recorded already, takes nothing.
func (a *applier) recordChildEffect(p *loaded, step string, payload []byte, failed bool) error {
	if p.job.Status.Terminal() {
		return nil
	}
	if e, err := a.effect(p.job.ID, step); err != nil || e != nil {
		return err
	}
	eff := &engine.Effect{Step: step, Payload: payload, Failed: failed, AtMS: a.now}
	a.tx.Set(storage.EffectKey(uint64(p.job.ID), step), EncodeEffect(eff))
	switch s := p.job.Status; {
	case waitsForStep(p.job.Wait, step):
		if _, err := a.wake(p, "step", step); err != nil {
			return err
		}
	case s != engine.StatusWaiting && s != engine.StatusParked:
		if _, err := a.appendEvent(p, engine.Event{Type: engine.EventEffectRecorded, Step: step}); err != nil {
			return err
		}
	default:
		return nil // blocked on something else: it reads the effect when woken
	}
	a.save(p)
	return nil
}
