package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/replay"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// attemptRecord is the payload of an activity_attempt_failed event: which
// try failed, why, and (for a retry delay too long to sleep in the worker)
// when the next try may start.
type attemptRecord struct {
	Attempt   int    `json:"attempt"`
	Message   string `json:"message"`
	RetryAtMS int64  `json:"retryAtMS,omitempty"`
	// Details are the try's last heartbeat details, for the next try.
	Details []byte `json:"details,omitempty"`
}

// lastDetails returns the heartbeat details the newest failed try of a
// step recorded, among the pending records and the history's.
func lastDetails(recs []*engine.Event, pending []engine.NewEvent, step string) []byte {
	var payload []byte
	for i := len(pending) - 1; i >= 0 && payload == nil; i-- {
		if pending[i].Type == replay.EventActivityAttemptFailed && pending[i].Step == step {
			payload = pending[i].Payload
		}
	}
	for i := len(recs) - 1; i >= 0 && payload == nil; i-- {
		if recs[i].Type == replay.EventActivityAttemptFailed {
			payload = recs[i].Payload
		}
	}
	var rec attemptRecord
	if payload == nil || json.Unmarshal(payload, &rec) != nil {
		return nil
	}
	return rec.Details
}

// retryAt returns when a durably delayed retry of a step may run and the
// failed try it follows, or 0: the newest activity_attempt_failed record
// decides, among the history's records and the ones still pending.
func retryAt(recs []*engine.Event, pending []engine.NewEvent, step string) (int64, int) {
	for i := len(pending) - 1; i >= 0; i-- {
		if pending[i].Type == replay.EventActivityAttemptFailed && pending[i].Step == step {
			return parseRetry(pending[i].Payload)
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Type == replay.EventActivityAttemptFailed {
			return parseRetry(recs[i].Payload)
		}
	}
	return 0, 0
}

func parseRetry(payload []byte) (int64, int) {
	var rec attemptRecord
	if json.Unmarshal(payload, &rec) != nil {
		return 0, 0
	}
	return rec.RetryAtMS, rec.Attempt
}

// failedAttempts counts the recorded failed tries of a step.
func failedAttempts(recs []*engine.Event) int {
	n := 0
	for _, ev := range recs {
		if ev.Type == replay.EventActivityAttemptFailed {
			n++
		}
	}
	return n
}

// execute runs an activity from try attempt on, retrying in the worker while
// the delay is short, until it succeeds, fails for good, or needs a durable
// retry timer.
//
// ctx is the activity's own context: cancelled when the workflow cancels
// the activity, when the turn ends, or when the attempt turns stale.
func (r *run) execute(ctx context.Context, c *replay.Command, attempt int, details []byte) outcome {
	opts, _ := c.Options.(workflow.ActivityOptions)
	o := outcome{c: c}
	fn := r.w.activityFn(c.Name)
	if fn == nil {
		o.err = workflow.NewApplicationError(fmt.Sprintf("activity %q is not registered on queue %q", c.Name, r.w.queue), "ActivityNotRegistered", false)
	}
	policy := opts.RetryPolicy
	if policy == nil {
		policy = &workflow.RetryPolicy{}
	}
	// ScheduleToCloseTimeout bounds all tries together, from the workflow
	// time the activity was scheduled (the same on every replay).
	var deadline time.Time
	if opts.ScheduleToCloseTimeout > 0 {
		deadline = time.UnixMilli(c.IssuedAtMS).Add(opts.ScheduleToCloseTimeout)
	}
	scheduleTimeout := func() error {
		return workflow.NewApplicationError(fmt.Sprintf("activity %s: schedule-to-close timeout of %v", c.Name, opts.ScheduleToCloseTimeout),
			sdkhook.FailureTimeout, true)
	}
	for ; fn != nil; attempt++ {
		if !deadline.IsZero() && !r.w.opts.Clock.Now().Before(deadline) {
			o.err = scheduleTimeout()
			return o
		}
		info := activity.Info{ActivityType: c.Name, WorkflowID: r.job.WorkflowID, RunID: strconv.FormatUint(uint64(r.job.Job), 10),
			Step: c.Step, Attempt: attempt, IdempotencyKey: fmt.Sprintf("%s/%d/%s", r.job.WorkflowID, r.job.Job, c.Step)}
		info.TaskToken = r.taskToken()
		env := &activityEnv{w: r.w, info: info, lease: r.lease, prev: details, beats: make(chan struct{}, 1), onCancel: r.taskCancel}
		tryCtx, tried := r.w.obs.startActivity(ctx, &activityInfo{name: c.Name, step: c.Step, workflowID: r.job.WorkflowID,
			attempt: attempt, registered: true})
		result, err := r.w.callActivity(tryCtx, fn, c.Input, env, opts, deadline)
		tried(err)
		details = env.recorded()
		if err == nil {
			o.result, o.err = result, nil
			return o
		}
		o.err = err
		if r.resultPending(&o) {
			return o
		}
		if ctx.Err() != nil || !retryable(err, policy) || !policy.HasAttemptsLeft(attempt) {
			return o
		}
		delay := policy.Delay(attempt)
		if !deadline.IsZero() && !r.w.opts.Clock.Now().Add(delay).Before(deadline) {
			o.err = errors.Join(scheduleTimeout(), err)
			return o
		}
		rec := attemptRecord{Attempt: attempt, Message: err.Error(), Details: details}
		if delay > r.w.opts.RetryInlineThreshold {
			rec.RetryAtMS = r.w.opts.Clock.Now().Add(delay).UnixMilli()
			o.retryAt = rec.RetryAtMS
		}
		b, _ := json.Marshal(rec)
		o.records = append(o.records, engine.NewEvent{Type: replay.EventActivityAttemptFailed, Step: c.Step, Name: c.Name, Payload: b})
		if o.retryAt > 0 {
			return o
		}
		t := r.w.opts.Clock.NewTimer(delay)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return o
		}
	}
	return o
}

