package workflow

import (
	"github.com/heddlewf/heddle/sdk/temporal"
)

// The errors and the retry policy live in sdk/temporal, as in Temporal's
// SDK; these names are kept for code written against heddle's earlier
// workflow package.
type (
	// ApplicationError is temporal.ApplicationError.
	ApplicationError = temporal.ApplicationError
	// ActivityError is temporal.ActivityError.
	ActivityError = temporal.ActivityError
	// ChildWorkflowError is temporal.ChildWorkflowExecutionError.
	ChildWorkflowError = temporal.ChildWorkflowExecutionError
	// RetryPolicy is temporal.RetryPolicy.
	RetryPolicy = temporal.RetryPolicy
	// BackoffKind is temporal.BackoffKind.
	BackoffKind = temporal.BackoffKind
)

// Backoff kinds (see temporal.BackoffKind).
const (
	BackoffExponential = temporal.BackoffExponential
	BackoffLinear      = temporal.BackoffLinear
	BackoffFixed       = temporal.BackoffFixed
)

// NewApplicationError returns an *ApplicationError with an explicit type
// (matched by RetryPolicy.NonRetryableErrorTypes) and retryability. It is
// heddle's older shape; temporal.NewApplicationError (retryable, with
// details) and temporal.NewNonRetryableApplicationError are Temporal's.
func NewApplicationError(message, errType string, nonRetryable bool) *ApplicationError {
	return temporal.NewApplicationErrorWithOptions(message, errType, temporal.ApplicationErrorOptions{NonRetryable: nonRetryable}).(*ApplicationError)
}
