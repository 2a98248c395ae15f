package interceptor

import "github.com/heddlewf/heddle/sdk/client"

// The client's interceptor types are declared in package client, which
// client.Options needs and which this package imports; these are their
// Temporal names.
type (
	// ClientInterceptor makes the interceptor of a client's outbound
	// calls; client.Options.Interceptors takes them.
	ClientInterceptor = client.Interceptor
	// ClientInterceptorBase is a ClientInterceptor that adds nothing.
	ClientInterceptorBase = client.InterceptorBase
	// ClientOutboundInterceptor receives the calls of a client.
	ClientOutboundInterceptor = client.OutboundInterceptor
	// ClientOutboundInterceptorBase forwards every call to Next.
	ClientOutboundInterceptorBase = client.OutboundInterceptorBase

	ClientExecuteWorkflowInput         = client.ExecuteWorkflowInput
	ClientSignalWorkflowInput          = client.SignalWorkflowInput
	ClientSignalWithStartWorkflowInput = client.SignalWithStartWorkflowInput
	ClientCancelWorkflowInput          = client.CancelWorkflowInput
	ClientTerminateWorkflowInput       = client.TerminateWorkflowInput
	ClientQueryWorkflowInput           = client.QueryWorkflowInput
	ClientUpdateWorkflowInput          = client.UpdateWorkflowInput
)

// Interceptor is both a client and a worker interceptor, for code that
// gives one value to client.Options and worker.Options.
type Interceptor interface {
	ClientInterceptor
	WorkerInterceptor
}

// InterceptorBase is an Interceptor that adds nothing; embed it.
type InterceptorBase struct {
	ClientInterceptorBase
	WorkerInterceptorBase
}

var _ Interceptor = &InterceptorBase{}
