package client

import (
	"context"

	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The client's interceptor types live here because Options names them and
// package interceptor, which gives them Temporal's names
// (interceptor.ClientInterceptor, interceptor.ClientOutboundInterceptor…),
// imports this package. Use them through package interceptor.

// Interceptor makes the interceptor of a client's outbound calls
// (interceptor.ClientInterceptor). NewWithOptions calls InterceptClient
// once per client, the last of Options.Interceptors first, so the first is
// the outermost.
type Interceptor interface {
	InterceptClient(next OutboundInterceptor) OutboundInterceptor

	mustEmbedClientInterceptorBase()
}

// InterceptorBase is an Interceptor that adds nothing
// (interceptor.ClientInterceptorBase). Embed it.
type InterceptorBase struct{}

var _ Interceptor = &InterceptorBase{}

func (*InterceptorBase) InterceptClient(next OutboundInterceptor) OutboundInterceptor { return next }

func (*InterceptorBase) mustEmbedClientInterceptorBase() {}

// OutboundInterceptor receives the calls of a client
// (interceptor.ClientOutboundInterceptor). It may be called from many
// goroutines at once.
type OutboundInterceptor interface {
	ExecuteWorkflow(ctx context.Context, in *ExecuteWorkflowInput) (WorkflowRun, error)
	SignalWorkflow(ctx context.Context, in *SignalWorkflowInput) error
	SignalWithStartWorkflow(ctx context.Context, in *SignalWithStartWorkflowInput) (WorkflowRun, error)
	CancelWorkflow(ctx context.Context, in *CancelWorkflowInput) error
	TerminateWorkflow(ctx context.Context, in *TerminateWorkflowInput) error
	QueryWorkflow(ctx context.Context, in *QueryWorkflowInput) (converter.EncodedValue, error)
	UpdateWorkflow(ctx context.Context, in *UpdateWorkflowInput) (WorkflowUpdateHandle, error)

	mustEmbedClientOutboundInterceptorBase()
}

// ExecuteWorkflowInput is the input of ExecuteWorkflow
// (interceptor.ClientExecuteWorkflowInput).
type ExecuteWorkflowInput struct {
	Options      *StartWorkflowOptions
	WorkflowType string
	Args         []any
}

// SignalWorkflowInput is the input of SignalWorkflow
// (interceptor.ClientSignalWorkflowInput).
type SignalWorkflowInput struct {
	WorkflowID string
	RunID      string
	SignalName string
	Arg        any
}

// SignalWithStartWorkflowInput is the input of SignalWithStartWorkflow
// (interceptor.ClientSignalWithStartWorkflowInput); Options.ID is the
// workflow id.
type SignalWithStartWorkflowInput struct {
	SignalName   string
	SignalArg    any
	Options      *StartWorkflowOptions
	WorkflowType string
	Args         []any
}

// CancelWorkflowInput is the input of CancelWorkflow
// (interceptor.ClientCancelWorkflowInput).
type CancelWorkflowInput struct {
	WorkflowID string
	RunID      string
}

// TerminateWorkflowInput is the input of TerminateWorkflow
// (interceptor.ClientTerminateWorkflowInput).
type TerminateWorkflowInput struct {
	WorkflowID string
	RunID      string
	Reason     string
	Details    []any
}

// QueryWorkflowInput is the input of QueryWorkflow
// (interceptor.ClientQueryWorkflowInput).
type QueryWorkflowInput struct {
	WorkflowID string
	RunID      string
	QueryType  string
	Args       []any
}

// UpdateWorkflowInput is the input of UpdateWorkflow
// (interceptor.ClientUpdateWorkflowInput).
type UpdateWorkflowInput struct {
	UpdateID     string
	WorkflowID   string
	RunID        string
	UpdateName   string
	Args         []any
	WaitForStage WorkflowUpdateStage
}

// OutboundInterceptorBase forwards every call to Next
// (interceptor.ClientOutboundInterceptorBase). Embed it.
type OutboundInterceptorBase struct {
	Next OutboundInterceptor
}

var _ OutboundInterceptor = &OutboundInterceptorBase{}

func (b *OutboundInterceptorBase) ExecuteWorkflow(ctx context.Context, in *ExecuteWorkflowInput) (WorkflowRun, error) {
	return b.Next.ExecuteWorkflow(ctx, in)
}

func (b *OutboundInterceptorBase) SignalWorkflow(ctx context.Context, in *SignalWorkflowInput) error {
	return b.Next.SignalWorkflow(ctx, in)
}

func (b *OutboundInterceptorBase) SignalWithStartWorkflow(ctx context.Context, in *SignalWithStartWorkflowInput) (WorkflowRun, error) {
	return b.Next.SignalWithStartWorkflow(ctx, in)
}

func (b *OutboundInterceptorBase) CancelWorkflow(ctx context.Context, in *CancelWorkflowInput) error {
	return b.Next.CancelWorkflow(ctx, in)
}

func (b *OutboundInterceptorBase) TerminateWorkflow(ctx context.Context, in *TerminateWorkflowInput) error {
	return b.Next.TerminateWorkflow(ctx, in)
}

func (b *OutboundInterceptorBase) QueryWorkflow(ctx context.Context, in *QueryWorkflowInput) (converter.EncodedValue, error) {
	return b.Next.QueryWorkflow(ctx, in)
}

func (b *OutboundInterceptorBase) UpdateWorkflow(ctx context.Context, in *UpdateWorkflowInput) (WorkflowUpdateHandle, error) {
	return b.Next.UpdateWorkflow(ctx, in)
}

func (*OutboundInterceptorBase) mustEmbedClientOutboundInterceptorBase() {}

// intercepted is a client with interceptors: the calls above go down the
// chain, everything else straight to the client. A client without
// interceptors is a bare *workflowClient and pays nothing.
type intercepted struct {
	*workflowClient
	out OutboundInterceptor
}

// withInterceptors wraps c in its options' interceptors, if any.
func withInterceptors(c *workflowClient) Client {
	list := c.opts.Interceptors
	if len(list) == 0 {
		return c
	}
	var out OutboundInterceptor = clientRoot{c}
	for i := len(list) - 1; i >= 0; i-- {
		out = list[i].InterceptClient(out)
	}
	return &intercepted{workflowClient: c, out: out}
}

// typeName is the workflow type a function or a name stands for.
func typeName(wf any) string {
	if name, ok := wf.(string); ok {
		return name
	}
	return workflow.ActivityName(wf)
}

func (c *intercepted) ExecuteWorkflow(ctx context.Context, options StartWorkflowOptions, wf any, args ...any) (WorkflowRun, error) {
	return c.out.ExecuteWorkflow(ctx, &ExecuteWorkflowInput{Options: &options, WorkflowType: typeName(wf), Args: args})
}

func (c *intercepted) SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error {
	return c.out.SignalWorkflow(ctx, &SignalWorkflowInput{WorkflowID: workflowID, RunID: runID, SignalName: signalName, Arg: arg})
}

func (c *intercepted) SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
	options StartWorkflowOptions, wf any, workflowArgs ...any) (WorkflowRun, error) {
	options.ID = workflowID
	return c.out.SignalWithStartWorkflow(ctx, &SignalWithStartWorkflowInput{SignalName: signalName, SignalArg: signalArg,
		Options: &options, WorkflowType: typeName(wf), Args: workflowArgs})
}

