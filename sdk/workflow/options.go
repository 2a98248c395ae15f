package workflow

import (
	"errors"
	"fmt"
	"math"
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

// BackoffKind chooses how the delay between attempts grows.
type BackoffKind uint8

// Backoff kinds. The zero value is exponential, as in Temporal.
const (
	// BackoffExponential waits InitialInterval × BackoffCoefficient^n
	// before retry n (n = 0 for the first retry).
	BackoffExponential BackoffKind = iota
	// BackoffLinear waits InitialInterval × (n+1) before retry n.
	BackoffLinear
	// BackoffFixed always waits InitialInterval.
	BackoffFixed
)

func (k BackoffKind) String() string {
	switch k {
	case BackoffExponential:
		return "exponential"
	case BackoffLinear:
		return "linear"
	case BackoffFixed:
		return "fixed"
	}
	return fmt.Sprintf("BackoffKind(%d)", uint8(k))
}

// Retry policy defaults, used for the zero value of a field.
const (
	DefaultInitialInterval    = time.Second
	DefaultBackoffCoefficient = 2.0
	DefaultMaximumInterval    = 30 * time.Second
)

// RetryPolicy says how an activity's failed attempts are retried. Zero
// fields take the defaults: InitialInterval 1s, BackoffCoefficient 2,
// MaximumInterval 30s (but never below InitialInterval), MaximumAttempts 0
// meaning unlimited (as in Temporal; ScheduleToCloseTimeout then bounds the
// retries). An error whose type (ApplicationError.Type, or the Go type
// name, see encodeFailure) is listed in NonRetryableErrorTypes, or that is
// marked non-retryable, is not retried.
type RetryPolicy struct {
	InitialInterval        time.Duration
	BackoffCoefficient     float64
	MaximumInterval        time.Duration
	MaximumAttempts        int32
	NonRetryableErrorTypes []string
	Backoff                BackoffKind
}

// Delay returns how long to wait before the next attempt after attempt
// number attempt (counted from 1) failed: retry n = attempt-1 waits
//
//	exponential: InitialInterval × BackoffCoefficient^n
//	linear:      InitialInterval × (n+1)
//	fixed:       InitialInterval
//
// capped at MaximumInterval. An attempt below 1 counts as 1. A nil policy
// uses the defaults.
func (p *RetryPolicy) Delay(attempt int) time.Duration {
	var q RetryPolicy
	if p != nil {
		q = *p
	}
	initial, coef, maxI := q.InitialInterval, q.BackoffCoefficient, q.MaximumInterval
	if initial <= 0 {
		initial = DefaultInitialInterval
	}
	if coef <= 0 {
		coef = DefaultBackoffCoefficient
	}
	if maxI <= 0 {
		maxI = max(DefaultMaximumInterval, initial)
	}
	n := max(attempt, 1) - 1
	var d float64
	switch q.Backoff {
	case BackoffLinear:
		d = float64(initial) * float64(n+1)
	case BackoffFixed:
		d = float64(initial)
	default:
		d = float64(initial) * math.Pow(coef, float64(n))
	}
	if math.IsNaN(d) || d >= float64(maxI) {
		return maxI
	}
	return time.Duration(d)
}

// HasAttemptsLeft reports whether attempt number attempt (counted from 1)
// may be followed by another under the policy's MaximumAttempts.
func (p *RetryPolicy) HasAttemptsLeft(attempt int) bool {
	return p == nil || p.MaximumAttempts == 0 || int64(attempt) < int64(p.MaximumAttempts)
}

// IsRetryableType reports whether an error of type errType may be retried.
func (p *RetryPolicy) IsRetryableType(errType string) bool {
	if p == nil {
		return true
	}
	for _, t := range p.NonRetryableErrorTypes {
		if t == errType {
			return false
		}
	}
	return true
}

// Validate reports a policy that cannot be applied.
func (p *RetryPolicy) Validate() error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.InitialInterval < 0 {
		errs = append(errs, fmt.Errorf("InitialInterval %v is negative", p.InitialInterval))
	}
	if p.MaximumInterval < 0 {
		errs = append(errs, fmt.Errorf("MaximumInterval %v is negative", p.MaximumInterval))
	}
	if p.BackoffCoefficient != 0 && (p.BackoffCoefficient < 1 || math.IsNaN(p.BackoffCoefficient) || math.IsInf(p.BackoffCoefficient, 0)) {
		errs = append(errs, fmt.Errorf("BackoffCoefficient %v must be at least 1 (or 0 for the default)", p.BackoffCoefficient))
	}
	if p.MaximumAttempts < 0 {
		errs = append(errs, fmt.Errorf("MaximumAttempts %d is negative", p.MaximumAttempts))
	}
	if p.MaximumInterval > 0 && p.InitialInterval > p.MaximumInterval {
		errs = append(errs, fmt.Errorf("MaximumInterval %v is below InitialInterval %v", p.MaximumInterval, p.InitialInterval))
	}
	if p.Backoff > BackoffFixed {
		errs = append(errs, fmt.Errorf("unknown backoff %v", p.Backoff))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workflow: invalid retry policy: %w", err)
	}
	return nil
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
