package sdkhook

import "context"

// Interceptor plumbing. sdk/interceptor declares the chains with Temporal's
// types; sdk/workflow and sdk/activity cannot import it (it imports them), so
// each side talks to the other through plain method sets and these hooks.
// All of them are set by package init functions and only read afterwards.
var (
	// WorkflowOutboundRoot is the end of every workflow outbound chain: a
	// value of sdk/workflow whose methods do what the workflow functions do
	// without interceptors. Set by sdk/workflow.
	WorkflowOutboundRoot any
	// ActivityOutboundRoot is the same for activities. Set by sdk/activity.
	ActivityOutboundRoot any
	// InterceptWorkflow builds a run's inbound chain from interceptors (each
	// an interceptor.WorkerInterceptor) around core (sdk/workflow's end of
	// the chain), calls Init with the outbound chain, and returns the
	// inbound chain as a value with workflow-typed methods. ctx is the
	// run's root workflow.Context. Set by sdk/interceptor.
	InterceptWorkflow func(ctx any, interceptors []any, core any) (inbound any, err error)
	// InterceptActivity does the same for one activity try; it returns the
	// inbound chain and the outbound chain that activity functions find in
	// their context under ActivityOutboundKey. Set by sdk/interceptor.
	InterceptActivity func(ctx context.Context, interceptors []any, core any) (inbound, outbound any, err error)
)

// ActivityOutboundKey is the context key of an activity's outbound
// interceptor chain (absent when the worker has no interceptors).
type ActivityOutboundKey struct{}