// retryable applies the policy's non-retryable types and the error's own flag.
func retryable(err error, p *workflow.RetryPolicy) bool {
	var app *workflow.ApplicationError
	if errors.As(sdkhook.DecodeFailure(sdkhook.EncodeFailure(err)), &app) {
		return !app.NonRetryable && p.IsRetryableType(app.Type)
	}
	return true
}

// activityEnv is what an activity's context carries: its info, the
// details an earlier try recorded, and those this try records.
type activityEnv struct {
	w    *Worker
	ctx  context.Context
	info activity.Info
	// lease is the lease that covers the activity (its workflow's job, or
	// the activity task's), which each heartbeat renews.
	lease *lease
	prev  []byte

	// onCancel, set for an activity task (an activity sent here from
	// another queue's workflow), cancels the activity when a heartbeat
	// answers that the workflow asked for that.
	onCancel func()

	mu      sync.Mutex
	details []byte
	beats   chan struct{} // each Heartbeat, for the HeartbeatTimeout watchdog
}

func (a *activityEnv) Info() activity.Info      { return a.info }
func (a *activityEnv) HeartbeatDetails() []byte { return a.prev }

// Logger is the worker's logger with the activity's attributes.
func (a *activityEnv) Logger() *slog.Logger {
	return a.w.obs.activityLogger(&activityInfo{name: a.info.ActivityType, step: a.info.Step,
		workflowID: a.info.WorkflowID, attempt: a.info.Attempt}, a.info.RunID)
}

