package workflow

import (
	"time"
)

// ActivityOptions say where and for how long an activity may run. They are
// set on a context with WithActivityOptions and travel with the activity's
// command to the worker, which enforces them.
type ActivityOptions struct {
	// TaskQueue is the queue the activity is sent to; empty means the
	// workflow's own task queue.
	TaskQueue string
	// ScheduleToCloseTimeout bounds the whole activity, retries included.
	ScheduleToCloseTimeout time.Duration
	// StartToCloseTimeout bounds one attempt.
	StartToCloseTimeout time.Duration
	// HeartbeatTimeout is the longest gap between two heartbeats of a
	// running attempt; 0 means no heartbeats are expected.
	HeartbeatTimeout time.Duration
	// RetryPolicy says how failed attempts are retried; nil means the
	// defaults of RetryPolicy's zero value.
	RetryPolicy *RetryPolicy
	// ScheduleToStartTimeout bounds the time from scheduling to the start
	// of the first attempt: for an activity sent to another task queue, the
	// time it waits for a worker there (the engine enforces it); for one
	// run by the workflow's own worker, the time until that worker starts
	// it. Exceeding it fails the activity with a TimeoutError. 0: no bound.
	ScheduleToStartTimeout time.Duration
	// WaitForCancellation: when the activity's context is cancelled, the
	// running attempt's context is cancelled (in the workflow's worker at
	// once, in another process at its next heartbeat). With
	// WaitForCancellation the future waits for the activity to return and
	// reports what it returned; without it (the default, as in Temporal)
	// the future fails with ErrCanceled at once.
	WaitForCancellation bool

	// The fields below make the activity a step with a step lease of its
	// own in the engine (docs/state-machines.md §3): each try is leased,
	// visible in its step state, and fenced by its step attempt. An
	// activity that sets none of them (and does not set HeartbeatTimeout)
	// runs under its workflow's lease at no extra cost. They are for
	// activities on the workflow's own task queue: ExecuteActivity fails
	// one sent to another queue with them.

	// RequiredCapabilities and LabelSelector name the resource a try needs:
	// one unit of a registered resource that offers every capability and
	// every label with the given value (heddle resource add). A try waits
	// for a free unit, first come first served; the activity sees the unit
	// in activity.GetInfo. An activity that returns an
	// activity.ResourceError has its resource put on the step's avoid-list
	// and runs again on another; when none is left the step fails with an
	// error naming what it needs and what it avoids.
	RequiredCapabilities []string
	LabelSelector        map[string]string
	// Critic names a critic registered with the worker
	// (worker.RegisterCritic) that judges each try: accept, retry,
	// switch_resource, replan or needs_user. Its decision is recorded with
	// the step, so a replay never asks it again.
	Critic string
	// DependsOn lists futures of activities (ExecuteActivity's) that must
	// succeed before this one may start: until then its step is
	// WAITING_DEPS. A dependency that fails fails this activity too.
	DependsOn []Future `json:"-"`
	// NeedsUserTimeout bounds the wait for a person's answer once a try
	// needs one (an activity.NeedsUserError, or the critic's needs_user);
	// when it passes, the activity fails with a TimeoutError. 0: it waits
	// for as long as the workflow runs.
	NeedsUserTimeout time.Duration
	// TimeoutFatal makes a try that runs out of time (StartToCloseTimeout,
	// HeartbeatTimeout, or its step lease) fail the activity for good
	// (FAILED_FATAL) rather than be retried (FAILED_RETRYABLE).
	TimeoutFatal bool
}

type activityOptionsKey struct{}

// WithActivityOptions returns a child of ctx whose activities run with
// opts. It replaces, not merges, the options set higher up.
func WithActivityOptions(ctx Context, opts ActivityOptions) Context {
	if opts.RetryPolicy != nil {
		rp := *opts.RetryPolicy
		rp.NonRetryableErrorTypes = append([]string(nil), rp.NonRetryableErrorTypes...)
		opts.RetryPolicy = &rp // later changes by the caller do not leak in
	}
	opts.RequiredCapabilities = append([]string(nil), opts.RequiredCapabilities...)
	opts.DependsOn = append([]Future(nil), opts.DependsOn...)
	if opts.LabelSelector != nil {
		sel := make(map[string]string, len(opts.LabelSelector))
		for k, v := range opts.LabelSelector {
			sel[k] = v
		}
		opts.LabelSelector = sel
	}
	return WithValue(ctx, activityOptionsKey{}, opts)
}

// GetActivityOptions returns the activity options set on ctx, or the zero
// value.
func GetActivityOptions(ctx Context) ActivityOptions {
	opts, _ := ctx.Value(activityOptionsKey{}).(ActivityOptions)
	return opts
}
