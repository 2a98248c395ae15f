package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// canceledActivity is the failure of an activity that returned err after
// its workflow cancelled it: its acknowledgement. A *temporal.CanceledError
// it returned is kept (with its details); any other error becomes one
// whose message quotes it.
func canceledActivity(name string, err error) error {
	var c *temporal.CanceledError
	if errors.As(err, &c) {
		return err
	}
	return temporal.NewCanceledErrorWithOptions(temporal.CanceledErrorOptions{Message: fmt.Sprintf("activity %s canceled: %v", name, err)})
}

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
		if pending[i].Type == engine.EventActivityAttemptFailed && pending[i].Step == step {
			payload = pending[i].Payload
		}
	}
	for i := len(recs) - 1; i >= 0 && payload == nil; i-- {
		if recs[i].Type == engine.EventActivityReset {
			return nil // a reset drops the details of the tries before it
		}
		if recs[i].Type == engine.EventActivityAttemptFailed {
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
		if pending[i].Type == engine.EventActivityAttemptFailed && pending[i].Step == step {
			return parseRetry(pending[i].Payload)
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		switch recs[i].Type {
		case engine.EventActivityReset:
			return 0, 0 // an operator's reset: the next try is due at once
		case engine.EventActivityAttemptFailed:
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
		if ev.Type == engine.EventActivityAttemptFailed {
			n++
		}
	}
	return n
}

// activityOptions returns the options of activity command c and, for a
// local activity, the function it calls (nil: its registered one). c is an
// activity this worker carries out (isInline or createRemote checked its
// options with activityOf); any other command has none, and gets the zero
// options.
func activityOptions(c *replay.Command) (opts workflow.ActivityOptions, localFn any, local bool) {
	a, _ := activityOf(c)
	return a.Options, a.LocalFn, a.Local
}

// activityFunc returns the options of activity command c, the function
// to call (nil: none registered) and whether it is a local activity.
func (r *run) activityFunc(c *replay.Command) (opts workflow.ActivityOptions, fn any, local bool) {
	opts, fn, local = activityOptions(c)
	if local {
		if reg := r.w.registeredActivity(c.Name); reg != nil {
			// A local activity given as a method value of a nil struct
			// pointer (var a *Activities; a.Charge), as Temporal code
			// does, runs as the method of the struct the worker
			// registered.
			fn = reg
		}
	}
	if fn == nil {
		fn = r.w.activityFn(c.Name)
	}
	return opts, fn, local
}

// activityInfo is the activity.Info of try attempt of activity c, which
// caller called.
func (r *run) activityInfo(c *replay.Command, opts workflow.ActivityOptions, caller callerInfo, attempt int, local bool) activity.Info {
	info := activity.Info{ActivityType: activity.Type{Name: c.Name}, ActivityID: c.Step,
		WorkflowType: &temporal.WorkflowType{Name: caller.workflowType}, WorkflowNamespace: "default",
		WorkflowExecution: temporal.WorkflowExecution{ID: caller.workflowID, RunID: caller.runID},
		TaskQueue:         r.w.queue, HeartbeatTimeout: opts.HeartbeatTimeout, ScheduleToCloseTimeout: opts.ScheduleToCloseTimeout,
		StartToCloseTimeout: opts.StartToCloseTimeout, ScheduledTime: time.UnixMilli(c.IssuedAtMS), StartedTime: r.w.opts.Clock.Now(),
		Attempt: int32(attempt), IsLocalActivity: local,
		WorkflowID: caller.workflowID, RunID: caller.runID, Step: c.Step,
		IdempotencyKey: fmt.Sprintf("%s/%d/%s", r.job.WorkflowID, r.job.Job, c.Step)}
	info.TaskToken = r.taskToken()
	return info
}

// ownCaller is the caller of the activities a run's workflow calls.
func (r *run) ownCaller() callerInfo {
	return callerInfo{workflowID: r.job.WorkflowID, runID: strconv.FormatUint(uint64(r.job.Job), 10), workflowType: r.job.Type}
}

// callerInfo names the workflow that called an activity: the run itself,
// or for an activity task, the workflow its input names.
type callerInfo struct {
	workflowID, runID, workflowType string
}

// execute runs an activity from try attempt on, retrying in the worker while
// the delay is short, until it succeeds, fails for good, or needs a durable
// retry timer.
//
// ctx is the activity's own context: cancelled when the workflow cancels
// the activity, when the turn ends, or when the attempt turns stale. hold,
// once true, stops the retries in the worker: the run (or the activity
// task) was paused, or an operator acted on the activity, whose next try
// is the loop's to start (on the explicit path). The try that runs
// finishes; a failure to retry is given back as a durable retry.
// override, when not nil, is laid over the activity's options (an
// activity task's operator options).
func (r *run) execute(ctx context.Context, c *replay.Command, attempt int, details []byte, hold *atomic.Bool, override *engine.ActivityOptions) outcome {
	opts, fn, local := r.activityFunc(c)
	opts = overlay(opts, override)
	o := outcome{c: c}
	if fn == nil {
		o.err = temporal.NewApplicationErrorWithOptions(fmt.Sprintf("activity %q is not registered on queue %q", c.Name, r.w.queue),
			"ActivityNotRegistered", temporal.ApplicationErrorOptions{})
	}
	policy := opts.RetryPolicy
	// ScheduleToCloseTimeout bounds all tries together, from the workflow
	// time the activity was scheduled (the same on every replay).
	var deadline time.Time
	if opts.ScheduleToCloseTimeout > 0 {
		deadline = time.UnixMilli(c.IssuedAtMS).Add(opts.ScheduleToCloseTimeout)
	}
	scheduleTimeout := func(last error) error {
		msg := fmt.Sprintf("activity %s: schedule-to-close timeout of %v", c.Name, opts.ScheduleToCloseTimeout)
		if last != nil {
			msg += "; the last try failed: " + last.Error()
		}
		return sdkhook.NewTimeoutError(msg, temporal.TimeoutTypeScheduleToClose, details)
	}
	caller := r.caller
	if caller.workflowID == "" {
		caller = r.ownCaller()
	}
	for ; fn != nil; attempt++ {
		o.stepAttempt = uint32(attempt)
		if !deadline.IsZero() && !r.w.opts.Clock.Now().Before(deadline) {
			o.err = scheduleTimeout(o.err)
			return o
		}
		info := r.activityInfo(c, opts, caller, attempt, local)
		env := &activityEnv{w: r.w, info: info, lease: r.lease, prev: details, beats: make(chan struct{}, 1), onCancel: r.taskCancel,
			step: c.Step, stepAttempt: uint32(attempt)}
		tryCtx, tried := r.w.obs.startActivity(ctx, &activityInfo{name: c.Name, step: c.Step, workflowID: caller.workflowID,
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
		var nu *activity.NeedsUserError
		if errors.As(err, &nu) && ctx.Err() == nil && r.x != nil {
			// A person must act: the loop gives the step a record in
			// NEEDS_USER, and it goes on with a step lease of its own.
			o.question = nu.Question
			if o.question == nil {
				o.question = []byte{}
			}
			return o
		}
		if ctx.Err() != nil || !retryable(err, policy) || !policy.HasAttemptsLeft(attempt) {
			return o
		}
		delay := policy.Delay(attempt)
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.NextRetryDelay() > 0 {
			delay = app.NextRetryDelay() // the activity asked for this delay
		}
		if !deadline.IsZero() && !r.w.opts.Clock.Now().Add(delay).Before(deadline) {
			o.err = scheduleTimeout(err)
			return o
		}
		rec := attemptRecord{Attempt: attempt, Message: err.Error(), Details: details}
		if delay > r.w.opts.RetryInlineThreshold || hold.Load() {
			rec.RetryAtMS = r.w.opts.Clock.Now().Add(delay).UnixMilli()
			o.retryAt = rec.RetryAtMS
		}
		if r.x != nil {
			r.stepRetried(c)
		}
		b, _ := json.Marshal(rec)
		ne := engine.NewEvent{Type: engine.EventActivityAttemptFailed, Step: c.Step, Name: c.Name, Payload: b, StepAttempt: uint32(attempt)}
		if o.retryAt > 0 {
			// The record goes with the turn's next write, which sets the
			// retry timer (an activity task's job is requeued instead).
			o.records = append(o.records, ne)
			return o
		}
		if r.x != nil {
			// The step is RETRYING while the worker sleeps out the delay:
			// the record is written now, so that its state says so.
			if _, err := r.w.e.Append(r.ctx, engine.AppendEvents{LeaseRef: r.ref, Events: []engine.NewEvent{ne}}); isStaleStep(err) {
				// An operator gave the step a record meanwhile and an
				// earlier try ended its straight path: this try is not the
				// step's any more. The loop starts its next one.
				o.retryAt = max(r.w.opts.Clock.Now().UnixMilli(), 1)
				return o
			} else if err != nil {
				o.fault = err
				return o
			}
		}
		t := r.w.opts.Clock.NewTimer(delay)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return o
		}
		if hold.Load() {
			// Held while it slept: the next try is the loop's to start,
			// due now (its failure is recorded already).
			o.retryAt = max(r.w.opts.Clock.Now().UnixMilli(), 1)
			return o
		}
	}
	return o
}

// overlay lays an operator's options (UpdateActivityOptions) over the
// options the workflow gave an activity: each non-zero field replaces
// the workflow's.
func overlay(opts workflow.ActivityOptions, o *engine.ActivityOptions) workflow.ActivityOptions {
	if o == nil {
		return opts
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	set := func(dst *time.Duration, v int64) {
		if v != 0 {
			*dst = ms(v)
		}
	}
	set(&opts.ScheduleToCloseTimeout, o.ScheduleToCloseTimeoutMS)
	set(&opts.ScheduleToStartTimeout, o.ScheduleToStartTimeoutMS)
	set(&opts.StartToCloseTimeout, o.StartToCloseTimeoutMS)
	set(&opts.HeartbeatTimeout, o.HeartbeatTimeoutMS)
	if p := o.RetryPolicy; p != nil {
		rp := workflow.RetryPolicy{}
		if opts.RetryPolicy != nil {
			rp = *opts.RetryPolicy
		}
		set(&rp.InitialInterval, p.InitialIntervalMS)
		set(&rp.MaximumInterval, p.MaximumIntervalMS)
		if p.BackoffCoefficient != 0 {
			rp.BackoffCoefficient = p.BackoffCoefficient
		}
		if p.MaximumAttempts != 0 {
			rp.MaximumAttempts = p.MaximumAttempts
		}
		opts.RetryPolicy = &rp
	}
	return opts
}

// retryable applies Temporal's rules (temporal.IsRetryable) with the
// policy's non-retryable types. A timeout the options made fatal
// (fatalTimeout) is not retried, although the timeout it wraps would be.
func retryable(err error, p *workflow.RetryPolicy) bool {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() && app.Type() == sdkhook.FailureTimeout && temporal.IsTimeoutError(app) {
		return false
	}
	var types []string
	if p != nil {
		types = p.NonRetryableErrorTypes
	}
	return temporal.IsRetryable(err, types)
}

// activityEnv is what an activity's context carries: its info, the
// details an earlier try recorded, and those this try records.
type activityEnv struct {
	w    *queueWorker
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
	// step and stepAttempt are the step and try each heartbeat names
	// (StepHeartbeat); onStale, set for a try with a step lease of its
	// own, cancels it when a heartbeat is refused as stale.
	step        string
	stepAttempt uint32
	onStale     func()

	// cancelTry cancels the try's context (a heartbeat found the attempt
	// stale).
	cancelTry context.CancelCauseFunc

	mu      sync.Mutex
	details []byte
	beats   chan struct{} // each Heartbeat, for the HeartbeatTimeout watchdog
}

func (a *activityEnv) Info() activity.Info      { return a.info }
func (a *activityEnv) HeartbeatDetails() []byte { return a.prev }

// WorkerStop is closed when the worker is asked to stop.
func (a *activityEnv) WorkerStop() <-chan struct{} { return a.w.stop }

// Logger is the worker's logger with the activity's attributes.
func (a *activityEnv) Logger() *slog.Logger {
	return a.w.obs.activityLogger(&activityInfo{name: a.info.ActivityType.Name, step: a.info.Step,
		workflowID: a.info.WorkflowID, attempt: int(a.info.Attempt)}, a.info.RunID)
}

// Heartbeat keeps details for the next try, restarts the HeartbeatTimeout
// and renews the job's lease at the engine (every call: heddle does not
// throttle heartbeats, so that an activity on another queue learns of a
// cancellation at the pace it heartbeats). A refusal means the attempt is
// stale: the activity's context is cancelled.
func (a *activityEnv) Heartbeat(details []byte) {
	a.mu.Lock()
	if details != nil {
		a.details = append([]byte(nil), details...)
	}
	a.mu.Unlock()
	if a.onStale == nil {
		a.fed()
		_ = a.beat(a.ctx) // a refusal cancels the try (beat)
		return
	}
	// A try with a step lease of its own: only a heartbeat that renewed
	// the lease keeps the watchdog off, so the try stops before the engine
	// can give its unit away.
	if a.beat(a.ctx) == nil {
		a.fed()
	}
}

// fed tells the HeartbeatTimeout watchdog of a heartbeat.
func (a *activityEnv) fed() {
	select {
	case a.beats <- struct{}{}:
	default:
	}
}

// beat sends one StepHeartbeat: it notes the try's heartbeat (or renews
// its step lease) and renews the job's lease, in one write. A stale try
// is told so by an error matching engine.ErrStaleAttempt.
func (a *activityEnv) beat(ctx context.Context) error {
	sent := a.w.opts.Clock.Now()
	res, err := a.w.e.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: a.lease.ref, Step: a.step, StepAttempt: a.stepAttempt,
		LeaseMS: a.w.opts.LeaseTTL.Milliseconds()})
	if err != nil {
		if isStaleStep(err) || errors.Is(err, engine.ErrStaleAttempt) {
			if a.onStale != nil {
				a.onStale()
			} else if a.cancelTry != nil {
				a.cancelTry(fmt.Errorf("%w: heartbeat of job %d attempt %d", engine.ErrStaleAttempt, a.lease.ref.Job, a.lease.ref.Attempt))
			}
		}
		return err // otherwise transient: the worker's heartbeat loop tries again
	}
	a.lease.renewed(sent)
	if res.CancelRequested && a.onCancel != nil {
		a.onCancel()
	}
	return nil
}

// timeoutFailure is the error of a try that ran out of time: a
// *temporal.TimeoutError, retried as in Temporal, or when the options make
// a timeout fatal (TimeoutFatal), a fatalTimeout, which ends the step.
func timeoutFailure(opts workflow.ActivityOptions, msg string, tt temporal.TimeoutType, details []byte) error {
	if opts.TimeoutFatal {
		return fatalTimeout(msg, tt, details)
	}
	return sdkhook.NewTimeoutError(msg, tt, details)
}

// fatalTimeout is a timeout that ends its step for good: a non-retryable
// application error of the timeout type (retryable decides by it) caused by
// the *temporal.TimeoutError itself, so that workflow code sees a timeout
// (temporal.IsTimeoutError, TimeoutType) as in Temporal.
func fatalTimeout(msg string, tt temporal.TimeoutType, details []byte) error {
	return temporal.NewNonRetryableApplicationError(msg, sdkhook.FailureTimeout, sdkhook.NewTimeoutError(string(tt)+" timeout", tt, details))
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
func (w *queueWorker) callActivity(ctx context.Context, fn any, input []byte, env *activityEnv, opts workflow.ActivityOptions, scheduleDeadline time.Time) (result []byte, err error) {
	info := &env.info
	name := info.ActivityType.Name
	release, err := w.activitySlot(ctx, info.IsLocalActivity)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, stopBackground := w.backgroundActivityContext(ctx)
	defer stopBackground()
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
	var cancelTry context.CancelCauseFunc
	ctx, cancelTry = context.WithCancelCause(ctx)
	defer cancelTry(nil)
	env.cancelTry = cancelTry
	if opts.HeartbeatTimeout > 0 {
		go w.heartbeatWatchdog(ctx, cancelTry, env.beats, opts.HeartbeatTimeout)
		defer func() {
			if err != nil && errors.Is(context.Cause(ctx), errHeartbeatTimeout) {
				err = timeoutFailure(opts, fmt.Sprintf("activity %s: no heartbeat within %v: %v", name, opts.HeartbeatTimeout, err),
					temporal.TimeoutTypeHeartbeat, env.recorded())
			}
		}()
	}
	env.ctx = ctx
	ctx = context.WithValue(ctx, sdkhook.ActivityEnvKey{}, env)
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, sdkhook.NewPanicError(fmt.Sprintf("activity %s panicked: %v", name, p), string(debug.Stack()))
		}
	}()
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || checkActivity(t) != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("activity %s has the shape %s; it must return error or (T, error)", name, t), "BadActivity", nil)
	}
	var args []reflect.Value
	first := 0
	if t.NumIn() > 0 && t.In(0) == contextType {
		args, first = append(args, reflect.ValueOf(ctx)), 1
	}
	if t.NumIn() == first+1 && t.In(first) == encodedValuesType {
		// A dynamic activity (or any taking converter.EncodedValues)
		// decodes its arguments itself.
		args = append(args, reflect.ValueOf(converter.NewEncodedValues(input)))
	} else {
		ptrs := make([]any, 0, t.NumIn()-first)
		for i := first; i < t.NumIn(); i++ {
			p := reflect.New(t.In(i))
			ptrs = append(ptrs, p.Interface())
			args = append(args, p.Elem())
		}
		if err := converter.Decode(input, ptrs...); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("activity %s input: %v", name, err), "BadInput", nil)
		}
	}
	var out []reflect.Value
	if list := w.interceptorList(); list != nil {
		out = callIntercepted(ctx, list, v, args, first)
	} else {
		out = v.Call(args)
	}
	if e := out[len(out)-1]; !e.IsNil() {
		err = e.Interface().(error)
		if ctx.Err() == context.DeadlineExceeded {
			// A try that ran out of time is retried, as in Temporal,
			// unless the options make a timeout fatal; the
			// schedule-to-close deadline, when it is the one that passed,
			// ends the activity in execute.
			err = timeoutFailure(opts, fmt.Sprintf("activity %s: start-to-close timeout after %v: %v", name, opts.StartToCloseTimeout, err),
				temporal.TimeoutTypeStartToClose, env.recorded())
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
func (w *queueWorker) heartbeatWatchdog(ctx context.Context, cancel context.CancelCauseFunc, beats <-chan struct{}, timeout time.Duration) {
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
	// The workflow that called the activity, for activity.GetInfo.
	WorkflowID   string `json:"workflowID,omitempty"`
	RunID        string `json:"runID,omitempty"`
	WorkflowType string `json:"workflowType,omitempty"`
}

// runActivityTask executes an activity that another queue's workflow sent
// here, and ends its job: the engine makes the result the workflow's step
// effect.
//
// actCtx is the activity's context; cancelAct cancels it, which the job's
// heartbeats (and the activity's own) do when the workflow asked to cancel
// the activity.
func (w *queueWorker) runActivityTask(ctx, actCtx context.Context, cancelAct context.CancelFunc, j engine.ClaimedJob, l *lease, name string) error {
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
	c := &replay.Command{Step: "1", Kind: replay.KindActivity, Name: name, Input: in.Args, Options: activityCommand{Options: in.Options},
		IssuedAtMS: in.IssuedAtMS}
	if w.activityFn(name) == nil {
		// Another worker of this queue may have the code (this one claims
		// every type, for a dynamic workflow): give the task back after a
		// pause, as a workflow of an unknown type is.
		_, err := w.e.Requeue(ctx, engine.Requeue{LeaseRef: ref, DelayMS: 1000, Reason: "unregistered_type"})
		return errors.Join(fmt.Errorf("worker: activity type %q is not registered on queue %q", name, w.queue), err)
	}
	r := &run{w: w, ctx: ctx, job: j, ref: ref, lease: l, taskCancel: cancelAct,
		caller: callerInfo{workflowID: in.WorkflowID, runID: in.RunID, workflowType: in.WorkflowType}}
	// An operator's reset starts the task's tries over from its attempt
	// then; its options lay over the workflow's.
	o := r.execute(actCtx, c, int(j.Attempt-j.AttemptBase), nil, &l.paused, j.ActivityOptions)
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
		o.err = canceledActivity(name, o.err)
	}
	if o.err != nil {
		_, err = w.e.Fail(ctx, engine.Fail{LeaseRef: ref, Error: sdkhook.EncodeFailure(o.err)})
		return err
	}
	_, err = w.e.Complete(ctx, engine.Complete{LeaseRef: ref, Result: o.result})
	return err
}
