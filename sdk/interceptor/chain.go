package interceptor

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The chains are built here, where Temporal's types are, and handed to
// sdk/workflow and sdk/activity through internal/sdkhook: those packages
// cannot import this one, so they see the chains through method sets of
// their own (Go interfaces match by method set). The end of a workflow's
// outbound chain comes with its inbound core (workflowCore.Outbound); that
// of an activity's from sdk/activity (sdkhook.ActivityOutboundRoot).

func init() {
	sdkhook.InterceptWorkflow = interceptWorkflow
	sdkhook.InterceptActivity = interceptActivity
}

// workflowCore is sdk/workflow's end of a run's inbound chain.
type workflowCore interface {
	SetOutbound(o any) error
	Outbound() any
	ExecuteWorkflow(ctx workflow.Context, args []any) (any, error)
	HandleSignal(ctx workflow.Context, signalName string, arg converter.EncodedValues) error
	HandleQuery(ctx workflow.Context, queryType string, args []any) (any, error)
	ValidateUpdate(ctx workflow.Context, updateName string, args []any) error
	ExecuteUpdate(ctx workflow.Context, updateName string, args []any) (any, error)
}

// workflowOutboundCalls is WorkflowOutboundInterceptor without its embed
// marker: what sdk/workflow's end of the outbound chain has.
type workflowOutboundCalls interface {
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
}

// rootWorkflowOutbound ends the outbound chain at sdk/workflow's
// implementation.
type rootWorkflowOutbound struct{ workflowOutboundCalls }

func (rootWorkflowOutbound) mustEmbedWorkflowOutboundInterceptorBase() {}

// rootWorkflowInbound ends the inbound chain at sdk/workflow's
// implementation.
type rootWorkflowInbound struct{ core workflowCore }

func (r *rootWorkflowInbound) Init(outbound WorkflowOutboundInterceptor) error {
	return r.core.SetOutbound(outbound)
}

func (r *rootWorkflowInbound) ExecuteWorkflow(ctx workflow.Context, in *ExecuteWorkflowInput) (any, error) {
	return r.core.ExecuteWorkflow(ctx, in.Args)
}

func (r *rootWorkflowInbound) HandleSignal(ctx workflow.Context, in *HandleSignalInput) error {
	return r.core.HandleSignal(ctx, in.SignalName, in.Arg)
}

func (r *rootWorkflowInbound) HandleQuery(ctx workflow.Context, in *HandleQueryInput) (any, error) {
	return r.core.HandleQuery(ctx, in.QueryType, in.Args)
}

func (r *rootWorkflowInbound) ValidateUpdate(ctx workflow.Context, in *UpdateInput) error {
	return r.core.ValidateUpdate(ctx, in.Name, in.Args)
}

func (r *rootWorkflowInbound) ExecuteUpdate(ctx workflow.Context, in *UpdateInput) (any, error) {
	return r.core.ExecuteUpdate(ctx, in.Name, in.Args)
}

func (*rootWorkflowInbound) mustEmbedWorkflowInboundInterceptorBase() {}

// workflowInbound is the top of the inbound chain as sdk/workflow calls it:
// plain arguments in, this package's inputs made here.
type workflowInbound struct{ in WorkflowInboundInterceptor }

func (w workflowInbound) ExecuteWorkflow(ctx workflow.Context, args []any) (any, error) {
	return w.in.ExecuteWorkflow(ctx, &ExecuteWorkflowInput{Args: args})
}

func (w workflowInbound) HandleSignal(ctx workflow.Context, signalName string, arg converter.EncodedValues) error {
	return w.in.HandleSignal(ctx, &HandleSignalInput{SignalName: signalName, Arg: arg})
}

func (w workflowInbound) HandleQuery(ctx workflow.Context, queryType string, args []any) (any, error) {
	return w.in.HandleQuery(ctx, &HandleQueryInput{QueryType: queryType, Args: args})
}

func (w workflowInbound) ValidateUpdate(ctx workflow.Context, updateName string, args []any) error {
	return w.in.ValidateUpdate(ctx, &UpdateInput{Name: updateName, Args: args})
}

func (w workflowInbound) ExecuteUpdate(ctx workflow.Context, updateName string, args []any) (any, error) {
	return w.in.ExecuteUpdate(ctx, &UpdateInput{Name: updateName, Args: args})
}