// Heartbeat keeps details for the next try and renews the job's lease; an
// error means the attempt is stale (the worker then cancels the activity).
func (a *activityEnv) Heartbeat(details []byte) error {
	a.mu.Lock()
	a.details = append([]byte(nil), details...)
	a.mu.Unlock()
	select {
	case a.beats <- struct{}{}:
	default:
	}
	sent := a.w.opts.Clock.Now()
	res, err := a.w.e.Heartbeat(a.ctx, engine.Heartbeat{Leases: []engine.LeaseRef{a.lease.ref}, LeaseMS: a.w.opts.LeaseTTL.Milliseconds()})
	if err != nil {
		return err
	}
	if len(res.Refused) > 0 {
		sentinel := engine.ErrStaleAttempt
		if res.Refused[0].Code != engine.StaleAttemptCode {
			sentinel = engine.ErrUnknownJob
		}
		return fmt.Errorf("%w: heartbeat of job %d attempt %d", sentinel, a.lease.ref.Job, a.lease.ref.Attempt)
	}
	a.lease.renewed(sent)
	if len(res.CancelRequested) > 0 && a.onCancel != nil {
		a.onCancel()
	}
	return nil
}

// recorded returns the details this try recorded, or the earlier try's.
func (a *activityEnv) recorded() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.details != nil {
		return a.details
	}
	return a.prev
}

// callActivity runs one try of an activity function under its
// StartToCloseTimeout, turning a panic into an error.
func (w *Worker) callActivity(ctx context.Context, fn any, input []byte, env *activityEnv, opts workflow.ActivityOptions, scheduleDeadline time.Time) (result []byte, err error) {
	info := &env.info
	if opts.StartToCloseTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.StartToCloseTimeout)
		defer cancel()
	}
	if !scheduleDeadline.IsZero() {
		// The deadline is in workflow time, on the worker's clock; the
		// context counts the time left on the real clock, so a worker whose
		// clock is not the wall clock (a test's) gets the same budget.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, scheduleDeadline.Sub(w.opts.Clock.Now()))
		defer cancel()
	}
	info.Deadline, _ = ctx.Deadline()
	if opts.HeartbeatTimeout > 0 {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		go w.heartbeatWatchdog(ctx, cancel, env.beats, opts.HeartbeatTimeout)
		defer func() {
			if err != nil && errors.Is(context.Cause(ctx), errHeartbeatTimeout) {
				err = workflow.NewApplicationError(fmt.Sprintf("activity %s: heartbeat timeout: no heartbeat within %v: %v", info.ActivityType, opts.HeartbeatTimeout, err),
					sdkhook.FailureTimeout, false)
			}
		}()
	}
	env.ctx = ctx
	ctx = context.WithValue(ctx, sdkhook.ActivityEnvKey{}, env)
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, fmt.Errorf("activity %s panicked: %v", info.ActivityType, p)
		}
	}()
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || t.NumOut() == 0 || t.NumOut() > 2 || !t.Out(t.NumOut()-1).Implements(reflect.TypeFor[error]()) {
		return nil, workflow.NewApplicationError(fmt.Sprintf("activity %s has the shape %s; it must return error or (T, error)", info.ActivityType, t), "BadActivity", true)
	}
	var args []reflect.Value
	first := 0
	if t.NumIn() > 0 && t.In(0) == reflect.TypeFor[context.Context]() {
		args, first = append(args, reflect.ValueOf(ctx)), 1
	}
	ptrs := make([]any, 0, t.NumIn()-first)
	for i := first; i < t.NumIn(); i++ {
		p := reflect.New(t.In(i))
		ptrs = append(ptrs, p.Interface())
		args = append(args, p.Elem())
	}
	if err := converter.Decode(input, ptrs...); err != nil {
		return nil, workflow.NewApplicationError(fmt.Sprintf("activity %s input: %v", info.ActivityType, err), "BadInput", true)
	}
	out := v.Call(args)
	if e := out[len(out)-1]; !e.IsNil() {
		err = e.Interface().(error)
		if ctx.Err() == context.DeadlineExceeded {
			// A try that ran out of time is retried, as in Temporal; the
			// schedule-to-close deadline, when it is the one that passed,
			// ends the activity in execute.
			err = workflow.NewApplicationError(fmt.Sprintf("activity %s: start-to-close timeout after %v: %v", info.ActivityType, opts.StartToCloseTimeout, err),
				sdkhook.FailureTimeout, false)
		}
		return nil, err
	}
	if len(out) == 2 {
		return converter.Encode(out[0].Interface())
	}
	return nil, nil
}

