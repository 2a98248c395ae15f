package worker

import (
	"context"
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/interceptor"
)

// interceptorList is Options.Interceptors as the SDK hooks take them, or
// nil when there are none (the common case, which costs nothing).
func (w *queueWorker) interceptorList() []any {
	if len(w.opts.Interceptors) == 0 {
		return nil
	}
	return interceptorValues(w.opts.Interceptors)
}

// activityCall is the end of an activity try's inbound chain: it calls the
// activity function with the arguments the interceptors pass down.
type activityCall struct {
	fn      reflect.Value
	withCtx bool // the function's first parameter is a context.Context
}

func (a activityCall) ExecuteActivity(ctx context.Context, args []any) (any, error) {
	t := a.fn.Type()
	first := 0
	var in []reflect.Value
	if a.withCtx {
		first = 1
		in = append(in, reflect.ValueOf(ctx))
	}
	if len(args) != t.NumIn()-first {
		return nil, fmt.Errorf("worker: activity interceptor passed %d arguments for %d parameters", len(args), t.NumIn()-first)
	}
	for i, arg := range args {
		pt := t.In(first + i)
		if arg == nil {
			in = append(in, reflect.Zero(pt))
			continue
		}
		v := reflect.ValueOf(arg)
		if !v.Type().AssignableTo(pt) {
			return nil, fmt.Errorf("worker: activity interceptor passed a %s for parameter %d, a %s", v.Type(), i+1, pt)
		}
		in = append(in, v)
	}
	out := a.fn.Call(in)
	var err error
	if e := out[len(out)-1]; !e.IsNil() {
		err = e.Interface().(error)
	}
	if len(out) == 2 {
		return out[0].Interface(), err
	}
	return nil, err
}

var _ sdkhook.ActivityCall = activityCall{}

// callIntercepted runs an activity function (args are its reflect
// arguments, ctx first when first is 1) through the worker's interceptors,
// and returns results shaped as the function's own: (result, error) or
// (error).
//
// sdk/interceptor, which this package imports, sets InterceptActivity.
func callIntercepted(ctx context.Context, list []any, fn reflect.Value, args []reflect.Value, first int) []reflect.Value {
	call, outbound, err := sdkhook.InterceptActivity(ctx, list, activityCall{fn: fn, withCtx: first == 1})
	if err != nil {
		return errorResult(fn.Type(), err)
	}
	ctx = context.WithValue(ctx, sdkhook.ActivityOutboundKey{}, outbound)
	plain := make([]any, 0, len(args)-first)
	for _, a := range args[first:] {
		plain = append(plain, a.Interface())
	}
	res, err := call.ExecuteActivity(ctx, plain)
	errV := reflect.ValueOf(&err).Elem()
	if fn.Type().NumOut() == 1 {
		return []reflect.Value{errV}
	}
	return []reflect.Value{reflect.ValueOf(&res).Elem(), errV}
}

func errorResult(t reflect.Type, err error) []reflect.Value {
	errV := reflect.ValueOf(&err).Elem()
	if t.NumOut() == 1 {
		return []reflect.Value{errV}
	}
	var none any
	return []reflect.Value{reflect.ValueOf(&none).Elem(), errV}
}

// withClientInterceptors returns the worker interceptors of a worker made
// from a client with interceptors: those of the client's that are also
// worker interceptors first, then the worker's own, in a new slice.
func withClientInterceptors(client []any, own []interceptor.WorkerInterceptor) []interceptor.WorkerInterceptor {
	var out []interceptor.WorkerInterceptor
	for _, ic := range client {
		if wi, ok := ic.(interceptor.WorkerInterceptor); ok && wi != nil {
			out = append(out, wi)
		}
	}
	if len(out) == 0 {
		return own
	}
	return append(out, own...)
}

// interceptorValues is list as plain values.
func interceptorValues(list []interceptor.WorkerInterceptor) []any {
	out := make([]any, len(list))
	for i, ic := range list {
		out[i] = ic
	}
	return out
}
