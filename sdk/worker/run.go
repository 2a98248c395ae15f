package worker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// run is one turn of one workflow job in this worker: from the claim to the
// wait, completion or failure that releases it.
//
// A turn is an event loop on one goroutine. The workflow code runs whenever
// the history grows; the commands it gives are acted on (remote work
// created, inline activities started on goroutines of their own, timers
// set, cancellations passed on); and while inline activities run, the loop
// waits for whichever comes first: an activity's outcome, an event others
// wrote to the history (a signal, a fired timer, a cancel request, a
// recorded effect), or a retry delay running out. So the workflow stays
// live during its activities, and every write still carries the attempt.
type run struct {
	w   *queueWorker
	ctx context.Context // the turn: engine writes; cancelled when the attempt is over
	job engine.ClaimedJob
	ref engine.LeaseRef
	// lease is the turn's lease, which activity heartbeats renew too.
	lease *lease
	x     *replay.Execution
	// pending are events recorded by the worker, not yet written.
	pending []engine.NewEvent
	// cancelTimers are engine timers the code cancelled, removed with the
	// next append.
	cancelTimers []string

	// acts are the inline activities running in this turn, by step; their
	// outcomes arrive on results.
	acts    map[string]*inflight
	results chan outcome
	// turnDone is closed when the turn ends, so that activities still
	// running then drop their outcome instead of blocking.
	turnDone chan struct{}
	watch    *watcher
	// taskCancel, for the run of an activity task, cancels the activity.
	taskCancel context.CancelFunc
	// caller, for the run of an activity task, names the workflow that
	// sent the activity.
	caller callerInfo

	// parked are the explicit steps waiting for news (step.go); recorded
	// the steps this turn gave a step record by ending a try of theirs
	// that ran under the job's lease (a try that asked a person).
	parked   map[string]parked
	recorded map[string]bool
}

// errAttemptOver ends a turn whose job another writer moved on (a cancel,
// termination, timeout, suspension or reclaim appeared in its history): the
// attempt can write nothing more.
var errAttemptOver = errors.New("worker: the job's attempt is over")

func (w *queueWorker) runWorkflow(ctx context.Context, j engine.ClaimedJob, l *lease) error {
	ref := l.ref
	fn := w.workflowFn(j.Type)
	if fn == nil {
		// Another worker of this queue may know the type: give the job back
		// after a pause, as a Temporal workflow task would be retried.
		_, err := w.e.Requeue(ctx, engine.Requeue{LeaseRef: ref, DelayMS: 1000, Reason: "unregistered_type"})
		return errors.Join(fmt.Errorf("worker: workflow type %q is not registered on queue %q", j.Type, w.queue), err)
	}
	x := w.cache.Take(j.Job)
	w.obs.cacheLookup(j, x != nil)
	if x == nil {
		info := sdkhook.WorkflowInfo{WorkflowID: j.WorkflowID, RunID: strconv.FormatUint(uint64(j.Job), 10),
			WorkflowType: j.Type, TaskQueue: w.queue, Attempt: j.RunAttempt, Logger: w.obs.base, ParentWorkflowID: j.ParentWorkflowID,
			Interceptors: w.interceptorList()}
		info.CronSchedule = j.CronSchedule
		if j.ParentID != 0 {
			info.ParentRunID = strconv.FormatUint(uint64(j.ParentID), 10)
		}
		x = replay.NewExecution(j.Job, sdkhook.NewEntry(fn, info))
		x.DeadlockTimeout = w.opts.DeadlockTimeout
	}
	r := newRun(w, ctx, j, l, x)
	released, err := r.drive()
	w.obs.faulted(j.Type, x.Fault())
	if err != nil || !released {
		x.Close() // its state may run ahead of what is durable: never reuse it
		if errors.Is(err, errAttemptOver) || errors.Is(err, engine.ErrStaleAttempt) && w.endedByOthers(j.Job) {
			return nil // not this worker's failure: the job moved on
		}
		return err
	}
	w.cache.Put(x)
	return nil
}

// endedByOthers reports whether a job whose write was refused as stale was
// ended or suspended by someone else (an operator, its parent, a deadline):
// the refusal is fencing doing its work, not a failure of this worker. A
// job that was reclaimed from this worker (its lease ran out) is a failure
// worth reporting.
func (w *queueWorker) endedByOthers(id engine.JobID) bool {
	ctx, cancel := context.WithTimeout(w.ctx, time.Second)
	defer cancel()
	j, err := w.e.Describe(ctx, engine.Target{Job: id})
	return err == nil && (j.Status.Terminal() || j.Status == engine.StatusSuspended)
}

