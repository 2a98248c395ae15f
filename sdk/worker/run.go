package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/replay"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// run is one turn of one workflow job in this worker: from the claim to the
// wait, completion or failure that releases it.
type run struct {
	w       *Worker
	ctx     context.Context // the turn: engine writes
	actCtx  context.Context // activities: also cancelled by a cancel request
	job     engine.ClaimedJob
	ref     engine.LeaseRef
	x       *replay.Execution
	pending []engine.NewEvent // recorded by the worker, not yet written
}

func (w *Worker) runWorkflow(ctx, actCtx context.Context, j engine.ClaimedJob, ref engine.LeaseRef) error {
	fn := w.workflowFn(j.Type)
	if fn == nil {
		// Another worker of this queue may know the type: give the job back
		// after a pause, as a Temporal workflow task would be retried.
		_, err := w.e.Requeue(ctx, engine.Requeue{LeaseRef: ref, DelayMS: 1000, Reason: "unregistered_type"})
		return errors.Join(fmt.Errorf("worker: workflow type %q is not registered on queue %q", j.Type, w.queue), err)
	}
	x := w.cache.Take(j.Job)
	if x == nil {
		info := sdkhook.WorkflowInfo{WorkflowID: j.WorkflowID, RunID: strconv.FormatUint(uint64(j.Job), 10),
			WorkflowType: j.Type, TaskQueue: w.queue, Attempt: int(j.Attempt)}
		x = replay.NewExecution(j.Job, sdkhook.NewEntry(fn, info))
		x.DeadlockTimeout = w.opts.DeadlockTimeout
	}
	r := &run{w: w, ctx: ctx, actCtx: actCtx, job: j, ref: ref, x: x}
	released, err := r.drive()
	if err != nil || !released {
		x.Close() // its state may run ahead of what is durable: never reuse it
		return err
	}
	w.cache.Put(x)
	return nil
}

// catchUp applies the history the execution has not seen yet.
func (r *run) catchUp(replaying bool) error {
	for {
		page, err := r.w.e.History(r.ctx, r.job.Job, r.x.LastSeq(), engine.MaxPage)
		if err != nil {
			return err
		}
		if err := r.x.Advance(page.Events, replaying); err != nil {
			return err
		}
		if page.Next == 0 {
			return nil
		}
	}
}

// drive runs the workflow until it waits (the execution may be cached:
// released is true) or ends.
func (r *run) drive() (released bool, err error) {
	if err := r.catchUp(true); err != nil && r.x.Fault() == nil {
		return false, err
	}
	for {
		if d := r.job.DeadlineMS; d > 0 && r.w.opts.Clock.Now().UnixMilli() >= d {
			return false, r.fail(workflow.NewApplicationError(
				fmt.Sprintf("workflow %s exceeded its execution timeout", r.job.WorkflowID), "WorkflowExecutionTimeout", true))
		}
		if fault := r.x.Fault(); fault != nil {
			// Nondeterminism, a panic or a deadlock: the run cannot go on
			// with this code. Failing the job makes it visible; an operator
			// may retry it (Requeue) once the code is fixed.
			return false, r.fail(fault)
		}
		r.pending = append(r.pending, r.x.DrainMarkers()...)
		if done, result, err := r.x.Finished(); done {
			return false, r.finish(result, err)
		}
		// Remote work (children, other queues' activities) is started
		// before inline activities run, so that it proceeds in parallel.
		cmds := r.x.Unresolved()
		progressed, err := r.startRemote(cmds)
		if err != nil {
			return false, err
		}
		if progressed {
			continue
		}
		if progressed, err = r.runInline(cmds); err != nil {
			return false, err
		}
		if progressed {
			continue
		}
		woken, err := r.wait(cmds)
		if err != nil || !woken {
			return err == nil, err
		}
		if err := r.catchUp(false); err != nil {
			continue // a fault is handled at the top of the loop
		}
	}
}

// flush writes the events the worker recorded (markers, failed tries)
// before a step commit, so a commit never lands ahead of a marker whose
// value it may depend on.
func (r *run) flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	res, err := r.w.e.Append(r.ctx, engine.AppendEvents{LeaseRef: r.ref, Events: r.pending})
	if err != nil {
		return err
	}
	evs := make([]engine.Event, len(r.pending))
	for i, ne := range r.pending {
		evs[i] = engine.Event{Type: ne.Type, Step: ne.Step, Name: ne.Name, Payload: ne.Payload}
	}
	r.pending = nil
	return r.advanceOwn(res, evs)
}

// advanceOwn applies events this turn just wrote, rebuilt from what it sent
// and what the engine answered, instead of reading them back: one read
// fewer per step (in a cluster, one read-index round fewer). It reads the
// history instead when something else was appended in between (a signal),
// so the execution still sees every event in order.
func (r *run) advanceOwn(res *engine.AppendResult, evs []engine.Event) error {
	if res == nil || res.AtMS == 0 || res.FirstSeq != r.x.LastSeq()+1 || res.LastSeq+1-res.FirstSeq != uint64(len(evs)) {
		return r.catchUp(false)
	}
	for i := range evs {
		// Exactly what Apply stored: it stamps seq, time and attempt, and
		// msgpack drops an empty payload.
		evs[i].Seq, evs[i].AtMS, evs[i].Attempt = res.FirstSeq+uint64(i), res.AtMS, r.ref.Attempt
		if len(evs[i].Payload) == 0 {
			evs[i].Payload = nil
		}
	}
	if verifyOwnEvents {
		if err := r.compareStored(evs); err != nil {
			return err
		}
	}
	return r.x.Advance(evs, false)
}

