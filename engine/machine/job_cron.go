package machine

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// cronHoldBack marks a new run of a cron chain and holds it back until the
// line's next time.
func (a *applier) cronHoldBack(l *loaded, line string) error {
	if line == "" {
		return nil
	}
	l.job.CronSchedule = line
	at, err := engine.NextCronTime(line, a.now)
	if err != nil {
		return err // checked with the command: the record is corrupt
	}
	if at == 0 {
		return fmt.Errorf("%w: cron %q has no time after %d", engine.ErrInvalidCommand, line, a.now)
	}
	// The run timeout counts from the run's time, not from the wait for it.
	if l.job.RunTimeoutMS > 0 {
		l.job.RunDeadlineMS = at + l.job.RunTimeoutMS
	}
	_, err = a.appendEvent(l, engine.Event{Type: engine.EventJobRequeued, DelayMS: at - a.now, Reason: engine.ReasonCronNext})
	return err
}

// firstEvent reads a run's job_created.
func (a *applier) firstEvent(id engine.JobID) (*engine.Event, error) {
	key := storage.EventKey(uint64(id), 1)
	b, err := a.tx.Get(key)
	if err != nil {
		return nil, err
	}
	ev := new(engine.Event)
	if _, err := storage.DecodeAt(key, b, storage.KindEvent, eventVersion, ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// cronCarry is the last completion result a run of old's chain that
// continues it (a retry, a continue-as-new) carries: old's own.
func (a *applier) cronCarry(old *engine.Job) ([]byte, error) {
	if old.CronSchedule == "" {
		return nil, nil
	}
	first, err := a.firstEvent(old.ID)
	if err != nil {
		return nil, err
	}
	return first.LastResult, nil
}

// cronNext ends a cron run by its own attempt (Complete or Fail: ev) and
// creates the chain's next run. The parent of a cron child sees no end:
// it waits for the chain's, as for continue-as-new.
func (a *applier) cronNext(l *loaded, ref engine.LeaseRef, ev engine.Event) (engine.Result, error) {
	old := l.job
	first, err := a.firstEvent(old.ID)
	if err != nil {
		return nil, err
	}
	last := first.LastResult
	if ev.Type == engine.EventJobCompleted {
		last = ev.Payload
	}
	ev.Attempt, ev.Reason = ref.Attempt, engine.ReasonCronNext
	seq, err := a.appendEvent(l, ev)
	if err != nil {
		return nil, err
	}
	a.save(l)
	if err := a.cronFollow(l, first, last); err != nil {
		return nil, err
	}
	return &engine.StatusResult{Job: old.ID, Status: old.Status, Seq: seq}, nil
}

// cronTimedOut follows a cron run that its run timeout ended (saved
// already) with the chain's next run, as Temporal does; only the chain's
// execution timeout, a cancel or a terminate end the chain.
func (a *applier) cronTimedOut(l *loaded) error {
	first, err := a.firstEvent(l.job.ID)
	if err != nil {
		return err
	}
	return a.cronFollow(l, first, first.LastResult)
}

// cronFollow creates the next run of old's chain, with old's first input
// and last as its last completion result.
func (a *applier) cronFollow(l *loaded, first *engine.Event, last []byte) error {
	old := l.job
	next := &engine.CreateJob{Header: engine.Header{NowMS: a.now}, WorkflowID: old.WorkflowID, Type: old.Type, Queue: old.Queue, Input: first.Payload,
		ParentID: old.ParentID, ParentStep: old.ParentStep, ParentWorkflowID: old.ParentWorkflowID, ParentClosePolicy: old.ParentClosePolicy, Retry: old.Retry,
		RunTimeoutMS: old.RunTimeoutMS, TraceParent: old.TraceParent, CronSchedule: old.CronSchedule}
	res, err := a.createRun(next, last)
	if err != nil {
		return err
	}
	nl, err := a.load(res.(*engine.CreateResult).Job)
	if err != nil {
		return err
	}
	nl.job.DeadlineMS, nl.job.ScheduleID = old.DeadlineMS, old.ScheduleID
	a.linkRuns(l, nl, engine.ReasonCronNext)
	return nil
}
