package workflow

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/log"
)

// Interceptors (package sdk/interceptor) wrap a run's calls in chains. This
// package cannot import sdk/interceptor, so it names the methods it calls in
// the unexported interfaces below; Go's structural typing makes every
// interceptor.WorkflowOutboundInterceptor an outbound. A run whose worker
// has no interceptors keeps st.out and st.in nil, and each workflow function
// then calls its implementation straight away: the cost is one nil check.

// outbound is what the workflow functions call when the run has
// interceptors: the top of its outbound chain.
type outbound interface {
	Go(ctx Context, name string, f func(ctx Context)) Context
	Await(ctx Context, condition func() bool) error
	AwaitWithTimeout(ctx Context, timeout time.Duration, condition func() bool) (bool, error)
	ExecuteActivity(ctx Context, activityType string, args ...any) Future
	ExecuteLocalActivity(ctx Context, activityType string, args ...any) Future
	ExecuteChildWorkflow(ctx Context, childWorkflowType string, args ...any) ChildWorkflowFuture
	GetInfo(ctx Context) *Info
	GetLogger(ctx Context) log.Logger
	Now(ctx Context) time.Time
	NewTimer(ctx Context, d time.Duration) Future
	Sleep(ctx Context, d time.Duration) error
	RequestCancelExternalWorkflow(ctx Context, workflowID, runID string) Future
	SignalExternalWorkflow(ctx Context, workflowID, runID, signalName string, arg any) Future
	SignalChildWorkflow(ctx Context, workflowID, signalName string, arg any) Future
	GetSignalChannel(ctx Context, signalName string) ReceiveChannel
	SideEffect(ctx Context, f func(ctx Context) any) converter.EncodedValue
	MutableSideEffect(ctx Context, id string, f func(ctx Context) any, equals func(a, b any) bool) converter.EncodedValue
	GetVersion(ctx Context, changeID string, minSupported, maxSupported Version) Version
	SetQueryHandler(ctx Context, queryType string, handler any) error
	SetUpdateHandler(ctx Context, updateName string, handler any, opts UpdateHandlerOptions) error
	IsReplaying(ctx Context) bool
	HasLastCompletionResult(ctx Context) bool
	GetLastCompletionResult(ctx Context, d ...any) error
	NewContinueAsNewError(ctx Context, wfn any, args ...any) error
}

// inbound is the inbound chain as sdk/interceptor hands it over, with the
// inputs spelled as plain arguments.
type inbound interface {
	ExecuteWorkflow(ctx Context, args []any) (any, error)
	HandleSignal(ctx Context, signalName string, arg converter.EncodedValues) error
	HandleQuery(ctx Context, queryType string, args []any) (any, error)
	ValidateUpdate(ctx Context, updateName string, args []any) error
	ExecuteUpdate(ctx Context, updateName string, args []any) (any, error)
}

// outboundOf returns the outbound chain of the run ctx belongs to, or nil
// when it has none (or ctx is not a run's, as in some tests).
func outboundOf(ctx Context) outbound {
	if st, ok := ctx.Value(stateKey{}).(*state); ok && st.out != nil {
		return st.out
	}
	return nil
}

// typeName is the name a function or a name stands for, for an outbound
// call; when it has none the implementation reports why.
func typeName(fnOrName any) string {
	name, _ := activityNameOf(fnOrName)
	return name
}

// localFnKey holds the function ExecuteLocalActivity was given, so that the
// end of the chain, which sees only its name, can still call it.
type localFnKey struct{}

type localFn struct {
	name string
	fn   any
}

// rootOutbound ends every outbound chain: each method is its workflow
// function without interceptors.
type rootOutbound struct{}