// workerInterceptors checks that each of list is a WorkerInterceptor.
func workerInterceptors(list []any) ([]WorkerInterceptor, error) {
	out := make([]WorkerInterceptor, len(list))
	for i, v := range list {
		wi, ok := v.(WorkerInterceptor)
		if !ok || wi == nil {
			return nil, fmt.Errorf("interceptor: worker interceptor %d is a %T, not an interceptor.WorkerInterceptor", i, v)
		}
		out[i] = wi
	}
	return out, nil
}

// interceptWorkflow builds a run's chains. The first interceptor of the
// list is the outermost: it sees each inbound call first and each outbound
// call first, as in Temporal.
func interceptWorkflow(ctx any, list []any, core any) (any, error) {
	wctx, ok := ctx.(workflow.Context)
	c, ok2 := core.(workflowCore)
	var root workflowOutboundCalls
	if ok2 {
		root, ok2 = c.Outbound().(workflowOutboundCalls)
	}
	if !ok || !ok2 {
		return nil, fmt.Errorf("interceptor: sdk/workflow and sdk/interceptor do not match (%T, %T)", ctx, core)
	}
	wis, err := workerInterceptors(list)
	if err != nil {
		return nil, err
	}
	var in WorkflowInboundInterceptor = &rootWorkflowInbound{core: c}
	for i := len(wis) - 1; i >= 0; i-- {
		in = wis[i].InterceptWorkflow(wctx, in)
	}
	if err := in.Init(rootWorkflowOutbound{root}); err != nil {
		return nil, err
	}
	return workflowInbound{in}, nil
}

// activityOutboundCalls is ActivityOutboundInterceptor without its embed
// marker.
type activityOutboundCalls interface {
	GetInfo(ctx context.Context) activity.Info
	GetLogger(ctx context.Context) log.Logger
	RecordHeartbeat(ctx context.Context, details ...any)
	HasHeartbeatDetails(ctx context.Context) bool
	GetHeartbeatDetails(ctx context.Context, d ...any) error
	GetWorkerStopChannel(ctx context.Context) <-chan struct{}
}

type rootActivityOutbound struct{ activityOutboundCalls }

func (rootActivityOutbound) mustEmbedActivityOutboundInterceptorBase() {}

// rootActivityInbound ends an activity try's inbound chain; Init keeps the
// outbound chain for the worker to put in the activity's context.
type rootActivityInbound struct {
	core sdkhook.ActivityCall
	out  ActivityOutboundInterceptor
}

func (r *rootActivityInbound) Init(outbound ActivityOutboundInterceptor) error {
	r.out = outbound
	return nil
}

func (r *rootActivityInbound) ExecuteActivity(ctx context.Context, in *ExecuteActivityInput) (any, error) {
	return r.core.ExecuteActivity(ctx, in.Args)
}

func (*rootActivityInbound) mustEmbedActivityInboundInterceptorBase() {}

// activityInbound is the top of the inbound chain as the worker calls it.
type activityInbound struct{ in ActivityInboundInterceptor }

var _ sdkhook.ActivityCall = activityInbound{}

func (a activityInbound) ExecuteActivity(ctx context.Context, args []any) (any, error) {
	return a.in.ExecuteActivity(ctx, &ExecuteActivityInput{Args: args})
}

func interceptActivity(ctx context.Context, list []any, call sdkhook.ActivityCall) (sdkhook.ActivityCall, any, error) {
	root, ok := sdkhook.ActivityOutboundRoot.(activityOutboundCalls)
	if !ok {
		return nil, nil, fmt.Errorf("interceptor: sdk/activity and sdk/interceptor do not match (%T)", sdkhook.ActivityOutboundRoot)
	}
	wis, err := workerInterceptors(list)
	if err != nil {
		return nil, nil, err
	}
	rootIn := &rootActivityInbound{core: call}
	var in ActivityInboundInterceptor = rootIn
	for i := len(wis) - 1; i >= 0; i-- {
		in = wis[i].InterceptActivity(ctx, in)
	}
	if err := in.Init(rootActivityOutbound{root}); err != nil {
		return nil, nil, err
	}
	if rootIn.out == nil {
		return nil, nil, fmt.Errorf("interceptor: an activity interceptor's Init did not reach the end of the chain")
	}
	return activityInbound{in}, rootIn.out, nil
}
