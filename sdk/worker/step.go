package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// An inline activity runs on one of two paths (docs/state-machines.md §3).
//
// The straight path: the job's lease covers the step, nothing is written
// when a try starts, and the step's state is read from the events its
// tries and its commit write. It costs nothing more than an activity did
// before steps had states.
//
// The explicit path, for a step that needs a resource, a critic, other
// steps or a heartbeat timeout, or that once asked a person: every try
// takes a step lease of its own (LeaseStep, which starts it in the same
// command), renews it with StepHeartbeat, and ends it with EndStepAttempt
// (retry, switch resource, needs a person) or the step's commit, each
// fenced by the step attempt. A step that must wait (for a resource unit,
// its dependencies, a person or a long retry delay) is parked: the turn
// goes on without it and, when nothing else runs, the job waits for the
// step's news (WaitSpec.Steps) holding no lease.

// errStepLeaseLost is the cause of a try cancelled because its step lease
// ended: it ran out (the engine wrote step_lease_timeout) or a heartbeat
// was refused as stale.
var errStepLeaseLost = errors.New("worker: step lease lost")

// needsStepLease reports whether options put an activity on the explicit path.
func needsStepLease(opts workflow.ActivityOptions) bool {
	return len(opts.RequiredCapabilities) > 0 || len(opts.LabelSelector) > 0 || len(opts.DependsOn) > 0 ||
		opts.Critic != "" || opts.HeartbeatTimeout > 0
}

// explicit reports whether step c runs on the explicit path: its options
// ask for it, or its history shows a step record (a try of it once asked
// a person).
func (r *run) explicit(c *replay.Command) bool {
	opts, _, _ := activityOptions(c)
	if needsStepLease(opts) || r.recorded[c.Step] {
		return true
	}
	for _, ev := range r.x.Records(c.Step) {
		if engine.IsEngineStepEvent(ev.Type) {
			return true
		}
	}
	return false
}

// parked is a step of the explicit path that waits for something only
// others bring: a unit, its dependencies, a person, a retry delay.
type parked struct {
	// seq is the job's last seq when it parked: any later event of the
	// step is someone else's news (a grant, an answer, a timeout).
	seq  uint64
	deps []string
	// paused: it parked because it or its run is paused; an unpause of
	// the run after seq is news too (the activity's own unpause is an
	// event of the step).
	paused bool
}

// stepDeps returns the steps activity c depends on: those its DependsOn
// futures named when the workflow issued it.
func stepDeps(c *replay.Command) []string {
	a, _ := activityOf(c)
	return append(make([]string, 0, len(a.DependsOn)), a.DependsOn...)
}

// unpark lets the parked steps that have news run again: an event of the
// step newer than its parking, or a failed dependency (which the engine
// does not act on: the step's next LeaseStep learns of it and fails).
func (r *run) unpark() {
	for step, p := range r.parked {
		recs := r.x.Records(step)
		if len(recs) > 0 && recs[len(recs)-1].Seq > p.seq || r.depFailed(p.deps) || p.paused && r.x.UnpausedSeq() > p.seq {
			delete(r.parked, step)
		}
	}
}

// depFailed reports whether one of the steps deps failed.
func (r *run) depFailed(deps []string) bool {
	for _, d := range deps {
		if dr := r.x.Records(d); len(dr) > 0 && dr[len(dr)-1].Type == engine.EventActivityFailed {
			return true
		}
	}
	return false
}

