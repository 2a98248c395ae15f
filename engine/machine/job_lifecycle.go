package machine

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// lifecycle applies an operator command (cancel, activate, suspend, resume)
// whose only effect is one status event on the target job.
func (a *applier) lifecycle(t engine.Target, ev engine.Event) (engine.Result, error) {
	l, err := a.resolve(t)
	if err != nil {
		return nil, err
	}
	ev.Attempt = l.job.Attempt
	seq, err := a.appendEvent(l, ev)
	if err != nil {
		return nil, err
	}
	if l.job.Status.Terminal() {
		if err := a.closed(l, &ev); err != nil {
			return nil, err
		}
	}
	a.save(l)
	return &engine.StatusResult{Job: l.job.ID, Status: l.job.Status, Seq: seq}, nil
}

// cancel ends a job as Cancelled (Cancel).
func (a *applier) cancel(c *engine.Cancel) (engine.Result, error) {
	return a.lifecycle(c.Target, engine.Event{Type: engine.EventJobCancelled, Reason: c.Reason, By: c.By})
}

// activate moves a Draft job to Queued (Activate).
func (a *applier) activate(c *engine.Activate) (engine.Result, error) {
	return a.lifecycle(c.Target, engine.Event{Type: engine.EventJobActivated, By: c.By})
}

// suspend pauses a job (Suspend).
func (a *applier) suspend(c *engine.Suspend) (engine.Result, error) {
	return a.lifecycle(c.Target, engine.Event{Type: engine.EventJobSuspended, Reason: c.Reason, By: c.By})
}

// resume moves a Suspended job to Queued (Resume).
func (a *applier) resume(c *engine.Resume) (engine.Result, error) {
	return a.lifecycle(c.Target, engine.Event{Type: engine.EventJobResumed, By: c.By})
}

// terminate ends a job as Terminated (Terminate), after checking, for a
// parent's terminate of its child, that the parent holds its lease.
func (a *applier) terminate(c *engine.Terminate) (engine.Result, error) {
	if c.ByParent != nil && a.remoteChildTarget(c.Target) {
		return a.terminateRemoteChild(c)
	}
	if c.ByParent != nil {
		if err := a.childOf(c.Target, *c.ByParent); err != nil {
			return nil, err
		}
	}
	return a.lifecycle(c.Target, engine.Event{Type: engine.EventJobTerminated, Reason: c.Reason, Payload: engine.EncodeTerminatedFailure(c.Reason), By: c.By})
}

// childOf refuses a command a parent run issues for its child (Terminate's
// ByParent) unless parent is the current lease of a running job and t's
// run is that job's child. A run that is not is, for that parent, no
// child at all (ErrUnknownJob): a workflow id its child had may since
// name another workflow's run, which the parent must leave alone.
func (a *applier) childOf(t engine.Target, parent engine.LeaseRef) error {
	if err := a.jobOnShard("Terminate", "parent job", parent.Job); err != nil {
		return err
	}
	if _, err := a.fenced(parent, "Terminate"); err != nil {
		return err
	}
	l, err := a.resolve(t)
	if err != nil {
		return err
	}
	if l.job.ParentID != parent.Job {
		return fmt.Errorf("%w: job %d (workflow id %q) is not a child of job %d", engine.ErrUnknownJob, l.job.ID, l.job.WorkflowID, parent.Job)
	}
	return nil
}

// complete ends a running job successfully (Complete).
func (a *applier) complete(c *engine.Complete) (engine.Result, error) {
	return a.finish(c.LeaseRef, "Complete", engine.Event{Type: engine.EventJobCompleted, Payload: c.Result})
}

// fail ends a running job with a failure (Fail).
func (a *applier) fail(c *engine.Fail) (engine.Result, error) {
	return a.finish(c.LeaseRef, "Fail", engine.Event{Type: engine.EventJobFailed, Payload: c.Error})
}

// finish ends a running job by its own attempt (complete, fail).
func (a *applier) finish(ref engine.LeaseRef, cmd string, ev engine.Event) (engine.Result, error) {
	l, err := a.fenced(ref, cmd)
	if err != nil {
		return nil, err
	}
	if l.job.CronSchedule != "" {
		return a.cronNext(l, ref, ev)
	}
	ev.Attempt = ref.Attempt
	seq, err := a.appendEvent(l, ev)
	if err != nil {
		return nil, err
	}
	if err := a.closed(l, &ev); err != nil {
		return nil, err
	}
	a.save(l)
	return &engine.StatusResult{Job: l.job.ID, Status: l.job.Status, Seq: seq}, nil
}

func (a *applier) requeue(c *engine.Requeue) (engine.Result, error) {
	var l *loaded
	var err error
	if c.Attempt == 0 {
		// An operator's retry of a failed job: there is no live attempt to fence.
		if l, err = a.load(c.Job); err != nil {
			return nil, err
		}
		if l.job.Status != engine.StatusFailed {
			// Only a Failed job may be retried without an attempt.
			return nil, &engine.TransitionError{Job: l.job.ID, From: l.job.Status, Event: engine.EventJobRequeued}
		}
		// A workflow id has at most one open run: a failed run that a newer
		// run replaced stays closed.
		cur, err := a.resolve(engine.Target{WorkflowID: l.job.WorkflowID})
		if err != nil {
			return nil, err
		}
		if cur.job.ID != l.job.ID {
			return nil, fmt.Errorf("%w: job %d cannot be retried: workflow id %q has a newer run %d",
				engine.ErrWorkflowExists, l.job.ID, l.job.WorkflowID, cur.job.ID)
		}
	} else if l, err = a.fenced(c.LeaseRef, "Requeue"); err != nil {
		return nil, err
	}
	reason := c.Reason
	if reason == "" {
		reason = engine.ReasonRetry
	}
	if c.Attempt == 0 || reason == engine.ReasonRetry {
		l.job.Retries++
	}
	ev := engine.Event{Type: engine.EventJobRequeued, Attempt: c.Attempt, DelayMS: c.DelayMS, Reason: reason}
	if c.Attempt == 0 {
		ev.By = c.By // an operator's retry, not a worker's requeue
	}
	seq, err := a.appendEvent(l, ev)
	if err != nil {
		return nil, err
	}
	a.save(l)
	return &engine.StatusResult{Job: l.job.ID, Status: l.job.Status, Seq: seq}, nil
}
