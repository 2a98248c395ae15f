// Package interceptor wraps a worker's and a client's calls in chains of
// user code, as Temporal's interceptor package does.
//
// A worker built with worker.Options.Interceptors asks each
// WorkerInterceptor, for every workflow run and every activity try, for an
// inbound interceptor around the next one; the inbound chain's Init builds
// the outbound chain the same way. Calls into workflow code (the run itself,
// signals, queries, updates) go down the inbound chain to the workflow
// function; calls the workflow code makes (ExecuteActivity, NewTimer,
// GetLogger…) go down the outbound chain to the implementation. Activities
// work the same, and a client built with client.Options.Interceptors sends
// its calls down a ClientOutboundInterceptor chain.
//
// Embed the …Base type of an interface and override only the methods that
// matter: the Base forwards every call to Next.
//
// Workflow interceptors run inside workflow code, so they are bound by its
// rules: they must be deterministic, must not block except through workflow
// calls, and they run again, in the same order, each time the run is
// replayed (workflow.IsReplaying tells them so). A worker without
// interceptors pays nothing for the chains: the workflow and activity
// functions call their implementation directly.
package interceptor

import (
	"context"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// WorkerInterceptor makes the interceptors of a worker's workflow runs and
// activity tries. The worker calls it from many goroutines at once (one per
// activity try and per workflow turn), so it must be safe for that; the
// interceptors it returns serve one run or one try.
type WorkerInterceptor interface {
	// InterceptActivity returns the inbound interceptor of one activity
	// try, around next. ctx is the try's context.
	InterceptActivity(ctx context.Context, next ActivityInboundInterceptor) ActivityInboundInterceptor
	// InterceptWorkflow returns the inbound interceptor of one workflow
	// execution, around next. It is called in workflow code, at the start
	// of the run and again at the start of each replay of it.
	InterceptWorkflow(ctx workflow.Context, next WorkflowInboundInterceptor) WorkflowInboundInterceptor

	mustEmbedWorkerInterceptorBase()
}

// ActivityInboundInterceptor receives the calls into an activity try.
type ActivityInboundInterceptor interface {
	// Init is called once, before ExecuteActivity, with the next outbound
	// interceptor; an implementation wraps it and passes its own on to its
	// Next's Init. An error fails the try.
	Init(outbound ActivityOutboundInterceptor) error
	// ExecuteActivity runs the activity function with in.Args and returns
	// its result (nil for a function returning only error).
	ExecuteActivity(ctx context.Context, in *ExecuteActivityInput) (any, error)

	mustEmbedActivityInboundInterceptorBase()
}

// ExecuteActivityInput is the input of ActivityInboundInterceptor's
// ExecuteActivity: the decoded arguments, which an interceptor may replace
// with values assignable to the function's parameters.
type ExecuteActivityInput struct {
	Args []any
}

// ActivityOutboundInterceptor receives the calls an activity makes to
// package activity.
type ActivityOutboundInterceptor interface {
	GetInfo(ctx context.Context) activity.Info
	// GetLogger is what activity.GetLogger returns (as a *slog.Logger
	// writing to the logger returned here).
	GetLogger(ctx context.Context) log.Logger
	RecordHeartbeat(ctx context.Context, details ...any)
	HasHeartbeatDetails(ctx context.Context) bool
	GetHeartbeatDetails(ctx context.Context, d ...any) error
	GetWorkerStopChannel(ctx context.Context) <-chan struct{}

	mustEmbedActivityOutboundInterceptorBase()
}

// WorkflowInboundInterceptor receives the calls into a workflow run. All of
// its methods run as workflow code: deterministically, and again on every
// replay.
type WorkflowInboundInterceptor interface {
	// Init is called once per run (and replay), before ExecuteWorkflow,
	// with the next outbound interceptor; an implementation wraps it and
	// passes its own on to its Next's Init. An error fails the run.
	Init(outbound WorkflowOutboundInterceptor) error
	// ExecuteWorkflow runs the workflow function with in.Args.
	ExecuteWorkflow(ctx workflow.Context, in *ExecuteWorkflowInput) (any, error)
	// HandleSignal delivers a signal to its channel. Not calling Next drops
	// the signal; an error drops it too and is logged (heddle has no
	// workflow task to fail, where Temporal fails the task).
	HandleSignal(ctx workflow.Context, in *HandleSignalInput) error
	// HandleQuery answers a query. It must not block or change state.
	HandleQuery(ctx workflow.Context, in *HandleQueryInput) (any, error)
	// ValidateUpdate runs an update's validator; an error rejects the
	// update. It runs once, live: a replay keeps the recorded decision.
	ValidateUpdate(ctx workflow.Context, in *UpdateInput) error
	// ExecuteUpdate runs an accepted update's handler.
	ExecuteUpdate(ctx workflow.Context, in *UpdateInput) (any, error)

	mustEmbedWorkflowInboundInterceptorBase()
}

// ExecuteWorkflowInput is the input of ExecuteWorkflow: the decoded
// arguments of the workflow function.
type ExecuteWorkflowInput struct {
	Args []any
}

// HandleSignalInput is the input of HandleSignal. Arg holds the signal's
// encoded argument; an interceptor that replaces it must make the new one
// with converter.NewEncodedValues (Temporal's is a *commonpb.Payloads).
type HandleSignalInput struct {
	SignalName string
	Arg        converter.EncodedValues
}

// HandleQueryInput is the input of HandleQuery: the query type and its
// arguments, decoded for the handler (none when no handler is set).
type HandleQueryInput struct {
	QueryType string
	Args      []any
}

// UpdateInput is the input of ValidateUpdate and ExecuteUpdate.
type UpdateInput struct {
	Name string
	Args []any
}

// WorkflowOutboundInterceptor receives the calls workflow code makes to
// package workflow. Each method does what the workflow function of the same
// name does; activities and child workflows are named by type.
type WorkflowOutboundInterceptor interface {
	Go(ctx workflow.Context, name string, f func(ctx workflow.Context)) workflow.Context
	Await(ctx workflow.Context, condition func() bool) error
	AwaitWithTimeout(ctx workflow.Context, timeout time.Duration, condition func() bool) (bool, error)
	ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future
	ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future
	ExecuteChildWorkflow(ctx workflow.Context, childWorkflowType string, args ...any) workflow.ChildWorkflowFuture
	GetInfo(ctx workflow.Context) *workflow.Info
	GetLogger(ctx workflow.Context) log.Logger
	Now(ctx workflow.Context) time.Time
	NewTimer(ctx workflow.Context, d time.Duration) workflow.Future
	Sleep(ctx workflow.Context, d time.Duration) error
	RequestCancelExternalWorkflow(ctx workflow.Context, workflowID, runID string) workflow.Future
	SignalExternalWorkflow(ctx workflow.Context, workflowID, runID, signalName string, arg any) workflow.Future
	SignalChildWorkflow(ctx workflow.Context, workflowID, signalName string, arg any) workflow.Future
	GetSignalChannel(ctx workflow.Context, signalName string) workflow.ReceiveChannel
	SideEffect(ctx workflow.Context, f func(ctx workflow.Context) any) converter.EncodedValue
	MutableSideEffect(ctx workflow.Context, id string, f func(ctx workflow.Context) any, equals func(a, b any) bool) converter.EncodedValue
	GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version
	SetQueryHandler(ctx workflow.Context, queryType string, handler any) error
	SetUpdateHandler(ctx workflow.Context, updateName string, handler any, opts workflow.UpdateHandlerOptions) error
	IsReplaying(ctx workflow.Context) bool
	HasLastCompletionResult(ctx workflow.Context) bool
	GetLastCompletionResult(ctx workflow.Context, d ...any) error
	NewContinueAsNewError(ctx workflow.Context, wfn any, args ...any) error

	mustEmbedWorkflowOutboundInterceptorBase()
}
