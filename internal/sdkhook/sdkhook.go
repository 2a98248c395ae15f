// Package sdkhook gives the worker and the client the parts of the SDK
// packages that workflow and activity code must not see.
//
// The SDK packages set these hooks in their init functions, so any program
// that imports the worker (which imports sdk/workflow) finds them set. This
// keeps the plumbing out of the SDK's godoc without moving the SDK's types
// out of the packages that document them.
package sdkhook

import (
	"log/slog"

	"github.com/heddlewf/heddle/internal/replay"
)

// WorkflowInfo is what the worker knows of a run when it starts its code;
// sdk/workflow turns it into the workflow.Info that GetInfo returns.
type WorkflowInfo struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	TaskQueue    string
	Attempt      int
	// Logger is what workflow.GetLogger writes through (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// Hooks set by sdk/workflow's init.
var (
	// NewEntry returns the replay.Entry that runs the workflow function fn.
	NewEntry func(fn any, info WorkflowInfo) replay.Entry
	// Query calls the query handler of the workflow x runs.
	Query func(x *replay.Execution, queryType string, args []byte) ([]byte, error)
	// EncodeFailure writes an error as a failure payload.
	EncodeFailure func(err error) []byte
	// DecodeFailure reads a failure payload as a *workflow.ApplicationError.
	DecodeFailure func(data []byte) error
)

// ActivityEnvKey is the context key under which the worker puts an
// activity's environment; sdk/activity reads it.
type ActivityEnvKey struct{}

// Failure types the worker and the engine write for ends that are not the
// activity's or workflow's own error.
const (
	// FailureCanceled is an activity or child that ended because it was
	// cancelled (or was cancelled before it started).
	FailureCanceled = "CanceledError"
	// FailureTimeout is an activity or workflow that ran out of time.
	FailureTimeout = "TimeoutError"
	// FailureAlreadyStarted is a child whose workflow id another open run
	// holds.
	FailureAlreadyStarted = "ChildWorkflowExecutionAlreadyStartedError"
)
