package machine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The write budget of one reset: the copied history, its effects and step
// records, and the events and records of the runs it ends. It stays well
// below a transaction's limit with Badger's default 16 MiB memtables
// (about 2 MiB), so a reset either fits or is refused with a clear error,
// never failing in the batch and being retried for ever.
const (
	resetBudgetBytes = 1536 << 10
	resetBudgetKeys  = 10_000
)

// resetJob applies ResetJob: the new run gets the base run's history up to
// the reset point (less the events of steps that had not ended by then,
// which run again), a workflow_reset event, the signals and updates the
// base run received after the point, and the event that makes it ready
// for its next turn; the runs it replaces end. docs/state-machines.md §1
// ("Reset") says what each kind of the base run's state becomes.
func (a *applier) resetJob(c *engine.ResetJob) (engine.Result, error) {
	base, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	b := base.job
	if c.Job != 0 && c.WorkflowID != "" && b.WorkflowID != c.WorkflowID {
		return nil, fmt.Errorf("%w: job %d is a run of workflow id %q, not of %q", engine.ErrUnknownJob, b.ID, b.WorkflowID, c.WorkflowID)
	}
	if strings.HasPrefix(b.Type, engine.ActivityTypePrefix) {
		return nil, engine.InvalidField("ResetJob", "Target", fmt.Sprintf("job %d is an activity task (type %q), not a workflow run: reset the workflow that scheduled it", b.ID, b.Type))
	}
	hist, err := a.readEvents(b.ID)
	if err != nil {
		return nil, err
	}
	point, err := resetPoint(b.ID, hist, c)
	if err != nil {
		return nil, err
	}
	plan := planReset(hist[:point])
	var kept, reapply []engine.Event
	for i := range hist[:point] {
		if !plan.drop(&hist[i]) {
			kept = append(kept, hist[i])
		}
	}
	for _, ev := range hist[point:] {
		if ev.Type != engine.EventSignalReceived {
			continue
		}
		if update := ev.Name == engine.UpdateSignalName; update && c.ExcludeUpdates || !update && c.ExcludeSignals {
			continue
		}
		reapply = append(reapply, ev)
	}
	if keys, size := resetSize(kept, reapply); keys > resetBudgetKeys || size > resetBudgetBytes {
		return nil, resetTooLarge(b.ID, point, keys, size)
	}

	id, err := a.nextJobID()
	if err != nil {
		return nil, err
	}
	nl := &loaded{job: &engine.Job{
		ID: id, WorkflowID: b.WorkflowID, Type: b.Type, Queue: b.Queue, StartDigest: b.StartDigest,
		ParentID: b.ParentID, ParentStep: b.ParentStep, ParentWorkflowID: b.ParentWorkflowID, ParentClosePolicy: b.ParentClosePolicy,
		Retry: b.Retry, RunAttempt: b.RunAttempt, TraceParent: b.TraceParent, TimeoutOnLeaseExpiry: b.TimeoutOnLeaseExpiry,
		ScheduleID: b.ScheduleID, CronSchedule: b.CronSchedule,
		// The chain's execution deadline stands, as for a continued run;
		// the run timeout starts afresh with the new run.
		DeadlineMS: b.DeadlineMS, RunTimeoutMS: b.RunTimeoutMS,
		ResetBaseRunID: b.ID, ResetEventID: point, CreatedMS: a.now,
	}}
	if b.RunTimeoutMS > 0 {
		nl.job.RunDeadlineMS = a.now + b.RunTimeoutMS
	}
	a.remember(nl)
	newSeq := make(map[uint64]uint64, len(kept))
	for _, ev := range kept {
		old := ev.Seq
		if err := a.copyEvent(nl, ev); err != nil {
			return nil, err
		}
		newSeq[old] = nl.job.LastSeq
	}
	copied := nl.job.LastSeq
	if _, err := a.appendEvent(nl, engine.Event{Type: engine.EventWorkflowReset, Reason: c.Reason, By: c.By,
		BaseRunID: b.ID, ResetEventID: point}); err != nil {
		return nil, err
	}
	res := &engine.ResetResult{Job: id, WorkflowID: b.WorkflowID, BaseJob: b.ID, Seq: point, CopiedEvents: copied}
	for _, ev := range reapply {
		if _, err := a.appendEvent(nl, engine.Event{Type: engine.EventSignalReceived, Name: ev.Name, Payload: ev.Payload, By: ev.By, Reason: engine.ReasonReset}); err != nil {
			return nil, err
		}
		res.Reapplied++
	}
	wake := engine.Event{Type: engine.EventJobRequeued, Reason: engine.ReasonReset}
	if s := nl.job.Status; s == engine.StatusWaiting || s == engine.StatusParked {
		wake = engine.Event{Type: engine.EventWaitCompleted, Reason: engine.ReasonReset}
	}
	if _, err := a.appendEvent(nl, wake); err != nil {
		return nil, err
	}
	if err := a.copyStepState(b.ID, nl, plan, newSeq); err != nil {
		return nil, err
	}

	// The runs the new one replaces: the base run, and the workflow id's
	// current run when that is another, open one.
	cur, err := a.resolve(engine.Target{WorkflowID: b.WorkflowID})
	if err != nil {
		return nil, err
	}
	// The new run follows the id's current run in its chain when the reset
	// replaces that run: it is the base, or an open run the reset ends.
	follows := cur == base || !cur.job.Status.Terminal()
	ended := []*loaded{base}
	if cur != base && !cur.job.Status.Terminal() {
		ended = append(ended, cur) // a closed current run is no business of this reset
	}
	for _, l := range ended {
		wasOpen := !l.job.Status.Terminal()
		if err := a.endForReset(l, nl.job, point, c, l == base, plan); err != nil {
			return nil, err
		}
		if wasOpen {
			res.Terminated = append(res.Terminated, l.job.ID)
		}
	}
	// As a continued run does: the current run was the id's newest, so it
	// names no next run yet.
	if follows && cur.job.NextRunID == 0 {
		a.linkRuns(cur, nl, engine.ReasonReset)
	}
	a.save(nl)
	a.tx.Set(storage.WorkflowKey(b.WorkflowID), storage.U64(uint64(id)))
	if a.tx.Len() > resetBudgetKeys || a.tx.Bytes() > resetBudgetBytes {
		// What the estimate above left out (effects, step records, the
		// children) took it over.
		return nil, resetTooLarge(b.ID, point, a.tx.Len(), a.tx.Bytes())
	}
	return res, nil
}

