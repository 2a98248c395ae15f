package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sort"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// Updates, as Temporal's: a client asks a running workflow to run a named
// handler with arguments and waits for its result. Before anything is
// written, a worker with the workflow's code validates the request on a
// replay of the run's history (ValidateUpdateQuery, a query the client
// routes as its queries): a rejection is answered to the client and leaves
// no trace in the history, as in Temporal. An accepted request reaches the
// workflow as a signal named UpdateSignalName (so it is in the history, and
// a replay sees it at the same point), where the validator runs again, on
// the live state; the handler runs in a coroutine of its own; the decision
// and the outcome are recorded in the history as markers keyed by the
// update id, which the client reads. A validator must not change workflow
// state or block; a panic in it rejects the update with a
// *temporal.PanicError. On replay the recorded decision stands and the
// validator does not run.

// UpdateSignalName is the signal that carries update requests (the
// engine's name, by which a reset tells updates from other signals).
const UpdateSignalName = engine.UpdateSignalName

// ValidateUpdateQuery is the query type under which a client asks a worker
// to validate an update before it is admitted: the query's one argument
// is the UpdateRequest, and the answer an UpdateOutcome (a Failure is the
// rejection). The name is reserved, as Temporal reserves its "__" queries.
const ValidateUpdateQuery = "__heddle_validate_update"

// UpdateRequest is the payload of an update request's signal.
type UpdateRequest struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args []byte `json:"args,omitempty"`
}

// UpdateOutcome is the payload of an update's decision and completion
// markers: a failure (the rejection, or the handler's error), or the
// handler's encoded result.
type UpdateOutcome struct {
	Result  []byte `json:"result,omitempty"`
	Failure []byte `json:"failure,omitempty"`
}

// UpdateMarkerKey is the keyed-marker key of an update's stage, "decision"
// or "completed"; the marker's step in the history is "k:" and the key.
func UpdateMarkerKey(id, stage string) string { return "update:" + id + ":" + stage }

// UpdateHandlerOptions configure SetUpdateHandlerWithOptions.
type UpdateHandlerOptions struct {
	// Validator, if set, is a func(ctx Context, args...) error or a
	// func(args...) error taking the handler's arguments, as in Temporal:
	// an error rejects the update before the handler runs, and so does a
	// panic (with a *temporal.PanicError). It must not block or change
	// workflow state, and may run more than once for one update.
	Validator any
}

type updateHandler struct {
	fn, validator reflect.Value
	// validatorCtx: the validator takes the Context first.
	validatorCtx bool
}

type updates struct {
	handlers map[string]updateHandler
	running  int             // handlers in progress
	seen     map[string]bool // update ids started: a repeated request runs once
}

// SetUpdateHandler sets the handler of update name: a function
// func(ctx Context, args...) (T, error) or func(ctx Context, args...) error.
// It runs in a coroutine of its own and may block (run activities, sleep).
// An update whose handler is not set when it arrives is rejected as
// unknown, as in Temporal: set handlers before the workflow first blocks.
func SetUpdateHandler(ctx Context, name string, handler any) error {
	return SetUpdateHandlerWithOptions(ctx, name, handler, UpdateHandlerOptions{})
}

// SetUpdateHandlerWithOptions is SetUpdateHandler with a validator.
func SetUpdateHandlerWithOptions(ctx Context, name string, handler any, opts UpdateHandlerOptions) error {
	if o := outboundOf(ctx); o != nil {
		return o.SetUpdateHandler(ctx, name, handler, opts)
	}
	return setUpdateHandler(ctx, name, handler, opts)
}

func setUpdateHandler(ctx Context, name string, handler any, opts UpdateHandlerOptions) error {
	st := stateOf(ctx)
	fn := reflect.ValueOf(handler)
	if err := checkWorkflowFunc(fn); err != nil {
		return fmt.Errorf("workflow: update handler %q: %w", name, err)
	}
	h := updateHandler{fn: fn}
	if opts.Validator != nil {
		v := reflect.ValueOf(opts.Validator)
		withCtx, err := checkValidator(v, fn.Type())
		if err != nil {
			return fmt.Errorf("workflow: the validator of update %q must be a func([ctx Context,] <the handler's arguments>) error: %w", name, err)
		}
		h.validator, h.validatorCtx = v, withCtx
	}
	if st.upd.handlers == nil {
		st.upd.handlers = map[string]updateHandler{}
	}
	st.upd.handlers[name] = h
	return nil
}