// startExplicit starts step c on the explicit path, or parks it at once
// when its history says it waits for a person or for dependencies none of
// which failed (asking the engine again would tell nothing new).
func (r *run) startExplicit(c *replay.Command, recs []*engine.Event) {
	evs := make([]engine.Event, len(recs))
	for i, ev := range recs {
		evs[i] = *ev
	}
	deps := stepDeps(c)
	switch st := engine.DeriveStepState(evs).State; {
	case st == engine.StepNeedsUser, st == engine.StepWaitingDeps && !r.depFailed(deps):
		r.parked[c.Step] = parked{seq: r.x.LastSeq(), deps: deps}
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	a := &inflight{cancel: cancel, explicit: true}
	r.acts[c.Step] = a
	go func() {
		o := r.driveStep(ctx, a, c, evs)
		select {
		case r.results <- o:
		case <-r.turnDone:
		}
	}()
}

// tryLease is what the loop knows of the try an explicit step runs, so
// that it can cancel it when the history shows its lease ended.
type tryLease struct {
	mu      sync.Mutex
	attempt uint32
	cancel  context.CancelCauseFunc
}

func (t *tryLease) set(attempt uint32, cancel context.CancelCauseFunc) {
	t.mu.Lock()
	t.attempt, t.cancel = attempt, cancel
	t.mu.Unlock()
}

// lost cancels the running try if it is attempt.
func (t *tryLease) lost(attempt uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil && t.attempt == attempt {
		t.cancel(errStepLeaseLost)
	}
}

// leasesLost cancels the running tries whose step lease the history shows
// ended (step_lease_timeout of their attempt).
func (r *run) leasesLost() {
	for step, a := range r.acts {
		if !a.explicit {
			continue
		}
		recs := r.x.Records(step)
		for i := len(recs) - 1; i >= 0; i-- {
			if recs[i].Type == engine.EventStepLeaseTimeout {
				a.try.lost(recs[i].StepAttempt)
				break
			}
		}
	}
}

// driveStep runs an explicit step's tries until the step succeeds, fails
// for good, or parks. It runs on its own goroutine and touches nothing of
// the loop's but what it returns; evs are the step's events the loop knew
// when it started.
func (r *run) driveStep(ctx context.Context, a *inflight, c *replay.Command, evs []engine.Event) outcome {
	given, fn, local := r.activityFunc(c)
	o := outcome{c: c}
	var (
		opts     workflow.ActivityOptions
		policy   *workflow.RetryPolicy
		deadline time.Time
		leaseMS  int64
	)
	// options puts in force the workflow's options with an operator's laid
	// over them (UpdateActivityOptions): known from the step's events when
	// the drive starts, and from each lease's answer after.
	options := func(override *engine.ActivityOptions) {
		opts = overlay(given, override)
		policy = opts.RetryPolicy
		if policy == nil {
			policy = &workflow.RetryPolicy{}
		}
		deadline = time.Time{}
		if opts.ScheduleToCloseTimeout > 0 {
			deadline = time.UnixMilli(c.IssuedAtMS).Add(opts.ScheduleToCloseTimeout)
		}
		leaseMS = r.w.opts.LeaseTTL.Milliseconds()
		if opts.HeartbeatTimeout > 0 {
			// Only the activity's heartbeats renew the lease. The worker's own
			// watchdog ends a silent try at HeartbeatTimeout; the engine ends
			// the lease a timeout later, when the worker is gone or cut off.
			leaseMS = max(2*opts.HeartbeatTimeout.Milliseconds(), 1)
		}
	}
	proj := engine.DeriveStepState(evs)
	options(proj.Options)
	details := lastStepDetails(evs)
	answerKnown := engine.DeriveStepState(evs).State != engine.StepNeedsUser
	for {
		if !deadline.IsZero() && !r.w.opts.Clock.Now().Before(deadline) {
			o.err = workflow.NewApplicationError(fmt.Sprintf("activity %s: schedule-to-close timeout of %v", c.Name, opts.ScheduleToCloseTimeout),
				sdkhook.FailureTimeout, true)
			o.notStarted = true
			return o
		}
		asked := r.w.opts.Clock.Now()
		res, err := r.w.e.LeaseStep(r.ctx, engine.LeaseStep{LeaseRef: r.ref, Step: c.Step, Name: c.Name, LeaseMS: leaseMS,
			Capabilities: opts.RequiredCapabilities, Selector: opts.LabelSelector, DependsOn: stepDeps(c),
			TimeoutFatal: opts.TimeoutFatal, Start: true})
		if err == nil && res.Granted && res.StepLeaseRemainingMS > 0 &&
			r.w.opts.Clock.Now().Sub(asked) >= time.Duration(res.StepLeaseRemainingMS)*time.Millisecond {
			// The answer came later than the lease it grants could last:
			// the lease may have ended on its way, and the step's next try
			// may run already. Ask again: a lease still this try's is
			// granted again, with the time it has left.
			continue
		}
		switch {
		case errors.Is(err, engine.ErrDependencyFailed):
			o.err, o.notStarted = workflow.NewApplicationError(err.Error(), "DependencyFailed", true), true
			return o
		case errors.Is(err, engine.ErrNoResource):
			o.err, o.notStarted = workflow.NewApplicationError(err.Error(), "NoResourceError", true), true
			return o
		case err != nil:
			o.fault = err
			return o
		case res.State == engine.StepFailedFatal:
			o.err = timeoutError(c.Name, "its step lease ran out", true)
			o.stepAttempt = res.StepAttempt
			return o
		case !res.Granted:
			o.parkedPaused = res.Paused
			return parkStep(ctx, o, res.JobSeq)
		}
		attempt := res.StepAttempt
		o.stepAttempt = attempt
		options(res.Options)
		// base is the tries made before an operator's last reset: the
		// retry policy, and the activity's Info.Attempt, count the tries
		// after it.
		base := min(res.AttemptBase, attempt-1)
		tries := int(attempt - base) // the policy's count: 1 after a reset
		answer, timedOut, err := r.answerOf(evs, attempt, answerKnown)
		if err != nil {
			o.fault = err
			return o
		}
		answerKnown = true
		if timedOut {
			o.err = workflow.NewApplicationError(fmt.Sprintf("activity %s: nobody answered within %v", c.Name, opts.NeedsUserTimeout),
				sdkhook.FailureTimeout, true)
			return o
		}
		if fn == nil {
			o.err = workflow.NewApplicationError(fmt.Sprintf("activity %q is not registered on queue %q", c.Name, r.w.queue), "ActivityNotRegistered", false)
			return o
		}
		info := r.activityInfo(c, opts, r.ownCaller(), tries, local)
		info.Resource, info.ResourceLabels, info.Answer = res.Resource, res.Labels, answer
		try := r.runTry(ctx, a, c, fn, opts, info, attempt, details, deadline, leaseMS)
		result, tryErr := try.result, try.err
		details = try.details
		if errors.Is(tryErr, activity.ErrResultPending) && ctx.Err() == nil {
			// As on the plain path (resultPending): a step runs inside its
			// workflow's worker, with no task token to complete it by.
			// Judged as any error, it was retried until its policy ran out,
			// for ever by default.
			o.err = resultPendingInline(c.Name)
			return o
		}
		if ctx.Err() != nil {
			// The workflow cancelled the activity, or the turn ended: what
			// the try returned is its answer to that (take decides).
			o.err = tryErr
			if o.err == nil {
				o.result = result
			}
			return o
		}
		if try.leaseLost {
			// The engine ended the try (step_lease_timeout) and recorded
			// how: a retry, or a fatal timeout.
			if opts.TimeoutFatal || !policy.HasAttemptsLeft(tries) {
				o.err, o.notStarted = timeoutError(c.Name, "its step lease ran out", true), !opts.TimeoutFatal
				return o
			}
			r.stepRetried(c)
			if !r.sleep(ctx, min(policy.Delay(tries), r.w.opts.RetryInlineThreshold)) {
				o.err, o.notStarted = context.Cause(ctx), true
				return o
			}
			continue
		}
		in := CriticInput{ActivityType: c.Name, WorkflowID: r.job.WorkflowID, Step: c.Step, Attempt: tries,
			Err: tryErr, Resource: res.Resource, Answer: answer}
		if tryErr == nil {
			in.Result = converter.NewEncodedValue(result)
		}
		n := r.w.judge(ctx, opts, in, policy)
		o.decision = n.decision
		switch n.state {
		case engine.StepSucceeded:
			o.result, o.err = result, nil
			if tryErr != nil {
				o.result = nil // the critic accepted a failed try: it succeeds with no result
			}
			return o
		case engine.StepFailedFatal:
			o.err = n.err
			return o
		}
		end := engine.EndStepAttempt{LeaseRef: r.ref, Step: c.Step, Name: c.Name, StepAttempt: attempt, Decision: n.decision}
		var retryAtMS int64
		var delay time.Duration
		switch n.state {
		case engine.StepFailedRetryable:
			delay = policy.Delay(tries)
			if !deadline.IsZero() && !r.w.opts.Clock.Now().Add(delay).Before(deadline) {
				o.err = errors.Join(workflow.NewApplicationError(fmt.Sprintf("activity %s: schedule-to-close timeout of %v", c.Name, opts.ScheduleToCloseTimeout),
					sdkhook.FailureTimeout, true), n.err)
				return o
			}
			rec := attemptRecord{Attempt: int(attempt), Message: n.err.Error(), Details: details}
			if delay > r.w.opts.RetryInlineThreshold {
				retryAtMS = r.w.opts.Clock.Now().Add(delay).UnixMilli()
				rec.RetryAtMS = retryAtMS
			}
			end.Outcome, end.Payload = engine.OutcomeRetry, mustJSON(rec)
		case engine.StepFailedResource:
			end.Outcome, end.Payload = engine.OutcomeSwitchResource, sdkhook.EncodeFailure(n.err)
		case engine.StepNeedsUser:
			end.Outcome, end.Payload = engine.OutcomeNeedsUser, n.question
			end.AnswerTimeoutMS = opts.NeedsUserTimeout.Milliseconds()
			end.LeaseMS = leaseMS
		}
		er, err := r.w.e.EndStepAttempt(r.ctx, end)
		switch {
		case isStaleStep(err):
			continue // its lease ended meanwhile: the engine recorded the try
		case err != nil:
			o.fault = err
			return o
		}
		if n.state == engine.StepFailedRetryable {
			r.stepRetried(c)
		}
		switch {
		case n.state == engine.StepNeedsUser, retryAtMS > 0:
			o.err = n.err
			return parkStep(ctx, o, er.JobSeq)
		case n.state == engine.StepFailedRetryable:
			if !r.sleep(ctx, delay) {
				o.err, o.notStarted = n.err, true // cancelled while RETRYING
				return o
			}
		}
	}
}

// parkStep is the outcome of a step that must wait for news, seq being
// the job's last seq when it parked. A step whose activity was cancelled
// meanwhile (ctx ended) does not park: it fails where it waits, as the
// workflow's cancellation asks.
func parkStep(ctx context.Context, o outcome, seq uint64) outcome {
	if ctx.Err() != nil {
		if o.err == nil {
			o.err = context.Cause(ctx)
		}
		o.notStarted = true
		return o
	}
	o.err = nil
	o.parked, o.parkSeq = true, seq
	return o
}

// tryEnd is how one try of an explicit step ended.
type tryEnd struct {
	result []byte
	err    error
	// leaseLost: the step lease ended under the try, which was cancelled.
	leaseLost bool
	// details are the heartbeat details the try recorded (or the earlier
	// try's, when it recorded none).
	details []byte
}

// runTry runs one try of an explicit step under its step lease: a
// renewal every third of the lease unless the activity's own heartbeats
// must keep it (HeartbeatTimeout), and a cancellation when the lease ends.
func (r *run) runTry(ctx context.Context, a *inflight, c *replay.Command, fn any, opts workflow.ActivityOptions, info activity.Info,
	stepAttempt uint32, details []byte, deadline time.Time, leaseMS int64) tryEnd {
	tryCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a.try.set(stepAttempt, cancel)
	defer a.try.set(0, nil)
	env := &activityEnv{w: r.w, info: info, lease: r.lease, prev: details, beats: make(chan struct{}, 1),
		step: c.Step, stepAttempt: stepAttempt, onStale: func() { cancel(errStepLeaseLost) }}
	if opts.HeartbeatTimeout == 0 {
		stop := r.renewStep(tryCtx, env, time.Duration(leaseMS)*time.Millisecond, cancel)
		defer stop()
	}
	obsCtx, tried := r.w.obs.startActivity(tryCtx, &activityInfo{name: c.Name, step: c.Step, workflowID: r.job.WorkflowID,
		attempt: int(info.Attempt), registered: true})
	result, err := r.w.callActivity(obsCtx, fn, c.Input, env, opts, deadline)
	tried(err)
	return tryEnd{result: result, err: err, details: env.recorded(), leaseLost: errors.Is(context.Cause(tryCtx), errStepLeaseLost)}
}

// renewStep renews an explicit try's step lease (and the job's) every
// third of the lease until the returned stop is called. A refusal cancels
// the try (the activity env does), and so does a lease no renewal kept
// alive: when none succeeded for the lease less a margin (a tenth of it,
// at most a second) since the last one that did was sent, the engine may
// give the step's unit to another try, and this one must stop first.
func (r *run) renewStep(ctx context.Context, env *activityEnv, lease time.Duration, lost context.CancelCauseFunc) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	clk := r.w.opts.Clock
	trust := lease - min(lease/10, time.Second)
	go func() {
		defer close(done)
		kept := clk.Now() // the lease was taken (or renewed) just before the try
		for {
			t := clk.NewTimer(min(lease/3, max(kept.Add(trust).Sub(clk.Now()), 0)))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			if !clk.Now().Before(kept.Add(trust)) {
				lost(errStepLeaseLost)
				return
			}
			sent := clk.Now()
			err := env.beat(ctx)
			switch {
			case err == nil:
				kept = sent
			case ctx.Err() != nil, isStaleStep(err):
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// sleep waits d on the worker's clock; false means ctx ended first.
func (r *run) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.w.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// answerOf returns the answer a person gave the step for try attempt
// (step_answered starts that try), and whether the answer's timeout passed
// instead. known says the events given hold any answer there is; when
// not (the step asked a person when the try started and was answered
// since), the history is read.
func (r *run) answerOf(evs []engine.Event, attempt uint32, known bool) ([]byte, bool, error) {
	find := func(evs []engine.Event) (*engine.Event, bool) {
		var found *engine.Event
		for i := range evs {
			if evs[i].Type == engine.EventStepAnswered {
				found = &evs[i]
			}
		}
		return found, found != nil
	}
	ev, ok := find(evs)
	if !ok && !known && len(evs) > 0 {
		step := evs[0].Step
		after := evs[len(evs)-1].Seq
		for {
			page, err := r.w.e.History(r.ctx, r.job.Job, after, engine.MaxPage)
			if err != nil {
				return nil, false, err
			}
			var mine []engine.Event
			for _, e := range page.Events {
				if e.Step == step && engine.IsStepEvent(e.Type) {
					mine = append(mine, e)
				}
			}
			if e, found := find(mine); found {
				ev, ok = e, true
			}
			if page.Next == 0 {
				break
			}
			after = page.Next
		}
	}
	if !ok {
		return nil, false, nil
	}
	if ev.StepAttempt == attempt && ev.Reason == engine.ReasonAnswerTimeout {
		return nil, true, nil
	}
	return ev.Payload, false, nil
}

// lastStepDetails returns the heartbeat details the newest failed try
// among a step's events recorded.
func lastStepDetails(evs []engine.Event) []byte {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == engine.EventActivityReset {
			return nil // a reset drops the details of the tries before it
		}
		if evs[i].Type == engine.EventActivityAttemptFailed {
			var rec attemptRecord
			if json.Unmarshal(evs[i].Payload, &rec) == nil {
				return rec.Details
			}
			return nil
		}
	}
	return nil
}

// timeoutError is the failure of a try that ran out of time.
func timeoutError(name, what string, fatal bool) error {
	msg := fmt.Sprintf("activity %s: %s", name, what)
	if fatal {
		// The step lease is renewed by heartbeats: its end is a heartbeat
		// timeout, which workflow code sees as one.
		return fatalTimeout(msg, temporal.TimeoutTypeHeartbeat, nil)
	}
	return workflow.NewApplicationError(msg, sdkhook.FailureTimeout, false)
}

// isStaleStep reports a refusal of a step write because the try is not the
// step's live one (a *engine.StaleStepError, in-process or over the wire).
func isStaleStep(err error) bool {
	var se *engine.StaleStepError
	if errors.As(err, &se) {
		return true
	}
	var coded interface{ Code() string }
	return errors.As(err, &coded) && coded.Code() == engine.StaleStepCode
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled here
	}
	return b
}

// capabilityOf is the capability label of a step's metrics: the
// capabilities its options require, comma-joined ("" for none).
func capabilityOf(c *replay.Command) string {
	opts, _, _ := activityOptions(c)
	return strings.Join(opts.RequiredCapabilities, ",")
}

// stepRetried records a failed try of c that will be retried.
func (r *run) stepRetried(c *replay.Command) {
	if r.w.obs.m != nil {
		r.w.obs.m.StepRetry(capabilityOf(c))
	}
}

// stepEnded records the end of an activity step the turn just committed:
// how long after its issue, and how.
func (r *run) stepEnded(cs engine.CommitStep) {
	if r.w.obs.m == nil || cs.CatchUp || cs.Type != engine.EventActivityCompleted && cs.Type != engine.EventActivityFailed {
		return
	}
	for _, c := range r.x.Unresolved() {
		if c.Step == cs.Step {
			status := "succeeded"
			if cs.Failed {
				status = "failed"
			}
			r.w.obs.m.StepDone(capabilityOf(c), status, r.w.opts.Clock.Now().Sub(time.UnixMilli(c.IssuedAtMS)))
			return
		}
	}
}