// resetEventOverheadBytes is what an event costs in a transaction beside
// its payloads: its key and its other fields, generously.
const resetEventOverheadBytes = 256

// resetSize estimates the keys and bytes a reset writes for the events it
// copies and reapplies, before it writes any.
func resetSize(kept, reapply []engine.Event) (keys int, size int64) {
	for _, evs := range [][]engine.Event{kept, reapply} {
		for i := range evs {
			size += int64(len(evs[i].Payload)+len(evs[i].LastResult)) + resetEventOverheadBytes
		}
	}
	return len(kept) + len(reapply), size
}

func resetTooLarge(job engine.JobID, point uint64, keys int, size int64) error {
	return fmt.Errorf("%w: the reset of job %d to event %d writes about %d keys and %d bytes, over what one command may write (%d keys, %d bytes): reset to an earlier point",
		engine.ErrPayloadTooLarge, job, point, keys, size, resetBudgetKeys, resetBudgetBytes)
}

// readEvents reads the whole history of job id.
func (a *applier) readEvents(id engine.JobID) ([]engine.Event, error) {
	var hist []engine.Event
	err := a.tx.Scan(storage.EventPrefix(uint64(id)), nil, true, func(k, v []byte) (bool, error) {
		var ev engine.Event
		if _, err := storage.DecodeAt(k, v, storage.KindEvent, eventVersion, &ev); err != nil {
			return false, err
		}
		hist = append(hist, ev)
		return true, nil
	})
	return hist, err
}