func (c *intercepted) CancelWorkflow(ctx context.Context, workflowID, runID string) error {
	return c.out.CancelWorkflow(ctx, &CancelWorkflowInput{WorkflowID: workflowID, RunID: runID})
}

func (c *intercepted) TerminateWorkflow(ctx context.Context, workflowID, runID, reason string, details ...any) error {
	return c.out.TerminateWorkflow(ctx, &TerminateWorkflowInput{WorkflowID: workflowID, RunID: runID, Reason: reason, Details: details})
}

func (c *intercepted) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	return c.out.QueryWorkflow(ctx, &QueryWorkflowInput{WorkflowID: workflowID, RunID: runID, QueryType: queryType, Args: args})
}

func (c *intercepted) UpdateWorkflow(ctx context.Context, o UpdateWorkflowOptions) (WorkflowUpdateHandle, error) {
	return c.out.UpdateWorkflow(ctx, &UpdateWorkflowInput{UpdateID: o.UpdateID, WorkflowID: o.WorkflowID, RunID: o.RunID,
		UpdateName: o.UpdateName, Args: o.Args, WaitForStage: o.WaitForStage})
}

// clientRoot ends the chain at the client itself.
type clientRoot struct{ c *workflowClient }

func (r clientRoot) ExecuteWorkflow(ctx context.Context, in *ExecuteWorkflowInput) (WorkflowRun, error) {
	return r.c.ExecuteWorkflow(ctx, *in.Options, in.WorkflowType, in.Args...)
}

func (r clientRoot) SignalWorkflow(ctx context.Context, in *SignalWorkflowInput) error {
	return r.c.SignalWorkflow(ctx, in.WorkflowID, in.RunID, in.SignalName, in.Arg)
}

func (r clientRoot) SignalWithStartWorkflow(ctx context.Context, in *SignalWithStartWorkflowInput) (WorkflowRun, error) {
	return r.c.SignalWithStartWorkflow(ctx, in.Options.ID, in.SignalName, in.SignalArg, *in.Options, in.WorkflowType, in.Args...)
}

func (r clientRoot) CancelWorkflow(ctx context.Context, in *CancelWorkflowInput) error {
	return r.c.CancelWorkflow(ctx, in.WorkflowID, in.RunID)
}

func (r clientRoot) TerminateWorkflow(ctx context.Context, in *TerminateWorkflowInput) error {
	return r.c.TerminateWorkflow(ctx, in.WorkflowID, in.RunID, in.Reason, in.Details...)
}

func (r clientRoot) QueryWorkflow(ctx context.Context, in *QueryWorkflowInput) (converter.EncodedValue, error) {
	return r.c.QueryWorkflow(ctx, in.WorkflowID, in.RunID, in.QueryType, in.Args...)
}

func (r clientRoot) UpdateWorkflow(ctx context.Context, in *UpdateWorkflowInput) (WorkflowUpdateHandle, error) {
	return r.c.UpdateWorkflow(ctx, UpdateWorkflowOptions{UpdateID: in.UpdateID, WorkflowID: in.WorkflowID, RunID: in.RunID,
		UpdateName: in.UpdateName, Args: in.Args, WaitForStage: in.WaitForStage})
}

func (clientRoot) mustEmbedClientOutboundInterceptorBase() {}
