package machine

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// A run's pause (docs/state-machines.md §6) is a flag beside its status:
// Job.Pause, the projection of the workflow_paused and workflow_unpaused
// events. What it holds back follows from the flag where the record is
// saved (exactIndexKeys: a paused Queued job is in no claim index) and
// where work would start (leaseStep grants no step lease; a create names a
// paused parent: its activity task is held; a Wait that something already
// ended is taken, not answered Woken).

// ReasonUnpaused is the reason of the wait_completed with which an
// unpause wakes a waiting run, so that its worker starts what the pause
// held back (an activity, a child).
const ReasonUnpaused = "unpaused"

// ReasonAlreadyHappened is the reason of the wait_completed that ends, in
// the same command, the wait of a paused run something it waits for
// already ended: the run is not answered Woken (that would be a new turn)
// and waits, Queued, for its unpause.
const ReasonAlreadyHappened = "already_happened"

func (a *applier) pause(c *engine.Pause) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	j := l.job
	if j.Status.Terminal() {
		return nil, fmt.Errorf("%w: pause of job %d in status %s", engine.ErrJobClosed, j.ID, j.Status)
	}
	res := &engine.StatusResult{Job: j.ID, Status: j.Status}
	if j.Pause != nil {
		return res, nil // paused already: nothing to write
	}
	seq, err := a.appendEvent(l, engine.Event{Type: engine.EventWorkflowPaused, Attempt: j.Attempt, Reason: c.Reason, By: c.By})
	if err != nil {
		return nil, err
	}
	j.Pause = &engine.PauseInfo{AtMS: a.now, By: c.By, Reason: c.Reason}
	a.held(j)
	if err := a.holdTasks(j, true, c.By); err != nil {
		return nil, err
	}
	a.save(l)
	res.Seq = seq
	return res, nil
}

func (a *applier) unpause(c *engine.Unpause) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	j := l.job
	if j.Status.Terminal() {
		return nil, fmt.Errorf("%w: unpause of job %d in status %s", engine.ErrJobClosed, j.ID, j.Status)
	}
	res := &engine.StatusResult{Job: j.ID, Status: j.Status}
	if j.Pause == nil {
		return res, nil // not paused: nothing to write
	}
	seq, err := a.appendEvent(l, engine.Event{Type: engine.EventWorkflowUnpaused, Attempt: j.Attempt, Reason: c.Reason, By: c.By})
	if err != nil {
		return nil, err
	}
	j.Pause = nil
	if err := a.released(l); err != nil {
		return nil, err
	}
	if err := a.holdTasks(j, false, c.By); err != nil {
		return nil, err
	}
	a.save(l)
	res.Status, res.Seq = j.Status, seq
	return res, nil
}

// held brings a job that was just paused to rest: a Queued job deferred by
// a claimer's types leaves the delayed index too (released, it is ready at
// once). It is in no claim index while paused (exactIndexKeys).
func (a *applier) held(j *engine.Job) {
	if j.Status == engine.StatusQueued {
		j.DeferredUntilMS = 0
	}
}

// released makes a job that is no longer paused go on: a Queued job is
// ready from now (its old ready time may lie below its queue's low-water
// mark), and a waiting workflow run is woken, so that its worker starts
// what the pause held back (an inline activity it did not start waits for
// nothing the engine knows of). An activity task is not woken: one that
// waits is parked for asynchronous completion.
func (a *applier) released(l *loaded) error {
	j := l.job
	if j.Paused() {
		return nil
	}
	switch j.Status {
	case engine.StatusQueued:
		j.ReadyAtMS = a.now
	case engine.StatusWaiting, engine.StatusParked:
		if !isActivityTask(j) {
			_, err := a.wake(l, ReasonUnpaused, "")
			return err
		}
	}
	return nil
}

// holdTasks holds (on) or releases the open activity tasks of run p, the
// activities it sent to other task queues: a paused run starts no
// activity, so none of them is claimed (or tried again) until the run is
// unpaused. An activity task paused on its own (PauseActivity) stays
// paused when its run is unpaused. Tasks are visited in job id order.
func (a *applier) holdTasks(p *engine.Job, on bool, by string) error {
	var ids []engine.JobID
	err := a.tx.Scan(storage.ChildPrefix(uint64(p.ID)), nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.ParseChildKey(k)
		ids = append(ids, engine.JobID(id))
		return err == nil, err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		t, err := a.load(id)
		if err != nil {
			return err
		}
		if t.job.Status.Terminal() || !isActivityTask(t.job) || t.job.HeldByParent == on {
			continue
		}
		if err := a.hold(t, p, on, by); err != nil {
			return err
		}
		if !on {
			if err := a.released(t); err != nil {
				return err
			}
		}
		a.save(t)
	}
	return nil
}

// hold writes the hold (on) or release of activity task t by its run p's
// pause, issued by by, without saving t.
func (a *applier) hold(t *loaded, p *engine.Job, on bool, by string) error {
	ev := engine.Event{Type: engine.EventWorkflowPaused, Attempt: t.job.Attempt, Name: engine.PauseParent, By: by,
		Reason: fmt.Sprintf("run %d (workflow id %q) is paused", p.ID, p.WorkflowID)}
	switch {
	case !on && p.Status.Terminal():
		ev.Type, ev.Reason = engine.EventWorkflowUnpaused, fmt.Sprintf("run %d (workflow id %q) ended", p.ID, p.WorkflowID)
	case !on:
		ev.Type, ev.Reason = engine.EventWorkflowUnpaused, fmt.Sprintf("run %d (workflow id %q) is unpaused", p.ID, p.WorkflowID)
	}
	if _, err := a.appendEvent(t, ev); err != nil {
		return err
	}
	t.job.HeldByParent = on
	if on {
		a.held(t.job)
	}
	return nil
}