// resetPoint returns the seq of the reset point c asks for in hist, or a
// *ResetPointError naming the valid ones.
func resetPoint(job engine.JobID, hist []engine.Event, c *engine.ResetJob) (uint64, error) {
	var valid []uint64
	for i := range hist {
		if engine.IsResetPoint(hist[i].Type) {
			valid = append(valid, hist[i].Seq)
		}
	}
	if len(valid) == 0 {
		return 0, engine.NewResetPointError(job, c.Seq, "", nil, "it was started as a draft and never activated, so no turn of it began")
	}
	switch c.Type {
	case engine.ResetFirstWorkflowTask:
		return valid[0], nil
	case engine.ResetLastWorkflowTask:
		return valid[len(valid)-1], nil
	}
	if c.Seq > uint64(len(hist)) {
		return 0, engine.NewResetPointError(job, c.Seq, "", valid, "")
	}
	if ev := &hist[c.Seq-1]; !engine.IsResetPoint(ev.Type) {
		return 0, engine.NewResetPointError(job, c.Seq, ev.Type, valid, "")
	}
	return c.Seq, nil
}

// resetPlan is what a reset keeps of the steps of the copied history.
type resetPlan struct {
	// committed are the steps whose result the copied history commits.
	committed map[string]bool
	// remote are the steps whose result another job brings (a child
	// workflow, an activity on another queue): their records are kept
	// whether or not their result came, and the job is reconnected.
	remote map[string]bool
}

func planReset(prefix []engine.Event) *resetPlan {
	p := &resetPlan{committed: map[string]bool{}, remote: map[string]bool{}}
	for i := range prefix {
		ev := &prefix[i]
		switch {
		case ev.Commit:
			p.committed[ev.Step] = true
		case ev.Type == engine.EventChildScheduled || ev.Type == engine.EventActivityScheduled:
			p.remote[ev.Step] = true
		}
	}
	return p
}

// drop reports whether the copy leaves ev out: an event of an activity
// step the worker runs itself (its tries, its step lease, its question)
// or of a review task, when the step had not ended by the point. Such a
// step runs again in the new run from its first try, and its review task
// is asked for again (and found: see createReview). The run's own pause
// and unpause are left out too: a pause holds the run it was given to, as
// Temporal's holds one run, so the new run starts unpaused
// (docs/state-machines.md §6, "Reset and pause").
func (p *resetPlan) drop(ev *engine.Event) bool {
	if ev.Type == engine.EventWorkflowPaused || ev.Type == engine.EventWorkflowUnpaused {
		return true
	}
	if ev.Step == "" || p.committed[ev.Step] || p.remote[ev.Step] {
		return false
	}
	return engine.IsStepEvent(ev.Type) || ev.Type == engine.EventReviewScheduled
}

// copyEvent appends ev, an event of another run's history, to l's history
// as it was (its time, attempt and fields), numbered next; its status
// event moves l's status without the bookkeeping of a status entered now
// (the reset's own events after the copy do that).
func (a *applier) copyEvent(l *loaded, ev engine.Event) error {
	j := l.job
	to, ok := engine.Next(j.Status, &ev)
	if !ok {
		return &engine.TransitionError{Job: j.ID, From: j.Status, Event: ev.Type}
	}
	j.LastSeq++
	ev.Seq = j.LastSeq
	a.tx.Set(storage.EventKey(uint64(j.ID), ev.Seq), EncodeEvent(&ev))
	j.Status = to
	switch ev.Type {
	case engine.EventJobLeased:
		j.Attempt = max(j.Attempt, ev.Attempt)
	case engine.EventCancelRequested:
		j.CancelRequested = true
	case engine.EventJobRequeued:
		if ev.Reason == engine.ReasonRetry {
			j.Retries++
		}
	}
	return nil
}