func (rootOutbound) Go(ctx Context, name string, f func(ctx Context)) Context {
	goNamed(ctx, name, f)
	return ctx
}
func (rootOutbound) Await(ctx Context, condition func() bool) error { return await(ctx, condition) }
func (rootOutbound) AwaitWithTimeout(ctx Context, d time.Duration, condition func() bool) (bool, error) {
	return awaitWithTimeout(ctx, d, condition)
}
func (rootOutbound) ExecuteActivity(ctx Context, activityType string, args ...any) Future {
	return executeActivity(ctx, activityType, args...)
}
func (rootOutbound) ExecuteLocalActivity(ctx Context, activityType string, args ...any) Future {
	var activity any = activityType
	if l, ok := ctx.Value(localFnKey{}).(localFn); ok && l.name == activityType {
		activity = l.fn
	}
	return executeLocalActivity(ctx, activity, args...)
}
func (rootOutbound) ExecuteChildWorkflow(ctx Context, childWorkflowType string, args ...any) ChildWorkflowFuture {
	return executeChildWorkflow(ctx, childWorkflowType, args...)
}
func (rootOutbound) GetInfo(ctx Context) *Info        { return &stateOf(ctx).info }
func (rootOutbound) GetLogger(ctx Context) log.Logger { return getLogger(ctx) }
func (rootOutbound) Now(ctx Context) time.Time        { return envOf(ctx).Now() }
func (rootOutbound) IsReplaying(ctx Context) bool     { return envOf(ctx).IsReplaying() }
func (rootOutbound) HasLastCompletionResult(ctx Context) bool {
	return lastCompletionResult(ctx) != nil
}
func (rootOutbound) GetLastCompletionResult(ctx Context, d ...any) error {
	return getLastCompletionResult(ctx, d...)
}
func (rootOutbound) NewTimer(ctx Context, d time.Duration) Future { return newTimer(ctx, d) }
func (rootOutbound) Sleep(ctx Context, d time.Duration) error     { return newTimer(ctx, d).Get(ctx, nil) }
func (rootOutbound) RequestCancelExternalWorkflow(ctx Context, workflowID, runID string) Future {
	return external(ctx, replay.KindCancelExternal, workflowID, runID, "cancel", nil)
}
func (rootOutbound) SignalExternalWorkflow(ctx Context, workflowID, runID, signalName string, arg any) Future {
	return external(ctx, replay.KindSignalExternal, workflowID, runID, signalName, []any{arg})
}
func (rootOutbound) SignalChildWorkflow(ctx Context, workflowID, signalName string, arg any) Future {
	return external(ctx, replay.KindSignalExternal, workflowID, "", signalName, []any{arg})
}
func (rootOutbound) GetSignalChannel(ctx Context, signalName string) ReceiveChannel {
	return getSignalChannel(ctx, signalName)
}
func (rootOutbound) SideEffect(ctx Context, f func(ctx Context) any) converter.EncodedValue {
	return sideEffect(ctx, f)
}
func (rootOutbound) MutableSideEffect(ctx Context, id string, f func(ctx Context) any, equals func(a, b any) bool) converter.EncodedValue {
	return mutableSideEffect(ctx, id, f, equals)
}
func (rootOutbound) GetVersion(ctx Context, changeID string, minSupported, maxSupported Version) Version {
	return getVersion(ctx, changeID, minSupported, maxSupported)
}
func (rootOutbound) SetQueryHandler(ctx Context, queryType string, handler any) error {
	return setQueryHandler(ctx, queryType, handler)
}
func (rootOutbound) SetUpdateHandler(ctx Context, updateName string, handler any, opts UpdateHandlerOptions) error {
	return setUpdateHandler(ctx, updateName, handler, opts)
}
func (rootOutbound) NewContinueAsNewError(ctx Context, wfn any, args ...any) error {
	return newContinueAsNewError(ctx, wfn, args...)
}

// interceptRoot ends a run's inbound chain: sdk/interceptor wraps it as the
// innermost WorkflowInboundInterceptor.
type interceptRoot struct {
	st *state
	fn reflect.Value
}

// SetOutbound keeps the outbound chain Init built; from then on the
// workflow functions of the run go through it.
func (r *interceptRoot) SetOutbound(o any) error {
	out, ok := o.(outbound)
	if !ok {
		return fmt.Errorf("workflow: %T is not a workflow outbound interceptor", o)
	}
	r.st.out = out
	return nil
}

// Outbound is the end of the outbound chain: sdk/interceptor ends the
// chain it builds with it.
func (r *interceptRoot) Outbound() any { return rootOutbound{} }

// ExecuteWorkflow calls the workflow function with args (after ctx), which
// an interceptor may have changed; each must be assignable to its
// parameter.
func (r *interceptRoot) ExecuteWorkflow(ctx Context, args []any) (any, error) {
	in, err := callArgs(r.fn.Type(), ctx, args)
	if err != nil {
		return nil, fmt.Errorf("workflow: %s: %w", r.st.info.WorkflowType.Name, err)
	}
	return splitResult(r.fn.Call(in))
}

