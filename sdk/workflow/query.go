package workflow

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// ErrUnknownQuery is returned for a query type the workflow has no handler
// for. It is engine.ErrUnknownQuery, so a query answered over the HTTP API
// matches it too.
var ErrUnknownQuery = engine.ErrUnknownQuery

// StackTraceQuery is the query every workflow answers with where each of
// its coroutines blocks, in the workflow code's own files and lines: one
// text, as Temporal's "__stack_trace" (client.QueryTypeStackTrace). The
// name is reserved: a handler registered for it is never called.
const StackTraceQuery = "__stack_trace"

// SetQueryHandler registers handler for queryType. handler is a function
// func(args...) (T, error) that reads workflow state and returns it; it runs
// while the workflow's coroutines are all blocked, so it sees a consistent
// state, and it must not block or change anything.
func SetQueryHandler(ctx Context, queryType string, handler any) error {
	if o := outboundOf(ctx); o != nil {
		return o.SetQueryHandler(ctx, queryType, handler)
	}
	return setQueryHandler(ctx, queryType, handler)
}

func setQueryHandler(ctx Context, queryType string, handler any) error {
	t := reflect.TypeOf(handler)
	if t == nil || t.Kind() != reflect.Func || t.NumOut() != 2 || !t.Out(1).Implements(errorType) {
		return fmt.Errorf("workflow: query handler for %q must be a func(args...) (T, error), not %v", queryType, t)
	}
	st := stateOf(ctx)
	if st.queries == nil {
		st.queries = map[string]any{}
	}
	st.queries[queryType] = handler
	return nil
}

// runQuery is for the worker: it calls the query handler of the workflow that
// x runs, with args encoded by converter.Encode, and returns the encoded
// result.
func runQuery(x *replay.Execution, queryType string, args []byte) ([]byte, error) {
	st, ok := x.Local().(*state)
	if !ok {
		return nil, errors.New("workflow: the execution has not started its workflow")
	}
	if queryType == StackTraceQuery {
		trace, err := x.Dispatcher().StackTrace()
		if err != nil {
			return nil, err
		}
		return converter.Encode(trace)
	}
	handler, ok := st.queries[queryType]
	if !ok {
		if st.in != nil {
			// The interceptors see unknown queries too (and may answer them).
			res, err := st.in.HandleQuery(st.root, queryType, nil)
			if err != nil {
				return nil, err
			}
			return converter.Encode(res)
		}
		return nil, fmt.Errorf("%w: %q", ErrUnknownQuery, queryType)
	}
	v := reflect.ValueOf(handler)
	t := v.Type()
	ptrs := make([]any, t.NumIn())
	in := make([]reflect.Value, t.NumIn())
	for i := range ptrs {
		p := reflect.New(t.In(i))
		ptrs[i], in[i] = p.Interface(), p.Elem()
	}
	if err := converter.Decode(args, ptrs...); err != nil {
		return nil, fmt.Errorf("workflow: query %q arguments: %w", queryType, err)
	}
	if st.in != nil {
		res, err := st.in.HandleQuery(st.root, queryType, anyArgs(in))
		if err != nil {
			return nil, err
		}
		return converter.Encode(res)
	}
	out := v.Call(in)
	if e := out[1]; !e.IsNil() {
		return nil, e.Interface().(error)
	}
	return converter.Encode(out[0].Interface())
}
