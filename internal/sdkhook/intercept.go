package sdkhook

import "context"

// Interceptor plumbing. sdk/interceptor declares the chains with Temporal's
// types; sdk/workflow and sdk/activity cannot import it (it imports them), so
// each side talks to the other through plain method sets and these hooks.
// All of them are set by package init functions and only read afterwards.
//
// Where a hook's values are typed any, their types are declared above this
// package and cannot be named here without an import cycle: the
// interceptors are interceptor.WorkerInterceptor values (sdk/interceptor),
// a workflow chain's methods take a workflow.Context (sdk/workflow), and an
// activity's outbound chain returns an activity.Info (sdk/activity, which
// imports this package). Each is asserted once, where it is used, to a
// method set of the user's side, and a mismatch is an error, never a
// panic.
var (
	// ActivityOutboundRoot is the end of every activity outbound chain: a
	// value of sdk/activity whose methods do what the activity functions do
	// without interceptors. Set by sdk/activity, read by sdk/interceptor
	// (which imports it).
	ActivityOutboundRoot any
	// InterceptWorkflow builds a run's inbound chain from interceptors (each
	// an interceptor.WorkerInterceptor) around core (sdk/workflow's end of
	// the chain, which also gives the end of the outbound chain), calls Init
	// with the outbound chain, and returns the inbound chain as a value with
	// workflow-typed methods. ctx is the run's root workflow.Context. Set
	// by sdk/interceptor; sdk/workflow, which cannot import it, reports a
	// worker with interceptors but without it as an error.
	InterceptWorkflow func(ctx any, interceptors []any, core any) (inbound any, err error)
	// InterceptActivity does the same for one activity try around call,
	// the worker's call of the activity function. It returns the inbound
	// chain and the outbound chain that activity functions find in their
	// context under ActivityOutboundKey. Set by sdk/interceptor, read by
	// sdk/worker (which imports it).
	InterceptActivity func(ctx context.Context, interceptors []any, call ActivityCall) (inbound ActivityCall, outbound any, err error)
)

// ActivityCall runs an activity try with plain arguments and results: the
// worker's call of the activity function, at the end of an activity's
// inbound chain, and the chain itself as the worker calls it.
type ActivityCall interface {
	ExecuteActivity(ctx context.Context, args []any) (any, error)
}

// ActivityOutboundKey is the context key of an activity's outbound
// interceptor chain (absent when the worker has no interceptors).
type ActivityOutboundKey struct{}
