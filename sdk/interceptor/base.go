package interceptor

import (
	"context"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// WorkerInterceptorBase is a WorkerInterceptor that adds nothing: it
// returns next itself. Embed it and override what you need.
type WorkerInterceptorBase struct{}

var _ WorkerInterceptor = &WorkerInterceptorBase{}

func (*WorkerInterceptorBase) InterceptActivity(_ context.Context, next ActivityInboundInterceptor) ActivityInboundInterceptor {
	return next
}

func (*WorkerInterceptorBase) InterceptWorkflow(_ workflow.Context, next WorkflowInboundInterceptor) WorkflowInboundInterceptor {
	return next
}

func (*WorkerInterceptorBase) mustEmbedWorkerInterceptorBase() {}

// ActivityInboundInterceptorBase forwards every call to Next.
type ActivityInboundInterceptorBase struct {
	Next ActivityInboundInterceptor
}

var _ ActivityInboundInterceptor = &ActivityInboundInterceptorBase{}

func (a *ActivityInboundInterceptorBase) Init(outbound ActivityOutboundInterceptor) error {
	return a.Next.Init(outbound)
}

func (a *ActivityInboundInterceptorBase) ExecuteActivity(ctx context.Context, in *ExecuteActivityInput) (any, error) {
	return a.Next.ExecuteActivity(ctx, in)
}

func (*ActivityInboundInterceptorBase) mustEmbedActivityInboundInterceptorBase() {}

// ActivityOutboundInterceptorBase forwards every call to Next.
type ActivityOutboundInterceptorBase struct {
	Next ActivityOutboundInterceptor
}

var _ ActivityOutboundInterceptor = &ActivityOutboundInterceptorBase{}

func (a *ActivityOutboundInterceptorBase) GetInfo(ctx context.Context) activity.Info {
	return a.Next.GetInfo(ctx)
}

func (a *ActivityOutboundInterceptorBase) GetLogger(ctx context.Context) log.Logger {
	return a.Next.GetLogger(ctx)
}

func (a *ActivityOutboundInterceptorBase) RecordHeartbeat(ctx context.Context, details ...any) {
	a.Next.RecordHeartbeat(ctx, details...)
}

func (a *ActivityOutboundInterceptorBase) HasHeartbeatDetails(ctx context.Context) bool {
	return a.Next.HasHeartbeatDetails(ctx)
}

func (a *ActivityOutboundInterceptorBase) GetHeartbeatDetails(ctx context.Context, d ...any) error {
	return a.Next.GetHeartbeatDetails(ctx, d...)
}

func (a *ActivityOutboundInterceptorBase) GetWorkerStopChannel(ctx context.Context) <-chan struct{} {
	return a.Next.GetWorkerStopChannel(ctx)
}

func (*ActivityOutboundInterceptorBase) mustEmbedActivityOutboundInterceptorBase() {}

// WorkflowInboundInterceptorBase forwards every call to Next.
type WorkflowInboundInterceptorBase struct {
	Next WorkflowInboundInterceptor
}

var _ WorkflowInboundInterceptor = &WorkflowInboundInterceptorBase{}

func (w *WorkflowInboundInterceptorBase) Init(outbound WorkflowOutboundInterceptor) error {
	return w.Next.Init(outbound)
}

func (w *WorkflowInboundInterceptorBase) ExecuteWorkflow(ctx workflow.Context, in *ExecuteWorkflowInput) (any, error) {
	return w.Next.ExecuteWorkflow(ctx, in)
}

func (w *WorkflowInboundInterceptorBase) HandleSignal(ctx workflow.Context, in *HandleSignalInput) error {
	return w.Next.HandleSignal(ctx, in)
}

func (w *WorkflowInboundInterceptorBase) HandleQuery(ctx workflow.Context, in *HandleQueryInput) (any, error) {
	return w.Next.HandleQuery(ctx, in)
}

func (w *WorkflowInboundInterceptorBase) ValidateUpdate(ctx workflow.Context, in *UpdateInput) error {
	return w.Next.ValidateUpdate(ctx, in)
}

func (w *WorkflowInboundInterceptorBase) ExecuteUpdate(ctx workflow.Context, in *UpdateInput) (any, error) {
	return w.Next.ExecuteUpdate(ctx, in)
}

func (*WorkflowInboundInterceptorBase) mustEmbedWorkflowInboundInterceptorBase() {}

// WorkflowOutboundInterceptorBase forwards every call to Next.
type WorkflowOutboundInterceptorBase struct {
	Next WorkflowOutboundInterceptor
}

var _ WorkflowOutboundInterceptor = &WorkflowOutboundInterceptorBase{}

func (w *WorkflowOutboundInterceptorBase) Go(ctx workflow.Context, name string, f func(ctx workflow.Context)) workflow.Context {
	return w.Next.Go(ctx, name, f)
}

func (w *WorkflowOutboundInterceptorBase) Await(ctx workflow.Context, condition func() bool) error {
	return w.Next.Await(ctx, condition)
}

func (w *WorkflowOutboundInterceptorBase) AwaitWithTimeout(ctx workflow.Context, timeout time.Duration, condition func() bool) (bool, error) {
	return w.Next.AwaitWithTimeout(ctx, timeout, condition)
}

func (w *WorkflowOutboundInterceptorBase) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return w.Next.ExecuteActivity(ctx, activityType, args...)
}