// copyStepState gives the new run the effect records, and the step records,
// of the steps its copied history keeps: a committed step's as it is (its
// commit renumbered), and the recorded, not yet committed result of a
// remote step (a child or remote activity that ended after the point, or
// before it without being caught up) as a result still to catch up.
func (a *applier) copyStepState(baseID engine.JobID, nl *loaded, plan *resetPlan, newSeq map[uint64]uint64) error {
	id := nl.job.ID
	var effects []*engine.Effect
	err := a.tx.Scan(storage.EffectPrefix(uint64(baseID)), nil, true, func(k, v []byte) (bool, error) {
		e := new(engine.Effect)
		if _, err := storage.DecodeAt(k, v, storage.KindEffect, effectVersion, e); err != nil {
			return false, err
		}
		effects = append(effects, e)
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, e := range effects {
		seq, committedInPrefix := newSeq[e.CommittedSeq]
		switch {
		case e.CommittedSeq != 0 && committedInPrefix && plan.committed[e.Step]:
			e.CommittedSeq = seq
		case plan.remote[e.Step]:
			e.CommittedSeq = 0 // the new run's worker catches it up
		default:
			continue // the step runs again
		}
		a.tx.Set(storage.EffectKey(uint64(id), e.Step), EncodeEffect(e))
	}
	var recs []*engine.StepRecord
	err = a.tx.Scan(storage.StepPrefix(uint64(baseID)), nil, true, func(k, v []byte) (bool, error) {
		r := new(engine.StepRecord)
		if _, err := storage.DecodeAt(k, v, storage.KindStep, stepVersion, r); err != nil {
			return false, err
		}
		recs = append(recs, r)
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, r := range recs {
		if !plan.committed[r.Step] || !r.State.Terminal() {
			continue // not ended by the point: it starts over, with no record
		}
		r.Job, r.JobAttempt, r.LeaseExpiryMS, r.AnswerDueMS, r.WaiterSeq = id, 0, 0, 0, 0
		r.Released, r.UnitTry, r.UnitLabels, r.UnitRefusal = false, 0, nil, nil
		a.saveStep(nl, &step{rec: r, isNew: true})
	}
	return nil
}

// endForReset ends a run the reset replaces: an open one as Terminated
// (reason reset, naming the new run), a closed one as it is; both records
// link to the new run. The run's result goes to no parent: the new run
// goes on with the parent's step. The open children of the base run whose
// start the copied history records are reconnected to the new run, which
// waits for them; the parent-close policy ends the others of a run that
// was open, as a Terminate does.
func (a *applier) endForReset(l *loaded, nj *engine.Job, point uint64, c *engine.ResetJob, isBase bool, plan *resetPlan) error {
	j := l.job
	open := !j.Status.Terminal()
	if open {
		why := fmt.Sprintf("reset: run %d continues from event %d of run %d", nj.ID, point, nj.ResetBaseRunID)
		if c.Reason != "" {
			why += ": " + c.Reason
		}
		ev := engine.Event{Type: engine.EventJobTerminated, Attempt: j.Attempt, Reason: engine.ReasonReset, By: c.By,
			NewRunID: nj.ID, Payload: engine.EncodeTerminatedFailure(why)}
		if _, err := a.appendEvent(l, ev); err != nil {
			return err
		}
	}
	j.ResetNewRunID = nj.ID
	a.save(l)
	children, err := a.openChildren(j.ID)
	if err != nil {
		return err
	}
	for _, cid := range children {
		ch, err := a.load(cid)
		if err != nil {
			return err
		}
		switch {
		case ch.job.Status.Terminal():
		case isBase && plan.remote[ch.job.ParentStep]:
			ch.job.ParentID = nj.ID
			a.save(ch)
		case open:
			if err := a.closeChild(j, ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// resetAncestor reports whether run old is one that run id was reset from,
// following the reset links back at most maxResetHops runs.
func (a *applier) resetAncestor(id, old engine.JobID) (bool, error) {
	for range maxResetHops {
		l, err := a.load(id)
		if errors.Is(err, engine.ErrUnknownJob) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if l.job.ResetBaseRunID == 0 {
			return false, nil
		}
		if l.job.ResetBaseRunID == old {
			return true, nil
		}
		id = l.job.ResetBaseRunID
	}
	return false, nil
}

// maxResetHops bounds the reset links a review task's re-creation follows
// back to find the run that created it (createReview).
const maxResetHops = 16
