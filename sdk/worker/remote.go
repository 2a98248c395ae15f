package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// isInline reports whether an activity command runs in this worker. An
// activity command without the SDK's options does not: createRemote
// reports it.
func (r *run) isInline(c *replay.Command) bool {
	a, ok := activityOf(c)
	return ok && (a.Local || a.Options.TaskQueue == "" || a.Options.TaskQueue == r.w.queue)
}

// isRemote reports whether a command is carried out by a job of its own: a
// child workflow, or an activity of another task queue.
func (r *run) isRemote(c *replay.Command) bool {
	return c.Kind == replay.KindChild || c.Kind == replay.KindReview || (c.Kind == replay.KindActivity && !r.isInline(c))
}

// remoteID is the workflow id of the job that carries out a remote command:
// the child's own id when the options give one, else one derived from this
// run and the step, so that runs of one workflow id (continue-as-new,
// retries) never share a child's id.
func (r *run) remoteID(c *replay.Command) string {
	if ch, ok := c.Options.(childCommand); ok && ch.Options.WorkflowID != "" {
		return ch.Options.WorkflowID
	}
	return fmt.Sprintf("%s/%d/%s", r.job.WorkflowID, r.job.Job, c.Step)
}

// startRemote sends activities of other queues and child workflows to the
// engine as jobs whose result becomes this job's step effect, and catches
// up effects that arrived (phase 2 of the step commit). It reports whether
// the workflow can go on.
func (r *run) startRemote(cmds []*replay.Command) (bool, error) {
	progressed := false
	for _, c := range cmds {
		if !r.isRemote(c) || c.CancelRequested && !c.Recorded && !c.Started {
			continue
		}
		if !c.Recorded {
			if c.Started || r.x.Paused() {
				continue // created, its scheduled record pending; or the run is paused
			}
			done, err := r.createRemote(c)
			if err != nil {
				return false, err
			}
			progressed = progressed || done
			if !done && c.WaitsForRecord {
				// The code waits for the child's start (its execution):
				// write the record now rather than with the next wait.
				if err := r.flush(); err != nil {
					return false, err
				}
				progressed = true
			}
			continue
		}
		eff, err := r.w.e.Effect(r.ctx, r.job.Job, c.Step)
		if err != nil || eff == nil || eff.CommittedSeq != 0 {
			if err != nil {
				return false, err
			}
			continue
		}
		done, failed := endEvents(c.Kind)
		typ := done
		if eff.Failed {
			typ = failed
		}
		if err := r.flush(); err != nil {
			return false, err
		}
		if _, err := r.w.e.CommitStep(r.ctx, engine.CommitStep{LeaseRef: r.ref, Step: c.Step, Name: c.Name, Type: typ, CatchUp: true}); err != nil {
			return false, err
		}
		if err := r.catchUp(false); err != nil && r.x.Fault() == nil {
			return false, err
		}
		progressed = true
	}
	return progressed, nil
}

