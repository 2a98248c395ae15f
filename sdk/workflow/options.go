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
	return WithValue(ctx, activityOptionsKey{}, opts)
}

// GetActivityOptions returns the activity options set on ctx, or the zero
// value.
func GetActivityOptions(ctx Context) ActivityOptions {
	opts, _ := ctx.Value(activityOptionsKey{}).(ActivityOptions)
	return opts
}
