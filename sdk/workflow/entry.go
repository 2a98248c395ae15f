package workflow

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// state is what the command-level API keeps per execution. newEntryFor puts
// it among the root context's values.
type state struct {
	x        *replay.Execution
	info     Info
	logger   *slog.Logger
	signals  map[string]*channelImpl // GetSignalChannel's channels
	pending  map[string][][]byte     // signals received before their channel was asked for
	versions map[string]Version      // GetVersion's answers, so a change id answers the same twice
	queries  map[string]any          // SetQueryHandler's handlers
	// mutable holds MutableSideEffect's state per id: calls so far and the
	// current (last recorded) value.
	mutable map[string]*mutableState
	// root is the workflow's root context, for the coroutines of update
	// handlers; upd is their state (update.go).
	root Context
	upd  updates
	// testEnv is the sdk/testsuite environment the run is tested in, nil
	// in production (testenv.go).
	testEnv sdkhook.TestEnv
	// in and out are the run's interceptor chains (intercept.go), nil when
	// its worker has no interceptors.
	in  inbound
	out outbound
}

type stateKey struct{}

func stateOf(ctx Context) *state {
	envOf(ctx)
	st, ok := ctx.Value(stateKey{}).(*state)
	if !ok {
		panic("workflow: the Context does not belong to a workflow started by newEntryFor")
	}
	return st
}

// onSignal receives a signal_received event: it goes to the signal's
// channel, or waits for the channel to be asked for.
func (st *state) onSignal(name string, payload []byte) {
	if name == UpdateSignalName {
		st.onUpdate(payload)
		return
	}
	if st.in != nil {
		// An interceptor may rewrite or drop the signal. heddle has no
		// workflow task to fail, so an error drops the signal and is logged.
		if err := st.in.HandleSignal(st.root, name, converter.NewEncodedValues(payload)); err != nil {
			st.logger.Warn("workflow: a signal interceptor refused a signal", "signal", name, "error", err)
		}
		return
	}
	st.deliverSignal(name, payload)
}

// deliverSignal puts a signal on its channel, or keeps it until the
// channel is asked for.
func (st *state) deliverSignal(name string, payload []byte) {
	if ch := st.signals[name]; ch != nil {
		_ = deliverToChannel(ch, payload) // signal channels are never closed
		return
	}
	st.pending[name] = append(st.pending[name], append([]byte(nil), payload...))
}

var (
	contextType = reflect.TypeFor[Context]()
	errorType   = reflect.TypeFor[error]()
	// encodedValuesType is the parameter of a dynamic workflow's arguments.
	encodedValuesType = reflect.TypeFor[converter.EncodedValues]()
)

// newEntryFor is for the worker: it returns the replay.Entry that runs the
// workflow function fn with info. The entry builds the root context (with
// info, the signal channels fed by x.OnSignal, and cancellation of the
// whole workflow by x.OnCancel), decodes the input with converter.Decode
// into fn's parameters after the Context, calls fn, and reports its end
// with x.Finish: the result encoded with converter.Encode, or fn's error.
//
// fn must be a function func(ctx Context, args...) error or
// func(ctx Context, args...) (T, error), not variadic; any other shape,
// or an input that does not decode into the parameters, finishes the run
// with an error saying so.
func newEntryFor(fn any, info Info) replay.Entry {
	return newEntry(fn, info, nil)
}

func newEntry(fn any, info Info, logger *slog.Logger) replay.Entry {
	return newEntryWith(fn, info, logger, nil)
}