// HandleSignal delivers a signal to its channel. arg must be a value this
// SDK made (converter.NewEncodedValues), since the channel holds payloads.
func (r *interceptRoot) HandleSignal(_ Context, signalName string, arg converter.EncodedValues) error {
	var data []byte
	if arg != nil {
		h, ok := arg.(converter.DataHolder)
		if !ok {
			return fmt.Errorf("workflow: signal %q: the argument must come from converter.NewEncodedValues, not %T", signalName, arg)
		}
		data = h.Data()
	}
	r.st.deliverSignal(signalName, data)
	return nil
}

// HandleQuery calls the query handler of queryType with args.
func (r *interceptRoot) HandleQuery(_ Context, queryType string, args []any) (any, error) {
	handler, ok := r.st.queries[queryType]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownQuery, queryType)
	}
	v := reflect.ValueOf(handler)
	in, err := valuesOf(v.Type(), 0, args)
	if err != nil {
		return nil, fmt.Errorf("workflow: query %q: %w", queryType, err)
	}
	return splitResult(v.Call(in))
}

// ValidateUpdate runs the validator of update updateName, if it has one.
func (r *interceptRoot) ValidateUpdate(ctx Context, updateName string, args []any) error {
	h, ok := r.st.upd.handlers[updateName]
	if !ok {
		return fmt.Errorf("unknown update %v", updateName)
	}
	if !h.validator.IsValid() {
		return nil
	}
	first := 0 // a validator without a Context takes the arguments from its first parameter
	if h.validatorCtx {
		first = 1
	}
	rest, err := valuesOf(h.validator.Type(), first, args)
	if err != nil {
		return err
	}
	return h.callValidator(append([]reflect.Value{reflect.ValueOf(ctx)}, rest...))
}

// ExecuteUpdate runs the handler of update updateName.
func (r *interceptRoot) ExecuteUpdate(ctx Context, updateName string, args []any) (any, error) {
	h, ok := r.st.upd.handlers[updateName]
	if !ok {
		return nil, fmt.Errorf("unknown update %v", updateName)
	}
	in, err := callArgs(h.fn.Type(), ctx, args)
	if err != nil {
		return nil, err
	}
	return splitResult(h.fn.Call(in))
}

// callArgs is ctx followed by args, as reflect values for a function of
// type t whose first parameter is the Context.
func callArgs(t reflect.Type, ctx Context, args []any) ([]reflect.Value, error) {
	rest, err := valuesOf(t, 1, args)
	if err != nil {
		return nil, err
	}
	return append([]reflect.Value{reflect.ValueOf(ctx)}, rest...), nil
}

// valuesOf turns args into the parameters of t from index first on.
func valuesOf(t reflect.Type, first int, args []any) ([]reflect.Value, error) {
	if len(args) != t.NumIn()-first {
		return nil, fmt.Errorf("%d arguments for %d parameters", len(args), t.NumIn()-first)
	}
	out := make([]reflect.Value, len(args))
	for i, a := range args {
		pt := t.In(first + i)
		if a == nil {
			out[i] = reflect.Zero(pt)
			continue
		}
		v := reflect.ValueOf(a)
		if !v.Type().AssignableTo(pt) {
			return nil, fmt.Errorf("argument %d is a %s, the parameter a %s", i+1, v.Type(), pt)
		}
		out[i] = v
	}
	return out, nil
}

// anyArgs turns decoded parameters into the []any of an interceptor input.
func anyArgs(vs []reflect.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v.Interface()
	}
	return out
}

// splitResult turns the results of a func(...) error or func(...) (T,
// error) into (T or nil, error).
func splitResult(out []reflect.Value) (any, error) {
	var err error
	if e := out[len(out)-1]; !e.IsNil() {
		err = e.Interface().(error)
	}
	if len(out) == 2 {
		return out[0].Interface(), err
	}
	return nil, err
}

// startInterceptors builds the run's chains when its worker has
// interceptors; it returns the inbound chain, or nil.
func startInterceptors(ctx Context, st *state, fn reflect.Value, interceptors []any) (inbound, error) {
	if len(interceptors) == 0 {
		return nil, nil
	}
	if sdkhook.InterceptWorkflow == nil {
		return nil, errors.New("workflow: the worker has interceptors but package interceptor is not linked in")
	}
	in, err := sdkhook.InterceptWorkflow(ctx, interceptors, &interceptRoot{st: st, fn: fn})
	if err != nil {
		return nil, err
	}
	ib, ok := in.(inbound)
	if !ok {
		return nil, fmt.Errorf("workflow: %T is not an inbound chain", in)
	}
	return ib, nil
}
