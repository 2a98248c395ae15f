// Package sdkhook gives the worker and the client the parts of the SDK
// packages that workflow and activity code must not see: hooks, which the
// SDK packages set in their init functions; the options of workflow
// commands, from the workflow call to the worker (command.go); and the
// small types the SDK's packages share (WorkflowInfo, TaskToken, the
// session names, …). This keeps the plumbing out of the SDK's godoc without
// moving the SDK's types out of the packages that document them.
//
// A hook is typed as far as its types can be named here without an import
// cycle; intercept.go says why the rest are any. A hook is set before
// anything reads it: every package that reads one imports the package that
// sets it, so Go initializes the setter first, and a missing hook is never
// a nil func called at run time. TestHooksAreSetBeforeTheyAreRead checks
// this of every hook. The one exception is InterceptWorkflow, which
// sdk/workflow cannot import the setter of and reports as an error when it
// is not set.
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
	// (none: the workflow functions call the implementation directly),
	// which InterceptWorkflow checks; any, as that type is declared in
	// sdk/interceptor, which imports sdk/workflow.
	Interceptors []any
}

// Hooks set by sdk/workflow's init, read by sdk/worker.
var (
	// NewEntry returns the replay.Entry that runs the workflow function fn
	// (a user's function, registered as any, of a signature
	// RegisterWorkflow checked).
	NewEntry func(fn any, info WorkflowInfo) replay.Entry
	// Query calls the query handler of the workflow x runs.
	Query func(x *replay.Execution, queryType string, args []byte) ([]byte, error)
	// ValidateUpdate decides an update request (a workflow.UpdateRequest)
	// for the workflow x runs, writing nothing, and returns the decision (a
	// workflow.UpdateOutcome).
	ValidateUpdate func(x *replay.Execution, request []byte) ([]byte, error)
	// SignalsRead returns the names of the signals the workflow x runs
	// reads (its signal channels, and engine.UpdateSignalName when it has
	// update handlers), sorted; a wait names them, so that people see
	// what the run waits for.
	SignalsRead func(x *replay.Execution) []string
)

// Hooks set by sdk/temporal's init: the failure format and the typed
// errors sdk/temporal exports no constructor for. Read by every SDK
// package (all import sdk/temporal), internal/temporalhistory and
// cmd/heddle.
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
	// activity; value is what it panicked with.
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
