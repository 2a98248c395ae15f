package machine

import (
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// create starts a run on a caller's command. A run naming a parent is
// started only by the holder of the parent's lease: its end becomes the
// effect of one of the parent's steps, which nobody else may write.
func (a *applier) create(c *engine.CreateJob) (engine.Result, error) {
	what := "parent job"
	if c.WorkflowID != "" {
		what = fmt.Sprintf("the parent job of the run with workflow id %q,", c.WorkflowID)
	}
	if a.delivery != nil && c.ParentID != 0 && engine.ShardOfJob(c.ParentID) == a.delivery.Source {
		// A child delivered from its parent's shard, which checked the
		// parent's lease when it wrote the entry: the delivery is the
		// create's provenance (outbox.go).
		return a.createRun(c, nil)
	}
	if c.ParentWorkflowID != "" {
		return nil, engine.InvalidField("CreateJob", "ParentWorkflowID", "is given only by the parent's shard, to a child it delivers to another shard")
	}
	if c.ScheduleID != "" && a.delivery == nil {
		return nil, engine.InvalidField("CreateJob", "ScheduleID", "is given only by a schedule's shard, to a run it delivers to another shard")
	}
	if err := a.jobOnShard("CreateJob", what, c.ParentID); err != nil {
		return nil, err
	}
	if c.ParentID != 0 && a.remoteWorkflow(c.WorkflowID) {
		return a.createRemoteChild(c)
	}
	if c.ParentID != 0 && !engine.LegacyParent(&c.Header, c.ParentID, c.ParentLease) {
		if _, err := a.parentHeld(c.ParentLease, "CreateJob"); err != nil {
			return nil, err
		}
	}
	return a.createRun(c, nil)
}

// parentHeld checks that ref (required by check with a parent) is the
// parent's current lease, as every other write of the parent run is.
func (a *applier) parentHeld(ref *engine.LeaseRef, cmd string) (*loaded, error) {
	if ref == nil {
		return nil, engine.InvalidField(cmd, "ParentLease", "is required with a parent")
	}
	l, err := a.fenced(*ref, cmd)
	if err != nil {
		return nil, fmt.Errorf("%s.ParentLease: %w", cmd, err)
	}
	return l, nil
}

// createRun starts a run; lastResult goes on its job_created (a cron run's
// last completion result).
func (a *applier) createRun(c *engine.CreateJob, lastResult []byte) (engine.Result, error) {
	if err := a.workflowOnShard("CreateJob", c.WorkflowID); err != nil {
		return nil, err
	}
	digest := startDigest(c)
	if c.WorkflowID != "" {
		cur, err := a.resolve(engine.Target{WorkflowID: c.WorkflowID})
		switch {
		case errors.Is(err, engine.ErrUnknownJob):
		case err != nil:
			return nil, err
		default:
			if res, err := reuse(c, cur.job, digest); res != nil || err != nil {
				return res, err
			}
		}
	}
	var parent *loaded
	if c.ParentID != 0 && !a.remoteJob(c.ParentID) {
		p, err := a.load(c.ParentID)
		if err != nil {
			return nil, fmt.Errorf("CreateJob.ParentID: %w", err)
		}
		if p.job.Status.Terminal() {
			return nil, fmt.Errorf("%w: parent job %d is %s", engine.ErrJobClosed, p.job.ID, p.job.Status)
		}
		parent = p
	}
	id, err := a.nextJobID()
	if err != nil {
		return nil, err
	}
	wf := c.WorkflowID
	if wf == "" {
		if wf, err = a.defaultWorkflowID(id); err != nil {
			return nil, err
		}
	}
	l := &loaded{job: &engine.Job{
		ID: id, WorkflowID: wf, Type: c.Type, Queue: c.Queue,
		StartDigest: digest, ParentID: c.ParentID, ParentStep: c.ParentStep, ParentWorkflowID: c.ParentWorkflowID,
		ParentClosePolicy: c.ParentClosePolicy, CreatedMS: a.now, ScheduleID: c.ScheduleID,
		Retry: c.Retry, RunAttempt: 1, TraceParent: c.TraceParent, TimeoutOnLeaseExpiry: c.TimeoutOnLeaseExpiry,
	}}
	a.remember(l)
	if c.ExecutionTimeoutMS > 0 {
		l.job.DeadlineMS = a.now + c.ExecutionTimeoutMS
	}
	if c.RunTimeoutMS > 0 {
		l.job.RunDeadlineMS, l.job.RunTimeoutMS = a.now+c.RunTimeoutMS, c.RunTimeoutMS
	}
	if c.ScheduleToStartTimeoutMS > 0 {
		l.job.StartDeadlineMS = a.now + c.ScheduleToStartTimeoutMS
	}
	ev := engine.Event{Type: engine.EventJobCreated, Name: c.Type, Payload: c.Input, By: c.By, LastResult: lastResult}
	if c.Draft {
		ev.Type = engine.EventJobDrafted
	}
	if _, err := a.appendEvent(l, ev); err != nil {
		return nil, err
	}
	if parent != nil && parent.job.Pause != nil && isActivityTask(l.job) {
		// An activity a paused run sends to another queue is created held:
		// the run starts no activity until it is unpaused.
		if err := a.hold(l, parent.job, true, c.By); err != nil {
			return nil, err
		}
	}
	if c.CronFirstNow {
		l.job.CronSchedule = c.CronSchedule // a chain whose first run starts now
	} else if err := a.cronHoldBack(l, c.CronSchedule); err != nil {
		return nil, err
	}
	if err := a.startDelay(l, c.StartDelayMS); err != nil {
		return nil, err
	}
	a.save(l)
	a.tx.Set(storage.WorkflowKey(wf), storage.U64(uint64(id)))
	return &engine.CreateResult{Job: id, WorkflowID: wf}, nil
}

// reuse applies the workflow-id reuse policy against the id's current run.
// It returns a result to answer with, an error to refuse with, or neither
// when a new run may start.
func reuse(c *engine.CreateJob, cur *engine.Job, digest uint64) (engine.Result, error) {
	open := !cur.Status.Terminal()
	refuse := func() error {
		return fmt.Errorf("%w: workflow id %q has run %d in status %s", engine.ErrWorkflowExists, c.WorkflowID, cur.ID, cur.Status)
	}
	switch c.ReusePolicy {
	case engine.IDReuseRejectDuplicate:
		return nil, refuse()
	case engine.IDReuseReturnExisting:
		if open && cur.StartDigest == digest {
			return &engine.CreateResult{Job: cur.ID, WorkflowID: cur.WorkflowID, Existing: true}, nil
		}
	}
	if open {
		return nil, refuse()
	}
	return nil, nil
}

// startDigest fingerprints what makes two starts identical.
func startDigest(c *engine.CreateJob) uint64 {
	h := fnv.New64a()
	for _, part := range [][]byte{[]byte(c.Type), []byte(c.Queue), c.Input} {
		var n [4]byte
		n[0], n[1], n[2], n[3] = byte(len(part)>>24), byte(len(part)>>16), byte(len(part)>>8), byte(len(part))
		h.Write(n[:])
		h.Write(part)
	}
	return h.Sum64()
}

// defaultWorkflowID names a job started without a workflow id "job-<id>",
// or "job-<id>.<n>" with the first n that no run uses, since a user may have
// chosen such a name for another workflow.
func (a *applier) defaultWorkflowID(id engine.JobID) (string, error) {
	wf := fmt.Sprintf("job-%d", id)
	for n := 1; ; n++ {
		taken, err := a.tx.Has(storage.WorkflowKey(wf))
		if err != nil || !taken {
			return wf, err
		}
		wf = fmt.Sprintf("job-%d.%d", id, n)
	}
}

func (a *applier) continueAsNew(c *engine.ContinueAsNew) (engine.Result, error) {
	l, err := a.fenced(c.LeaseRef, "ContinueAsNew")
	if err != nil {
		return nil, err
	}
	old := l.job
	end := engine.Event{Type: engine.EventJobCompleted, Attempt: c.Attempt, Reason: engine.ReasonContinuedAsNew}
	runAttempt := int32(1)
	link := engine.ReasonContinuedAsNew
	if c.Failure != nil {
		link = engine.ReasonRetried
		end = engine.Event{Type: engine.EventJobFailed, Attempt: c.Attempt, Reason: engine.ReasonRetried, Payload: c.Failure}
		runAttempt = old.RunAttempt + 1
	}
	if _, err := a.appendEvent(l, end); err != nil {
		return nil, err
	}
	a.save(l) // no closed(): the parent waits for the last run of the chain
	typ := c.Type
	if typ == "" {
		typ = old.Type
	}
	next := &engine.CreateJob{WorkflowID: old.WorkflowID, Type: typ, Queue: old.Queue, Input: c.Input,
		ParentID: old.ParentID, ParentStep: old.ParentStep, ParentWorkflowID: old.ParentWorkflowID, ParentClosePolicy: old.ParentClosePolicy,
		Retry: old.Retry, RunTimeoutMS: old.RunTimeoutMS,
		TraceParent: old.TraceParent}
	next.Header = c.Header
	carried, err := a.cronCarry(old)
	if err != nil {
		return nil, err
	}
	res, err := a.createRun(next, carried)
	if err != nil {
		return nil, err
	}
	nl, err := a.load(res.(*engine.CreateResult).Job)
	if err != nil {
		return nil, err
	}
	// The chain's execution deadline carries over as it is; the run
	// timeout starts afresh with the next run (set by create above).
	nl.job.DeadlineMS, nl.job.RunAttempt, nl.job.ScheduleID, nl.job.CronSchedule = old.DeadlineMS, runAttempt, old.ScheduleID, old.CronSchedule
	if c.DelayMS > 0 {
		if _, err := a.appendEvent(nl, engine.Event{Type: engine.EventJobRequeued, DelayMS: c.DelayMS, Reason: engine.ReasonRetry}); err != nil {
			return nil, err
		}
	}
	a.linkRuns(l, nl, link)
	return res, nil
}

// startDelay holds a new run back for delayMS (Temporal's StartDelay). The
// run timeout counts from the end of the delay, as a cron run's counts
// from its time.
func (a *applier) startDelay(l *loaded, delayMS int64) error {
	if delayMS <= 0 {
		return nil
	}
	if l.job.RunTimeoutMS > 0 {
		l.job.RunDeadlineMS = a.now + delayMS + l.job.RunTimeoutMS
	}
	_, err := a.appendEvent(l, engine.Event{Type: engine.EventJobRequeued, DelayMS: delayMS, Reason: engine.ReasonStartDelay})
	return err
}