// AllHandlersFinished reports whether no update handler is running, so a
// workflow can wait for them before it returns:
// workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }).
func AllHandlersFinished(ctx Context) bool { return stateOf(ctx).upd.running == 0 }

// onUpdate receives an update request (from the worker's goroutine, while
// no coroutine runs).
func (st *state) onUpdate(payload []byte) {
	var req UpdateRequest
	if err := json.Unmarshal(payload, &req); err != nil || req.ID == "" {
		st.logger.Warn("workflow: dropped a malformed update request", "error", err)
		return
	}
	st.startUpdate(req)
}

func (st *state) startUpdate(req UpdateRequest) {
	if st.upd.seen[req.ID] {
		return
	}
	if st.upd.seen == nil {
		st.upd.seen = map[string]bool{}
	}
	st.upd.seen[req.ID] = true
	st.upd.running++
	goNamed(st.root, "update "+req.Name+" "+req.ID, func(ctx Context) {
		defer func() { st.upd.running-- }()
		h, args, decodeErr := st.updateCall(ctx, req)
		data, _, err := st.x.KeyedMarker(UpdateMarkerKey(req.ID, "decision"), "update_decision", func() ([]byte, error) {
			return json.Marshal(decisionOf(st.validate(ctx, req.Name, h, args, decodeErr)))
		})
		if err != nil {
			panic(fmt.Sprintf("workflow: update %q: %v", req.Name, err))
		}
		var decision UpdateOutcome
		if err := json.Unmarshal(data, &decision); err != nil || decision.Failure != nil {
			return // rejected: nothing else happens
		}
		var o UpdateOutcome
		if st.in != nil {
			res, err := st.in.ExecuteUpdate(ctx, req.Name, anyArgs(args[1:]))
			o = updateOutcomeOf(req.Name, h.fn.Type().NumOut() == 2, res, err)
			if _, _, err := st.x.KeyedMarker(UpdateMarkerKey(req.ID, "completed"), "update_completed", func() ([]byte, error) { return json.Marshal(o) }); err != nil {
				panic(fmt.Sprintf("workflow: update %q: %v", req.Name, err))
			}
			return
		}
		out := h.fn.Call(args)
		if errV := out[len(out)-1]; !errV.IsNil() {
			o.Failure = sdkhook.EncodeFailure(errV.Interface().(error))
		} else if len(out) == 2 {
			if o.Result, err = converter.Encode(out[0].Interface()); err != nil {
				o.Failure = sdkhook.EncodeFailure(fmt.Errorf("update %q: result: %w", req.Name, err))
			} else if te := testEnvOf(ctx); te != nil {
				te.UpdateCompleted(st.info.RunID, req.ID, out[0].Interface())
			}
		}
		if _, _, err := st.x.KeyedMarker(UpdateMarkerKey(req.ID, "completed"), "update_completed", func() ([]byte, error) { return json.Marshal(o) }); err != nil {
			panic(fmt.Sprintf("workflow: update %q: %v", req.Name, err))
		}
	})
}

// updateCall finds the handler of an update and decodes its arguments,
// ctx first; the error is a rejection (an unknown update, arguments that
// do not decode).
func (st *state) updateCall(ctx Context, req UpdateRequest) (updateHandler, []reflect.Value, error) {
	h, known := st.upd.handlers[req.Name]
	if !known {
		names := make([]string, 0, len(st.upd.handlers))
		for n := range st.upd.handlers {
			names = append(names, n)
		}
		sort.Strings(names)
		return h, nil, fmt.Errorf("unknown update %v. KnownUpdates=%v", req.Name, names)
	}
	args, err := decodeArgs(h.fn.Type(), req.Args, ctx)
	return h, args, err
}

// validate decides an update: its rejection, or nil. The interceptors'
// ValidateUpdate runs when the run has interceptors, else the validator.
// A panic in either rejects the update with a *temporal.PanicError, as in
// Temporal, instead of failing the run.
func (st *state) validate(ctx Context, name string, h updateHandler, args []reflect.Value, rejection error) (err error) {
	if rejection != nil {
		return rejection
	}
	defer func() {
		if p := recover(); p != nil {
			if replay.IsExit(p) {
				panic(p) // the coroutine is being closed, not the validator failing
			}
			err = sdkhook.NewPanicError(fmt.Sprintf("update validator panic: %v", p), string(debug.Stack()))
		}
	}()
	if st.in != nil {
		return st.in.ValidateUpdate(ctx, name, anyArgs(args[1:]))
	}
	if !h.validator.IsValid() {
		return nil
	}
	return h.callValidator(args)
}