// newEntryWith is newEntry for a worker with interceptors.
func newEntryWith(fn any, info Info, logger *slog.Logger, interceptors []any) replay.Entry {
	return func(x *replay.Execution, input []byte) {
		v := reflect.ValueOf(fn)
		if err := checkWorkflowFunc(v); err != nil {
			x.Finish(nil, err)
			return
		}
		ctx, cancel := newRootContext(x)
		if logger == nil {
			logger = slog.Default()
		}
		info.WorkflowStartTime = x.Now()
		info.history = func() (uint64, int64) { return x.LastSeq(), x.HistoryBytes() }
		st := &state{
			x:        x,
			info:     info,
			logger:   logger.With("workflowID", info.WorkflowID, "runID", info.RunID, "workflowType", info.WorkflowType.Name),
			signals:  map[string]*channelImpl{},
			pending:  map[string][][]byte{},
			versions: map[string]Version{},
		}
		x.OnSignal(st.onSignal)
		x.OnCancel(func() { cancel() })
		x.SetLocal(st)
		ctx = WithValue(ctx, stateKey{}, st)
		st.root = ctx
		in, err := startInterceptors(ctx, st, v, interceptors)
		if err != nil {
			x.Finish(nil, err)
			return
		}
		st.in = in

		t := v.Type()
		args := []reflect.Value{reflect.ValueOf(ctx)}
		if t.NumIn() == 2 && t.In(1) == encodedValuesType {
			// A dynamic workflow (or any taking converter.EncodedValues)
			// decodes its arguments itself.
			args = append(args, reflect.ValueOf(converter.NewEncodedValues(input)))
		} else if t.NumIn() > 1 {
			ptrs := make([]any, t.NumIn()-1)
			for i := range ptrs {
				ptrs[i] = reflect.New(t.In(i + 1)).Interface()
			}
			if err := converter.Decode(input, ptrs...); err != nil {
				x.Finish(nil, fmt.Errorf("workflow: %s: input: %w", info.WorkflowType.Name, err))
				return
			}
			for _, p := range ptrs {
				args = append(args, reflect.ValueOf(p).Elem())
			}
		}
		if in != nil {
			res, err := in.ExecuteWorkflow(ctx, anyArgs(args[1:]))
			finishWith(x, info, t.NumOut() == 2, res, err)
			return
		}
		out := v.Call(args)
		errV := out[len(out)-1]
		if !errV.IsNil() {
			x.Finish(nil, errV.Interface().(error))
			return
		}
		if len(out) == 1 {
			x.Finish(nil, nil)
			return
		}
		res, err := converter.Encode(out[0].Interface())
		if err != nil {
			x.Finish(nil, fmt.Errorf("workflow: %s: result: %w", info.WorkflowType.Name, err))
			return
		}
		x.Finish(res, nil)
	}
}

// finishWith ends a run whose function returned through the interceptors:
// res is its result when it has one.
func finishWith(x *replay.Execution, info Info, hasResult bool, res any, err error) {
	if err != nil || !hasResult {
		x.Finish(nil, err)
		return
	}
	data, err := converter.Encode(res)
	if err != nil {
		x.Finish(nil, fmt.Errorf("workflow: %s: result: %w", info.WorkflowType.Name, err))
		return
	}
	x.Finish(data, nil)
}

// checkWorkflowFunc reports a value that is not a workflow function.
func checkWorkflowFunc(v reflect.Value) error {
	if !v.IsValid() || v.Kind() != reflect.Func || v.IsNil() {
		return fmt.Errorf("workflow: a workflow function is needed, got %v", describe(v))
	}
	t := v.Type()
	var errs []error
	if t.NumIn() == 0 || t.In(0) != contextType {
		errs = append(errs, errors.New("its first parameter must be workflow.Context"))
	}
	if t.IsVariadic() {
		errs = append(errs, errors.New("it must not be variadic"))
	}
	if n := t.NumOut(); n == 0 || n > 2 || t.Out(n-1) != errorType {
		errs = append(errs, errors.New("it must return error or (T, error)"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("workflow: %s is not a workflow function: %w", t, errors.Join(errs...))
	}
	return nil
}

func describe(v reflect.Value) string {
	if !v.IsValid() {
		return "nil"
	}
	return v.Type().String()
}
