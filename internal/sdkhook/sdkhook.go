// Package sdkhook gives the worker and the client the parts of the SDK
// packages that workflow and activity code must not see.
//
// The SDK packages set these hooks in their init functions, so any program
// that imports the worker (which imports sdk/workflow) finds them set. This
// keeps the plumbing out of the SDK's godoc without moving the SDK's types
// out of the packages that document them.
package sdkhook

import (
	"context"
	"errors"
	"log/slog"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// ErrTypeNotRegistered: a worker asked to answer a query for a run whose
// workflow type it has no code for (another worker of the queue may).
var ErrTypeNotRegistered = errors.New("worker: workflow type not registered")

// Querier answers queries with workflow code; a worker is one.
type Querier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// ClientBackend is what sdk/worker needs of a client made by sdk/client:
// the service it talks to, its defaults for workers, and the registration
// of a worker as the answerer of queries for its queue.
type ClientBackend interface {
	Service() engine.Service
	WorkerDefaults() (identity string, logger *slog.Logger)
	// AddQuerier adds q for queue; the function returned removes it.
	AddQuerier(queue string, q Querier) (remove func())
}

// WorkflowInfo is what the worker knows of a run when it starts its code;
// sdk/workflow turns it into the workflow.Info that GetInfo returns.
type WorkflowInfo struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	TaskQueue    string
	// Attempt numbers the runs of a workflow retry chain from 1.
	Attempt int32
	// ParentWorkflowID and ParentRunID name a child's parent ("" for a
	// workflow started by a client).
	ParentWorkflowID string
	ParentRunID      string
	// CronSchedule is the cron line of a cron chain's run ("" otherwise).
	CronSchedule string
	// Logger is what workflow.GetLogger writes through (nil:
	// slog.Default()).
	Logger *slog.Logger
	// Interceptors are the worker's interceptor.WorkerInterceptor values
	// (none: the workflow functions call the implementation directly).
	Interceptors []any
}

// Hooks set by sdk/workflow's init.
var (
	// NewEntry returns the replay.Entry that runs the workflow function fn.
	NewEntry func(fn any, info WorkflowInfo) replay.Entry
	// Query calls the query handler of the workflow x runs.
	Query func(x *replay.Execution, queryType string, args []byte) ([]byte, error)
	// ValidateUpdate decides an update request (a workflow.UpdateRequest)
	// for the workflow x runs, writing nothing, and returns the decision (a
	// workflow.UpdateOutcome).
	ValidateUpdate func(x *replay.Execution, request []byte) ([]byte, error)
	// FutureStep returns the step of the activity whose future f is (a
	// workflow.Future from ExecuteActivity), or "".
	FutureStep func(f any) string
)

// Hooks set by sdk/temporal's init: the failure format and the typed
// errors sdk/temporal exports no constructor for.
var (
	// EncodeFailure writes an error and its chain as a failure payload.
	EncodeFailure func(err error) []byte
	// DecodeFailure reads a failure payload as the sdk/temporal errors it
	// records (*temporal.ApplicationError, *temporal.CanceledError, ...).
	DecodeFailure func(data []byte) error
	// NewTimeoutError returns a *temporal.TimeoutError with a message of
	// the worker's and the last heartbeat's details (Encode's JSON, or
	// nil).
	NewTimeoutError func(msg string, tt engine.TimeoutType, details []byte) error
	// NewPanicError returns a *temporal.PanicError of a panicking
	// activity.
	NewPanicError func(value any, stack string) error
	// NewTerminatedError returns a *temporal.TerminatedError.
	NewTerminatedError func(msg string) error
	// FailureToStored turns a failure payload in heddle's own form (what
	// EncodeFailure writes) into the form fc stores (a
	// converter.FailureConverter; nil or the default: data as it is).
	FailureToStored func(fc converter.FailureConverter, data []byte) []byte
	// FailureFromStored reverses FailureToStored: a failure stored by fc
	// back into heddle's own form.
	FailureFromStored func(fc converter.FailureConverter, data []byte) []byte
)

// ErrorTypeSentinels maps sentinel errors of heddle's packages to the
// failure type they match: errors.Is(err, sentinel) is true for a
// *temporal.ApplicationError of that type (workflow.ErrReplan matches
// "ReplanError"). Written only by package init functions, read afterwards
// from any goroutine.
var ErrorTypeSentinels = map[error]string{}

// LocalActivity is the Options of a local activity's command: the
// workflow.ActivityOptions the worker enforces, and the function to call
// (nil: the activity's registered function).
type LocalActivity struct {
	Options any
	Fn      any
}

// External is the Options of an external signal or cancel command: the
// target run (RunID "" is the workflow id's current run). A signal's name
// is the command's Name and its argument the command's Input.
type External struct {
	WorkflowID string
	RunID      string
}

// ChildStarted is the payload of a child_scheduled event: the child's
// workflow id and run id.
type ChildStarted struct {
	WorkflowID string `json:"workflowID"`
	RunID      string `json:"runID"`
}

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