// createRemote creates the job of a remote activity or child workflow and
// records that it was scheduled. The job's request id is derived from this
// job and the step, so doing it again after a crash finds the job created
// the first time. A child whose workflow id an unrelated open run holds
// fails at once with an "already started" error (done reports that this
// was committed).
func (r *run) createRemote(c *replay.Command) (done bool, err error) {
	if c.Kind == replay.KindReview {
		return r.createReview(c)
	}
	parent := r.ref // the engine starts a run's children only for its lease's holder
	create := engine.CreateJob{
		WorkflowID: r.remoteID(c), Input: c.Input, ParentID: r.job.Job, ParentStep: c.Step, ParentLease: &parent,
	}
	create.RequestID = fmt.Sprintf("heddle/%d/%s", r.job.Job, c.Step)
	ev := engine.NewEvent{Step: c.Step, Name: c.Name}
	switch c.Kind {
	case replay.KindActivity:
		a, ok := activityOf(c)
		if !ok {
			return false, errOptions(c)
		}
		opts := a.Options
		in, err := json.Marshal(taskInput{Args: c.Input, Options: opts, IssuedAtMS: c.IssuedAtMS,
			WorkflowID: r.job.WorkflowID, RunID: strconv.FormatUint(uint64(r.job.Job), 10), WorkflowType: r.job.Type})
		if err != nil {
			return false, err
		}
		create.Type, create.Queue, create.Input = engine.ActivityTypePrefix+c.Name, opts.TaskQueue, in
		// Should the workflow be terminated or time out, nobody will use the
		// result: the engine asks the activity to cancel (it learns of it
		// at its next heartbeat).
		create.ParentClosePolicy = engine.ParentCloseRequestCancel
		// A session's creation task is its worker: no other may take it
		// over when that worker's lease runs out (session.go).
		create.TimeoutOnLeaseExpiry = c.Name == sdkhook.SessionCreationActivity
		if opts.ScheduleToCloseTimeout > 0 {
			// The deadline counts from when the code scheduled the activity,
			// however late this create comes (after a crash, say).
			left := time.UnixMilli(c.IssuedAtMS).Add(opts.ScheduleToCloseTimeout).Sub(r.w.opts.Clock.Now())
			create.ExecutionTimeoutMS = max(left.Milliseconds(), 1)
		}
		if s2s := scheduleToStart(opts); s2s > 0 {
			left := time.UnixMilli(c.IssuedAtMS).Add(s2s).Sub(r.w.opts.Clock.Now())
			create.ScheduleToStartTimeoutMS = max(left.Milliseconds(), 1)
		}
		ev.Type = engine.EventActivityScheduled
	case replay.KindChild:
		ch, ok := c.Options.(childCommand)
		if !ok {
			return false, errOptions(c)
		}
		opts := ch.Options
		create.Type, create.Queue = c.Name, r.w.queue
		// The engine applies the policy should the parent end without its
		// code (terminated, timed out); closeChildren applies it when the
		// code ends.
		create.ParentClosePolicy = engineParentClose(opts.ParentClosePolicy)
		if opts.TaskQueue != "" {
			create.Queue = opts.TaskQueue
		}
		create.CronSchedule = opts.CronSchedule
		if p, ok := r.w.opts.Clock.(sdkhook.CronFirstRunNow); ok && p.CronFirstRunNow() && opts.CronSchedule != "" {
			create.CronFirstNow = true // a test environment's cron child, as Temporal's
		}
		create.ExecutionTimeoutMS = opts.WorkflowExecutionTimeout.Milliseconds()
		create.RunTimeoutMS = opts.WorkflowRunTimeout.Milliseconds()
		create.Retry = engineRetryPolicy(opts.RetryPolicy)
		ev.Type = engine.EventChildScheduled
	}
	ctx, span, traceParent := r.w.obs.startRemote(r.ctx, c.Kind == replay.KindChild, c.Name)
	create.TraceParent = traceParent
	res, err := r.w.e.Create(ctx, create)
	span.End()
	var job engine.JobID
	if err == nil {
		job = res.Job
	} else {
		// A create done again after a crash carries the same request id
		// but may differ from the first (its timeouts count from now, its
		// trace parent is a new span), and the engine refuses it as a
		// conflict: the job exists, as when the request record has gone
		// and the workflow id is taken.
		if errors.Is(err, engine.ErrCrossShard) {
			// A sharded cluster creates a child or an activity task whose
			// workflow id routes to another shard through its parent
			// shard's outbox (phase 2); a node that still refuses it (one
			// of an older version, or what phase 2 does not deliver) fails
			// the step at once, saying so, rather than the turn retrying
			// what cannot succeed (docs/sharding.md, "Cross-shard work").
			msg := fmt.Sprintf("workflow %q cannot start %q: %v", r.job.WorkflowID, create.WorkflowID, err)
			return true, r.commitFailure(c, temporal.NewNonRetryableApplicationError(msg, "CrossShard", nil))
		}
		if !errors.Is(err, engine.ErrWorkflowExists) && !errors.Is(err, engine.ErrRequestConflict) {
			return false, err
		}
		mine, err := r.ownsRun(create.WorkflowID, c)
		if err != nil {
			return false, err
		}
		if mine == 0 {
			return true, r.commitFailure(c, temporal.NewChildWorkflowExecutionError(create.WorkflowID, "", c.Name, c.Step,
				&temporal.ChildWorkflowExecutionAlreadyStartedError{}))
		}
		job = mine
	}
	if c.Kind == replay.KindChild {
		// The child's run, for its parent's GetChildWorkflowExecution.
		ev.Payload, _ = json.Marshal(sdkhook.ChildStarted{WorkflowID: create.WorkflowID, RunID: strconv.FormatUint(uint64(job), 10)})
	}
	c.Started = true
	r.pending = append(r.pending, ev)
	return false, nil
}

// scheduleToStart returns the schedule-to-start timeout of an activity
// task as Temporal's server fills it in: at most the
// ScheduleToCloseTimeout, and that timeout when none is set. So an
// activity no worker takes ends as a schedule-to-start timeout, not a
// schedule-to-close one (the engine reports schedule-to-start when both
// deadlines fall together).
func scheduleToStart(opts workflow.ActivityOptions) time.Duration {
	s2s, s2c := opts.ScheduleToStartTimeout, opts.ScheduleToCloseTimeout
	if s2c > 0 && (s2s <= 0 || s2s > s2c) {
		return s2c
	}
	return s2s
}

// engineParentClose maps the SDK's parent-close policy to the engine's.
func engineParentClose(p workflow.ParentClosePolicy) engine.ParentClosePolicy {
	switch p {
	case workflow.ParentCloseRequestCancel:
		return engine.ParentCloseRequestCancel
	case workflow.ParentCloseAbandon:
		return engine.ParentCloseAbandon
	}
	return engine.ParentCloseTerminate
}