// callValidator calls the validator with args (the Context first), without
// the Context when it takes none.
func (h updateHandler) callValidator(args []reflect.Value) error {
	if !h.validatorCtx {
		args = args[1:]
	}
	if out := h.validator.Call(args); !out[0].IsNil() {
		return out[0].Interface().(error)
	}
	return nil
}

// checkValidator reports whether v is a validator of a handler of type
// handler: a func returning only an error, whose parameters are the
// handler's, with or without its leading Context. withCtx says which.
func checkValidator(v reflect.Value, handler reflect.Type) (withCtx bool, err error) {
	if v.Kind() != reflect.Func || v.IsNil() {
		return false, fmt.Errorf("it is a %s", describe(v))
	}
	t := v.Type()
	if t.NumOut() != 1 || t.Out(0) != errorType {
		return false, fmt.Errorf("%s must return exactly an error", t)
	}
	if t.IsVariadic() != handler.IsVariadic() {
		return false, fmt.Errorf("%s and the handler %s differ in being variadic", t, handler)
	}
	first := 0 // the validator's first parameter matched against the handler's second
	switch {
	case t.NumIn() == handler.NumIn() && t.NumIn() > 0 && t.In(0) == contextType:
		withCtx, first = true, 1
	case t.NumIn() == handler.NumIn()-1:
	default:
		return false, fmt.Errorf("%s takes %d parameters, the handler %s takes %d after its Context", t, t.NumIn(), handler, handler.NumIn()-1)
	}
	for i := first; i < t.NumIn(); i++ {
		if want := handler.In(i + 1 - first); t.In(i) != want {
			return false, fmt.Errorf("parameter %d of %s is a %s where the handler takes a %s", i+1, t, t.In(i), want)
		}
	}
	return withCtx, nil
}

// decisionOf is the decision marker of a validation's outcome.
func decisionOf(rejection error) UpdateOutcome {
	var o UpdateOutcome
	if rejection != nil {
		o.Failure = sdkhook.EncodeFailure(rejection)
	}
	return o
}

// validateUpdate is for the worker (sdkhook.ValidateUpdate): it decides
// the update request payload for the workflow x runs, which has replayed
// the run's history, and returns the decision (an UpdateOutcome). The
// validator runs as a query handler does, while every coroutine is
// blocked; nothing is recorded. An update id the run has taken already is
// not validated again: its recorded decision is the one that counts.
func validateUpdate(x *replay.Execution, payload []byte) ([]byte, error) {
	var req UpdateRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("workflow: a malformed update request: %w", err)
	}
	if req.ID == "" || req.Name == "" {
		return nil, errors.New("workflow: an update request needs an id and a name")
	}
	var o UpdateOutcome
	st, started := x.Local().(*state)
	if !started {
		// The run is held back (a start delay, a cron run waiting for its
		// time): its code has set no handler yet. The update is admitted
		// and decided when the run starts and takes it.
		return json.Marshal(o)
	}
	if !st.upd.seen[req.ID] {
		h, args, rejection := st.updateCall(st.root, req)
		o = decisionOf(st.validate(st.root, req.Name, h, args, rejection))
	}
	return json.Marshal(o)
}

// updateOutcomeOf is the completion of an update whose handler returned
// through the interceptors.
func updateOutcomeOf(name string, hasResult bool, res any, err error) UpdateOutcome {
	var o UpdateOutcome
	switch {
	case err != nil:
		o.Failure = sdkhook.EncodeFailure(err)
	case hasResult:
		var encErr error
		if o.Result, encErr = converter.Encode(res); encErr != nil {
			o.Failure = sdkhook.EncodeFailure(fmt.Errorf("update %q: result: %w", name, encErr))
		}
	}
	return o
}

// decodeArgs decodes an update's arguments for a handler of type t, ctx first.
func decodeArgs(t reflect.Type, payload []byte, ctx Context) ([]reflect.Value, error) {
	args := []reflect.Value{reflect.ValueOf(ctx)}
	if t.NumIn() == 1 {
		return args, nil
	}
	ptrs := make([]any, t.NumIn()-1)
	for i := range ptrs {
		ptrs[i] = reflect.New(t.In(i + 1)).Interface()
	}
	if err := converter.Decode(payload, ptrs...); err != nil {
		for i := range ptrs {
			args = append(args, reflect.Zero(t.In(i+1)))
		}
		return args, errors.Join(errors.New("update arguments"), err)
	}
	for _, p := range ptrs {
		args = append(args, reflect.ValueOf(p).Elem())
	}
	return args, nil
}