// verifyOwnEvents makes advanceOwn read back what it rebuilt and compare;
// the package's tests turn it on (export_test.go), so every test checks
// that rebuilt events are exactly the stored ones.
var verifyOwnEvents = false

func (r *run) compareStored(evs []engine.Event) error {
	page, err := r.w.e.History(r.ctx, r.job.Job, evs[0].Seq-1, len(evs))
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(page.Events, evs) {
		return fmt.Errorf("worker: rebuilt events %+v differ from the stored %+v", evs, page.Events)
	}
	return nil
}

func (r *run) finish(result []byte, werr error) error {
	if err := r.flush(); err != nil {
		return err
	}
	if err := r.closeChildren(); err != nil {
		return err
	}
	var can *workflow.ContinueAsNewError
	if errors.As(werr, &can) {
		_, err := r.w.e.ContinueAsNew(r.ctx, engine.ContinueAsNew{LeaseRef: r.ref, Type: can.WorkflowType, Input: can.Input})
		return err
	}
	if werr == nil {
		_, err := r.w.e.Complete(r.ctx, engine.Complete{LeaseRef: r.ref, Result: result})
		return err
	}
	if retried, err := r.retry(werr); retried || err != nil {
		return err
	}
	if errors.Is(werr, workflow.ErrCanceled) {
		_, err := r.w.e.Cancel(r.ctx, engine.Cancel{Target: engine.Target{Job: r.job.Job}, Reason: "canceled by request"})
		return err
	}
	return r.fail(werr)
}

func (r *run) fail(werr error) error {
	_, err := r.w.e.Fail(r.ctx, engine.Fail{LeaseRef: r.ref, Error: sdkhook.EncodeFailure(werr)})
	return err
}

// isInline reports whether an activity command runs in this worker.
func (r *run) isInline(c *replay.Command) bool {
	opts, _ := c.Options.(workflow.ActivityOptions)
	return c.Kind == replay.KindActivity && (opts.TaskQueue == "" || opts.TaskQueue == r.w.queue)
}