// engineRetryPolicy is the engine's form of a workflow retry policy.
func engineRetryPolicy(p *workflow.RetryPolicy) *engine.RetryPolicy {
	if p == nil {
		return nil
	}
	return &engine.RetryPolicy{InitialIntervalMS: p.InitialInterval.Milliseconds(), BackoffCoefficient: p.BackoffCoefficient,
		MaximumIntervalMS: p.MaximumInterval.Milliseconds(), MaximumAttempts: p.MaximumAttempts,
		NonRetryableErrorTypes: p.NonRetryableErrorTypes, Backoff: uint8(p.Backoff)}
}

// ownsRun returns the open run of workflow id when it is the job this run
// created for c (found again after a crash, its request record gone), else
// 0.
func (r *run) ownsRun(id string, c *replay.Command) (engine.JobID, error) {
	j, err := r.w.e.Describe(r.ctx, engine.Target{WorkflowID: id})
	if errors.Is(err, engine.ErrUnknownJob) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if j.ParentID == r.job.Job && j.ParentStep == c.Step {
		return j.ID, nil
	}
	return 0, nil
}

// commitFailure ends a step with a failure the worker decided (a cancelled
// command never started, a child whose id is taken, a timeout).
func (r *run) commitFailure(c *replay.Command, ferr error) error {
	typ := map[replay.CommandKind]engine.EventType{
		replay.KindActivity: engine.EventActivityFailed, replay.KindChild: engine.EventChildFailed,
		replay.KindSignalExternal: engine.EventSignalExternalFailed, replay.KindCancelExternal: engine.EventCancelExternalFailed,
	}[c.Kind]
	cs := engine.CommitStep{LeaseRef: r.ref, Step: c.Step, Name: c.Name, Type: typ, Payload: sdkhook.EncodeFailure(ferr), Failed: true}
	if c.Kind == replay.KindActivity && r.isInline(c) && r.explicit(c) {
		// It fails where it waits (for a unit, a person, a retry), not
		// after a run.
		cs.Reason = engine.ReasonNotStarted
		delete(r.parked, c.Step)
	}
	return r.commitStep(cs)
}

// closeChildren applies the parent-close policy to the children still
// running when the workflow ends. A child already closed is left alone.
func (r *run) closeChildren() error {
	for _, c := range r.x.Unresolved() {
		if c.Kind != replay.KindChild || !c.Recorded {
			continue
		}
		ch, ok := c.Options.(childCommand)
		if !ok {
			return errOptions(c)
		}
		opts := ch.Options
		t := engine.Target{WorkflowID: r.remoteID(c)}
		var err error
		switch opts.ParentClosePolicy {
		case workflow.ParentCloseTerminate:
			// As the parent, whose lease it holds: a worker's token may
			// terminate only its own run's children.
			ref := r.ref
			_, err = r.w.e.Terminate(r.ctx, engine.Terminate{Target: t, Reason: "parent closed", ByParent: &ref})
		case workflow.ParentCloseRequestCancel:
			_, err = r.w.e.RequestCancel(r.ctx, engine.RequestCancel{Target: t, Reason: "parent closed"})
		}
		if err != nil && !isGone(err) {
			return err
		}
	}
	return nil
}

// cancelRemoteActivities asks the jobs of remote activities still open when
// the workflow ends to cancel: nobody will use their results.
func (r *run) cancelRemoteActivities() error {
	for _, c := range r.x.Unresolved() {
		if c.Kind != replay.KindActivity || r.isInline(c) || !c.Recorded && !c.Started || c.CancelHandled {
			continue
		}
		if err := r.requestCancelRemote(c, "workflow closed"); err != nil {
			return err
		}
	}
	return nil
}

// requestCancelRemote asks the job of a remote command to cancel itself,
// once: the request id is derived from this job and the step.
func (r *run) requestCancelRemote(c *replay.Command, reason string) error {
	rc := engine.RequestCancel{Target: engine.Target{WorkflowID: r.remoteID(c)}, Reason: reason}
	rc.RequestID = fmt.Sprintf("heddle/%d/%s/cancel", r.job.Job, c.Step)
	_, err := r.w.e.RequestCancel(r.ctx, rc)
	// A conflict means the request id was used, with another reason: the
	// cancel was already asked for.
	if err != nil && !isGone(err) && !errors.Is(err, engine.ErrRequestConflict) {
		return err
	}
	c.CancelHandled = true
	return nil
}

// isGone reports an error that means the job to act on has ended or does
// not exist: nothing is left to do.
func isGone(err error) bool {
	return errors.Is(err, engine.ErrIllegalTransition) || errors.Is(err, engine.ErrJobClosed) || errors.Is(err, engine.ErrUnknownJob)
}