// errHeartbeatTimeout is the cause of a try cancelled for a missed heartbeat.
var errHeartbeatTimeout = errors.New("heartbeat timeout")

// heartbeatWatchdog cancels a try whose activity lets HeartbeatTimeout pass
// without a heartbeat; each beat starts the wait anew.
func (w *Worker) heartbeatWatchdog(ctx context.Context, cancel context.CancelCauseFunc, beats <-chan struct{}, timeout time.Duration) {
	for {
		t := w.opts.Clock.NewTimer(timeout)
		select {
		case <-beats:
			t.Stop()
		case <-t.C():
			cancel(errHeartbeatTimeout)
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// taskInput is the input of a job that carries an activity to another
// queue: the arguments and the options the workflow gave.
type taskInput struct {
	Args       []byte                   `json:"args"`
	Options    workflow.ActivityOptions `json:"options"`
	IssuedAtMS int64                    `json:"issuedAtMS"`
}

// runActivityTask executes an activity that another queue's workflow sent
// here, and ends its job: the engine makes the result the workflow's step
// effect.
//
// actCtx is the activity's context; cancelAct cancels it, which the job's
// heartbeats (and the activity's own) do when the workflow asked to cancel
// the activity.
func (w *Worker) runActivityTask(ctx, actCtx context.Context, cancelAct context.CancelFunc, j engine.ClaimedJob, l *lease, name string) error {
	ref := l.ref
	page, err := w.e.History(ctx, j.Job, 0, 1)
	if err != nil || len(page.Events) == 0 {
		return errors.Join(err, fmt.Errorf("worker: activity task %d has no history", j.Job))
	}
	var in taskInput
	if err := json.Unmarshal(page.Events[0].Payload, &in); err != nil {
		_, ferr := w.e.Fail(ctx, engine.Fail{LeaseRef: ref, Error: sdkhook.EncodeFailure(fmt.Errorf("activity task input: %w", err))})
		return ferr
	}
	c := &replay.Command{Step: "1", Kind: replay.KindActivity, Name: name, Input: in.Args, Options: in.Options, IssuedAtMS: in.IssuedAtMS}
	r := &run{w: w, ctx: ctx, job: j, ref: ref, lease: l, taskCancel: cancelAct}
	o := r.execute(actCtx, c, int(j.Attempt), nil)
	if errors.Is(o.err, activity.ErrResultPending) {
		return w.parkForCompletion(ctx, j, ref)
	}
	if o.retryAt > 0 && actCtx.Err() == nil {
		// The next try waits longer than the worker sleeps: the job goes
		// back to its queue until then (Retrying) and the next claim runs
		// it, with the next attempt.
		delayMS := max(o.retryAt-w.opts.Clock.Now().UnixMilli(), 1)
		_, err := w.e.Requeue(ctx, engine.Requeue{LeaseRef: ref, DelayMS: delayMS, Reason: engine.ReasonRetry})
		return err
	}
	if o.err != nil && actCtx.Err() != nil && ctx.Err() == nil {
		// The workflow asked to cancel the activity, and it returned an
		// error: its acknowledgement of the cancellation.
		o.err = workflow.NewApplicationError(fmt.Sprintf("activity %s canceled: %v", name, o.err), sdkhook.FailureCanceled, true)
	}
	if o.err != nil {
		_, err = w.e.Fail(ctx, engine.Fail{LeaseRef: ref, Error: sdkhook.EncodeFailure(o.err)})
		return err
	}
	_, err = w.e.Complete(ctx, engine.Complete{LeaseRef: ref, Result: o.result})
	return err
}