func newRun(w *queueWorker, ctx context.Context, j engine.ClaimedJob, l *lease, x *replay.Execution) *run {
	return &run{w: w, ctx: ctx, job: j, ref: l.ref, lease: l, x: x, acts: map[string]*inflight{},
		results: make(chan outcome), turnDone: make(chan struct{}), parked: map[string]parked{}, recorded: map[string]bool{}}
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

// resume brings the execution up to the claim: from the events the claim
// brought along when they join what the execution has seen (a cached
// workflow woken by a timer, a signal, a child's result), else from the
// history.
func (r *run) resume() error {
	evs := r.job.Events
	if len(evs) > 0 && evs[0].Seq <= r.x.LastSeq()+1 && evs[len(evs)-1].Seq == r.job.LastSeq {
		return r.x.Advance(evs, true)
	}
	return r.catchUp(true)
}

// drive runs the workflow until it waits (the execution may be cached:
// released is true) or ends.
func (r *run) drive() (released bool, err error) {
	defer r.endTurn()
	if err := r.resume(); err != nil && r.x.Fault() == nil {
		return false, err
	}
	for {
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
		cmds := r.x.Unresolved()
		r.holdActs()
		// Cancellations first, so nothing cancelled is started; then remote
		// work (children, other queues' activities), so that it proceeds in
		// parallel with the inline activities started last.
		progressed, err := r.act(cmds, r.cancels, r.startRemote, r.externals, r.startInline)
		if err != nil {
			return false, err
		}
		if progressed {
			continue
		}
		if len(r.acts) == 0 {
			woken, err := r.wait(cmds)
			if err != nil || !woken {
				return err == nil, err
			}
			if err := r.catchUp(false); err != nil && r.x.Fault() == nil {
				return false, err
			}
			continue
		}
		if err := r.setTimers(cmds); err != nil {
			return false, err
		}
		if answersUpdate(r.pending) {
			// An update's decision or outcome is written now, not with the
			// next commit: its caller waits for it, and may be the very
			// activity that runs (Temporal decides updates while
			// activities run).
			if err := r.flush(); err != nil {
				return false, err
			}
			continue
		}
		if err := r.await(cmds); err != nil {
			return false, err
		}
	}
}

// answersUpdate reports whether events holds an update's decision or
// outcome marker.
func answersUpdate(events []engine.NewEvent) bool {
	for _, ev := range events {
		if ev.Type == engine.EventMarkerRecorded && strings.HasPrefix(ev.Step, "k:update:") {
			return true
		}
	}
	return false
}

// act runs the steps in order over cmds and stops at the first that made
// progress (wrote something the workflow code has now seen) or failed.
func (r *run) act(cmds []*replay.Command, steps ...func([]*replay.Command) (bool, error)) (bool, error) {
	for _, step := range steps {
		if progressed, err := step(cmds); err != nil || progressed {
			return progressed, err
		}
	}
	return false, nil
}

// flush writes the events the worker recorded (markers, failed tries,
// cancelled timers) before a step commit, so a commit never lands ahead of
// a marker whose value it may depend on.
func (r *run) flush() error {
	if len(r.pending) == 0 && len(r.cancelTimers) == 0 {
		return nil
	}
	return r.appendOwn(nil)
}

// appendOwn writes the pending events, the timer cancellations and the
// given timers in one fenced AppendEvents, and applies what it wrote.
func (r *run) appendOwn(timers []engine.Timer) error {
	res, err := r.w.e.Append(r.ctx, engine.AppendEvents{LeaseRef: r.ref, Events: r.pending, Timers: timers, CancelTimers: r.cancelTimers})
	if err != nil {
		return err
	}
	evs := make([]engine.Event, len(r.pending))
	for i, ne := range r.pending {
		evs[i] = engine.Event{Type: ne.Type, Step: ne.Step, Name: ne.Name, Payload: ne.Payload, StepAttempt: ne.StepAttempt}
	}
	r.pending, r.cancelTimers = nil, nil
	if len(evs) == 0 {
		return nil
	}
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
	// A page may end early at engine.MaxPageBytes: read on until the
	// stored events cover the rebuilt ones.
	var stored []engine.Event
	for after := evs[0].Seq - 1; len(stored) < len(evs); {
		page, err := r.w.e.History(r.ctx, r.job.Job, after, len(evs)-len(stored))
		if err != nil {
			return err
		}
		stored = append(stored, page.Events...)
		if page.Next == 0 {
			break
		}
		after = page.Next
	}
	if !reflect.DeepEqual(stored, evs) {
		return fmt.Errorf("worker: rebuilt events %+v differ from the stored %+v", evs, stored)
	}
	return nil
}

// endTurn cancels the inline activities still running (an ended workflow
// abandons them) and stops the watcher.
func (r *run) endTurn() {
	for _, a := range r.acts {
		a.cancel()
	}
	close(r.turnDone)
	r.stopWatch()
}

func (r *run) finish(result []byte, werr error) error {
	if err := r.flush(); err != nil {
		return err
	}
	if err := r.closeChildren(); err != nil {
		return err
	}
	if err := r.cancelRemoteActivities(); err != nil {
		return err
	}
	var can *workflow.ContinueAsNewError
	if errors.As(werr, &can) {
		_, err := r.w.e.ContinueAsNew(r.ctx, engine.ContinueAsNew{LeaseRef: r.ref, Type: can.WorkflowType.GetName(), Input: can.Input})
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
		MaximumAttempts: j.Retry.MaximumAttempts, NonRetryableErrorTypes: j.Retry.NonRetryableErrorTypes,
		Backoff: workflow.BackoffKind(j.Retry.Backoff)}
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
