package engine

import (
	"fmt"
	"time"

	"github.com/heddlewf/heddle/storage"
)

// Cron workflows, as Temporal's CronSchedule: a workflow id started with a
// cron line runs once per time of the line. The engine keeps the chain
// going so that no worker has to: the first run waits (Retrying) for the
// line's first time after its start, and a run that completes or fails is
// ended, in the same command, as the chain's next run is created, held
// back until the next time after now, with the same input and the last
// completed run's result on its job_created (Event.LastResult). A run that
// its run timeout ends is followed too; the chain's execution timeout, a
// cancel or a terminate end the chain. A retry of a failed
// run (ContinueAsNew with a failure) stays within the chain's time.

// cron checks a cron line.
func (c *checker) cron(field, line string) {
	if c.err != nil || line == "" {
		return
	}
	c.name(field, line, false)
	if err := ParseCron(line); err != nil && c.err == nil {
		c.fail(field, err.Error())
	}
}

// NextCronTime is the first time of line after afterMS, or 0 when it has none.
func NextCronTime(line string, afterMS int64) (int64, error) {
	s, err := parseCron(line)
	if err != nil {
		return 0, err
	}
	t := s.Next(time.UnixMilli(afterMS).UTC())
	if t.IsZero() {
		return 0, nil
	}
	return t.UnixMilli(), nil
}

// cronHoldBack marks a new run of a cron chain and holds it back until the
// line's next time.
func (a *applier) cronHoldBack(l *loaded, line string) error {
	if line == "" {
		return nil
	}
	l.job.CronSchedule = line
	at, err := NextCronTime(line, a.now)
	if err != nil {
		return err // checked with the command: the record is corrupt
	}
	if at == 0 {
		return fmt.Errorf("%w: cron %q has no time after %d", ErrInvalidCommand, line, a.now)
	}
	// The run timeout counts from the run's time, not from the wait for it.
	if l.job.RunTimeoutMS > 0 {
		l.job.RunDeadlineMS = at + l.job.RunTimeoutMS
	}
	_, err = a.appendEvent(l, Event{Type: EventJobRequeued, DelayMS: at - a.now, Reason: ReasonCronNext})
	return err
}

// firstEvent reads a run's job_created.
func (a *applier) firstEvent(id JobID) (*Event, error) {
	key := storage.EventKey(uint64(id), 1)
	b, err := a.tx.Get(key)
	if err != nil {
		return nil, err
	}
	ev := new(Event)
	if _, err := storage.DecodeAt(key, b, storage.KindEvent, eventVersion, ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// cronCarry is the last completion result a run of old's chain that
// continues it (a retry, a continue-as-new) carries: old's own.
func (a *applier) cronCarry(old *Job) ([]byte, error) {
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
func (a *applier) cronNext(l *loaded, ref LeaseRef, ev Event) (Result, error) {
	old := l.job
	first, err := a.firstEvent(old.ID)
	if err != nil {
		return nil, err
	}
	last := first.LastResult
	if ev.Type == EventJobCompleted {
		last = ev.Payload
	}
	ev.Attempt, ev.Reason = ref.Attempt, ReasonCronNext
	seq, err := a.appendEvent(l, ev)
	if err != nil {
		return nil, err
	}
	a.save(l)
	if err := a.cronFollow(old, first, last); err != nil {
		return nil, err
	}
	return &StatusResult{Job: old.ID, Status: old.Status, Seq: seq}, nil
}

// cronTimedOut follows a cron run that its run timeout ended (saved
// already) with the chain's next run, as Temporal does; only the chain's
// execution timeout, a cancel or a terminate end the chain.
func (a *applier) cronTimedOut(l *loaded) error {
	first, err := a.firstEvent(l.job.ID)
	if err != nil {
		return err
	}
	return a.cronFollow(l.job, first, first.LastResult)
}

// cronFollow creates the next run of old's chain, with old's first input
// and last as its last completion result.
func (a *applier) cronFollow(old *Job, first *Event, last []byte) error {
	next := &CreateJob{Header: Header{NowMS: a.now}, WorkflowID: old.WorkflowID, Type: old.Type, Queue: old.Queue, Input: first.Payload,
		ParentID: old.ParentID, ParentStep: old.ParentStep, ParentClosePolicy: old.ParentClosePolicy, Retry: old.Retry,
		RunTimeoutMS: old.RunTimeoutMS, TraceParent: old.TraceParent, CronSchedule: old.CronSchedule}
	res, err := a.createRun(next, last)
	if err != nil {
		return err
	}
	nl, err := a.load(res.(*CreateResult).Job)
	if err != nil {
		return err
	}
	nl.job.DeadlineMS, nl.job.ScheduleID = old.DeadlineMS, old.ScheduleID
	a.save(nl)
	return nil
}
