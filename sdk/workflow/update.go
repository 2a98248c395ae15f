package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
)

// Updates, as Temporal's: a client asks a running workflow to run a named
// handler with arguments and waits for its result. The request reaches the
// workflow as a signal named UpdateSignalName (so it is in the history, and
// a replay sees it at the same point); the handler runs in a coroutine of
// its own; the decision (accepted, or rejected by the validator) and the
// outcome are recorded in the history as markers keyed by the update id,
// which the client reads. A validator runs once, live, and must not change
// workflow state or block; a rejection changes nothing but its marker. On
// replay the recorded decision stands and the validator does not run.

// UpdateSignalName is the signal that carries update requests.
const UpdateSignalName = "heddle.update"

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
	// Validator, if set, is a func(ctx Context, args...) error taking the
	// handler's arguments: an error rejects the update before the handler
	// runs. It must not block or change workflow state.
	Validator any
}

type updateHandler struct {
	fn, validator reflect.Value
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
		t := v.Type()
		if v.Kind() != reflect.Func || t.NumIn() != fn.Type().NumIn() || t.NumOut() != 1 || t.Out(0) != errorType {
			return fmt.Errorf("workflow: the validator of update %q must be a func(ctx Context, <the handler's arguments>) error", name)
		}
		h.validator = v
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
		h, known := st.upd.handlers[req.Name]
		var args []reflect.Value
		var decodeErr error
		if known {
			args, decodeErr = decodeArgs(h.fn.Type(), req.Args, ctx)
		} else {
			names := make([]string, 0, len(st.upd.handlers))
			for n := range st.upd.handlers {
				names = append(names, n)
			}
			sort.Strings(names)
			decodeErr = fmt.Errorf("unknown update %v. KnownUpdates=%v", req.Name, names)
		}
		data, _, err := st.x.KeyedMarker(UpdateMarkerKey(req.ID, "decision"), "update_decision", func() ([]byte, error) {
			rejection := decodeErr
			if rejection == nil && st.in != nil {
				rejection = st.in.ValidateUpdate(ctx, req.Name, anyArgs(args[1:]))
			} else if rejection == nil && h.validator.IsValid() {
				if out := h.validator.Call(args); !out[0].IsNil() {
					rejection = out[0].Interface().(error)
				}
			}
			var o UpdateOutcome
			if rejection != nil {
				o.Failure = sdkhook.EncodeFailure(rejection)
			}
			return json.Marshal(o)
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
