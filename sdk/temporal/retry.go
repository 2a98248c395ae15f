package temporal

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// BackoffKind chooses how the delay between attempts grows. Temporal has
// only the exponential kind; the other two are heddle's.
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
	// DefaultMaximumIntervalFactor: a zero MaximumInterval is this many
	// times InitialInterval, as in Temporal.
	DefaultMaximumIntervalFactor = 100
)

// RetryPolicy says how the failed attempts of an activity, or the failed
// runs of a workflow, are retried. Zero fields take Temporal's defaults:
// InitialInterval 1s, BackoffCoefficient 2, MaximumInterval 100 ×
// InitialInterval, MaximumAttempts 0 meaning unlimited (an activity's
// ScheduleToCloseTimeout then bounds the retries). An error whose type
// (ApplicationError.Type, or for any other error its Go type name, see
// ErrorType) is listed in NonRetryableErrorTypes, or that is marked
// non-retryable, is not retried. Backoff is heddle's addition.
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
		maxI = DefaultMaximumIntervalFactor * initial
		if maxI/DefaultMaximumIntervalFactor != initial { // overflowed
			maxI = math.MaxInt64
		}
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
	return p == nil || !slices.Contains(p.NonRetryableErrorTypes, errType)
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
		return fmt.Errorf("temporal: invalid retry policy: %w", err)
	}
	return nil
}

// IsRetryable reports whether err may be retried under a policy listing
// nonRetryableTypes, with the rules of Temporal's SDK: a cancellation, a
// termination or a workflow's panic never is; a timeout is only when it is
// a start-to-close or heartbeat timeout; otherwise the first
// *ApplicationError in err's chain decides (not when marked non-retryable
// or of a listed type), and any other error is retryable unless its Go
// type name (ErrorType) is listed. nil is not retryable: nothing failed.
func IsRetryable(err error, nonRetryableTypes []string) bool {
	if err == nil {
		return false
	}
	var terminated *TerminatedError
	var canceled *CanceledError
	if errors.As(err, &terminated) || errors.As(err, &canceled) {
		return false
	}
	var timeout *TimeoutError
	if errors.As(err, &timeout) {
		return timeout.timeoutType == TimeoutTypeStartToClose || timeout.timeoutType == TimeoutTypeHeartbeat
	}
	var app *ApplicationError
	if errors.As(err, &app) {
		return !app.nonRetryable && !slices.Contains(nonRetryableTypes, app.errType)
	}
	return !slices.Contains(nonRetryableTypes, ErrorType(err))
}