func (w *WorkflowOutboundInterceptorBase) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return w.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (w *WorkflowOutboundInterceptorBase) ExecuteChildWorkflow(ctx workflow.Context, childWorkflowType string, args ...any) workflow.ChildWorkflowFuture {
	return w.Next.ExecuteChildWorkflow(ctx, childWorkflowType, args...)
}

func (w *WorkflowOutboundInterceptorBase) GetInfo(ctx workflow.Context) *workflow.Info {
	return w.Next.GetInfo(ctx)
}

func (w *WorkflowOutboundInterceptorBase) GetLogger(ctx workflow.Context) log.Logger {
	return w.Next.GetLogger(ctx)
}

func (w *WorkflowOutboundInterceptorBase) Now(ctx workflow.Context) time.Time {
	return w.Next.Now(ctx)
}

func (w *WorkflowOutboundInterceptorBase) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	return w.Next.NewTimer(ctx, d)
}

func (w *WorkflowOutboundInterceptorBase) Sleep(ctx workflow.Context, d time.Duration) error {
	return w.Next.Sleep(ctx, d)
}

func (w *WorkflowOutboundInterceptorBase) RequestCancelExternalWorkflow(ctx workflow.Context, workflowID, runID string) workflow.Future {
	return w.Next.RequestCancelExternalWorkflow(ctx, workflowID, runID)
}

func (w *WorkflowOutboundInterceptorBase) SignalExternalWorkflow(ctx workflow.Context, workflowID, runID, signalName string, arg any) workflow.Future {
	return w.Next.SignalExternalWorkflow(ctx, workflowID, runID, signalName, arg)
}

func (w *WorkflowOutboundInterceptorBase) SignalChildWorkflow(ctx workflow.Context, workflowID, signalName string, arg any) workflow.Future {
	return w.Next.SignalChildWorkflow(ctx, workflowID, signalName, arg)
}

func (w *WorkflowOutboundInterceptorBase) GetSignalChannel(ctx workflow.Context, signalName string) workflow.ReceiveChannel {
	return w.Next.GetSignalChannel(ctx, signalName)
}

func (w *WorkflowOutboundInterceptorBase) SideEffect(ctx workflow.Context, f func(ctx workflow.Context) any) converter.EncodedValue {
	return w.Next.SideEffect(ctx, f)
}

func (w *WorkflowOutboundInterceptorBase) MutableSideEffect(ctx workflow.Context, id string, f func(ctx workflow.Context) any, equals func(a, b any) bool) converter.EncodedValue {
	return w.Next.MutableSideEffect(ctx, id, f, equals)
}

func (w *WorkflowOutboundInterceptorBase) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	return w.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
}

func (w *WorkflowOutboundInterceptorBase) SetQueryHandler(ctx workflow.Context, queryType string, handler any) error {
	return w.Next.SetQueryHandler(ctx, queryType, handler)
}

func (w *WorkflowOutboundInterceptorBase) SetUpdateHandler(ctx workflow.Context, updateName string, handler any, opts workflow.UpdateHandlerOptions) error {
	return w.Next.SetUpdateHandler(ctx, updateName, handler, opts)
}

func (w *WorkflowOutboundInterceptorBase) IsReplaying(ctx workflow.Context) bool {
	return w.Next.IsReplaying(ctx)
}

func (w *WorkflowOutboundInterceptorBase) HasLastCompletionResult(ctx workflow.Context) bool {
	return w.Next.HasLastCompletionResult(ctx)
}

func (w *WorkflowOutboundInterceptorBase) GetLastCompletionResult(ctx workflow.Context, d ...any) error {
	return w.Next.GetLastCompletionResult(ctx, d...)
}

func (w *WorkflowOutboundInterceptorBase) NewContinueAsNewError(ctx workflow.Context, wfn any, args ...any) error {
	return w.Next.NewContinueAsNewError(ctx, wfn, args...)
}

func (*WorkflowOutboundInterceptorBase) mustEmbedWorkflowOutboundInterceptorBase() {}