// startRemote sends activities of other queues and child workflows to the
// engine as jobs whose result becomes this job's step effect, and catches
// up effects that arrived (phase 2 of the step commit). It reports whether
// the workflow can go on.
func (r *run) startRemote(cmds []*replay.Command) (bool, error) {
	progressed := false
	for _, c := range cmds {
		if (c.Kind != replay.KindActivity || r.isInline(c)) && c.Kind != replay.KindChild {
			continue
		}
		if !c.Recorded {
			if err := r.createRemote(c); err != nil {
				return false, err
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
		typ := map[[2]bool]engine.EventType{
			{false, false}: replay.EventActivityCompleted, {false, true}: replay.EventActivityFailed,
			{true, false}: replay.EventChildCompleted, {true, true}: replay.EventChildFailed,
		}[[2]bool{c.Kind == replay.KindChild, eff.Failed}]
		if err := r.flush(); err != nil {
			return false, err
		}
		if _, err := r.w.e.CommitStep(r.ctx, engine.CommitStep{LeaseRef: r.ref, Step: c.Step, Name: c.Name, Type: typ, CatchUp: true}); err != nil {
			return false, err
		}
		if err := r.catchUp(false); err != nil {
			return true, nil
		}
		progressed = true
	}
	return progressed, nil
}

// createRemote creates the job of a remote activity or child workflow and
// records that it was scheduled. The job's workflow id and request id are
// derived from this job and the step, so doing it again after a crash finds
// the job created the first time.
func (r *run) createRemote(c *replay.Command) error {
	create := engine.CreateJob{
		WorkflowID: r.job.WorkflowID + "/" + c.Step, Input: c.Input,
		ReusePolicy: engine.IDReuseReturnExisting, ParentID: r.job.Job, ParentStep: c.Step,
	}
	create.RequestID = fmt.Sprintf("heddle/%d/%s", r.job.Job, c.Step)
	ev := engine.NewEvent{Step: c.Step, Name: c.Name}
	switch c.Kind {
	case replay.KindActivity:
		opts, _ := c.Options.(workflow.ActivityOptions)
		in, err := json.Marshal(taskInput{Args: c.Input, Options: opts, IssuedAtMS: c.IssuedAtMS})
		if err != nil {
			return err
		}
		create.Type, create.Queue, create.Input = activityTypePrefix+c.Name, opts.TaskQueue, in
		ev.Type = replay.EventActivityScheduled
	case replay.KindChild:
		opts, _ := c.Options.(workflow.ChildWorkflowOptions)
		create.Type, create.Queue = c.Name, r.w.queue
		if opts.TaskQueue != "" {
			create.Queue = opts.TaskQueue
		}
		if opts.WorkflowID != "" {
			create.WorkflowID = opts.WorkflowID
		}
		ev.Type = replay.EventChildScheduled
	}
	if _, err := r.w.e.Create(r.ctx, create); err != nil && !errors.Is(err, engine.ErrWorkflowExists) {
		return err
	}
	r.pending = append(r.pending, ev)
	return nil
}

// wait releases the job until something it waits for happens: a timer, a
// signal, a remote step's effect or a retry delay. The worker records the
// scheduled timers in the same command. woken reports that something it
// would wait for already happened: the job stays in hand.
func (r *run) wait(cmds []*replay.Command) (woken bool, err error) {
	spec := engine.WaitSpec{AnySignal: true}
	events := append([]engine.NewEvent(nil), r.pending...)
	for _, c := range cmds {
		switch {
		case c.Kind == replay.KindTimer:
			spec.Timers = append(spec.Timers, engine.Timer{ID: c.Step, FireMS: c.FireAt})
			if !c.Recorded {
				events = append(events, engine.NewEvent{Type: replay.EventTimerScheduled, Step: c.Step})
			}
		case c.Kind == replay.KindActivity && r.isInline(c):
			if at, attempt := retryAt(r.x.Records(c.Step), r.pending, c.Step); at > 0 {
				spec.Timers = append(spec.Timers, engine.Timer{ID: replay.RetryTimerPrefix + c.Step + ":" + strconv.Itoa(attempt), FireMS: at})
			}
		default:
			spec.Steps = append(spec.Steps, c.Step)
		}
	}
	if d := r.job.DeadlineMS; d > 0 {
		spec.Timers = append(spec.Timers, engine.Timer{ID: "deadline", FireMS: d})
	}
	res, err := r.w.e.Wait(r.ctx, engine.Wait{LeaseRef: r.ref, Spec: spec, SeenSeq: r.x.LastSeq(), Events: events})
	if err != nil {
		return false, err
	}
	if res.Woken {
		// Something happened already; the Wait wrote nothing. Write the
		// records (scheduled steps, markers) now, so that what woke the job
		// (say, a child's result) finds its step recorded and can be caught
		// up, instead of the job being woken by it again and again.
		return true, r.flush()
	}
	r.pending = nil
	return false, nil
}

// closeChildren applies the parent-close policy to the children still
// running when the workflow ends. A child already closed is left alone.
func (r *run) closeChildren() error {
	for _, c := range r.x.Unresolved() {
		if c.Kind != replay.KindChild || !c.Recorded {
			continue
		}
		opts, _ := c.Options.(workflow.ChildWorkflowOptions)
		id := opts.WorkflowID
		if id == "" {
			id = r.job.WorkflowID + "/" + c.Step
		}
		t := engine.Target{WorkflowID: id}
		var err error
		switch opts.ParentClosePolicy {
		case workflow.ParentCloseTerminate:
			_, err = r.w.e.Cancel(r.ctx, engine.Cancel{Target: t, Reason: "parent closed"})
		case workflow.ParentCloseRequestCancel:
			_, err = r.w.e.RequestCancel(r.ctx, engine.RequestCancel{Target: t, Reason: "parent closed"})
		}
		if err != nil && !errors.Is(err, engine.ErrIllegalTransition) && !errors.Is(err, engine.ErrJobClosed) {
			return err
		}
	}
	return nil
}

// retry applies the run's workflow retry policy to its failure: while
// attempts are left and the failure is retryable, the run ends Failed and a
// new run of the same workflow id starts with the same input after the
// backoff (engine.ContinueAsNew with a Failure).
func (r *run) retry(werr error) (bool, error) {
	if errors.Is(werr, workflow.ErrCanceled) {
		return false, nil
	}
	j, err := r.w.e.Describe(r.ctx, engine.Target{Job: r.job.Job})
	if err != nil || j.Retry == nil {
		return false, err
	}
	p := workflow.RetryPolicy{InitialInterval: time.Duration(j.Retry.InitialIntervalMS) * time.Millisecond,
		BackoffCoefficient: j.Retry.BackoffCoefficient, MaximumInterval: time.Duration(j.Retry.MaximumIntervalMS) * time.Millisecond,
		MaximumAttempts: j.Retry.MaximumAttempts}
	if !retryable(werr, &p) || !p.HasAttemptsLeft(int(j.RunAttempt)) {
		return false, nil
	}
	first, err := r.w.e.History(r.ctx, j.ID, 0, 1)
	if err != nil || len(first.Events) == 0 {
		return false, errors.Join(err, errors.New("worker: run has no job_created event"))
	}
	_, err = r.w.e.ContinueAsNew(r.ctx, engine.ContinueAsNew{LeaseRef: r.ref, Input: first.Events[0].Payload,
		Failure: sdkhook.EncodeFailure(werr), DelayMS: p.Delay(int(j.RunAttempt)).Milliseconds()})
	return true, err
}
