package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"

	"github.com/heddlewf/heddle/internal/replay"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
)

// ExecuteActivity asks for activity to be run with args and returns the
// future of its result. activity is the activity function (named by
// ActivityName) or its registered name as a string. The args are encoded
// with converter.Encode, and the command carries the ActivityOptions of
// ctx (see WithActivityOptions).
//
// The future's Get decodes the activity's result into its value pointer,
// or returns an *ActivityError when the activity failed for good. When ctx
// is cancelled before the result arrives, Get returns ErrCanceled at once;
// the activity itself learns of the cancellation through the worker (its
// heartbeat or its context), not from this call. An arg that cannot be
// encoded, or an invalid retry policy, fails the future without issuing
// anything.
func ExecuteActivity(ctx Context, activity any, args ...any) Future {
	st := stateOf(ctx)
	f, set := newCommandFuture()
	name, input, err := prepareCommand(ctx, "activity", activity, args)
	if err != nil {
		set(nil, err)
		return f
	}
	opts := GetActivityOptions(ctx)
	if err := opts.RetryPolicy.Validate(); err != nil {
		set(nil, fmt.Errorf("workflow: activity %s: %w", name, err))
		return f
	}
	if err := checkStepOptions(&opts, st.info.TaskQueue); err != nil {
		set(nil, fmt.Errorf("workflow: activity %s: %w", name, err))
		return f
	}
	cmd := st.x.Issue(replay.KindActivity, name, input, opts, 0, func(r replay.Resolution) {
		if !r.Failed {
			set(converter.NewEncodedValue(r.Payload), nil)
			return
		}
		step := ""
		if r.Event != nil {
			step = r.Event.Step
		}
		set(nil, newActivityError(name, step, decodeFailure(r.Payload)))
	})
	f.step = cmd.Step
	watchCancel(ctx, st.x, cmd, f, opts.WaitForCancellation)
	return f
}

// ActivityName returns the name an activity function is known by: the
// name runtime.FuncForPC gives it, cut after the last "/" and then after
// the last ".", without the "-fm" of a method value. So
// "github.com/acme/shop/activities.ChargeCard" is "ChargeCard" and the
// method value (*Shop).Charge is "Charge". Anonymous functions get names
// like "func1", which are neither stable nor unique: register and call
// activities as named functions or methods, or by string name. The worker
// registers activities under this name so that ExecuteActivity(ctx, fn)
// finds them. A string is returned as it is.
func ActivityName(fn any) string {
	name, err := activityNameOf(fn)
	if err != nil {
		panic(err.Error())
	}
	return name
}

func activityNameOf(fn any) (string, error) {
	if s, ok := fn.(string); ok {
		if s == "" {
			return "", errors.New("workflow: empty activity name")
		}
		return s, nil
	}
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.Kind() != reflect.Func || v.IsNil() {
		return "", fmt.Errorf("workflow: an activity is a function or a name, not a %T", fn)
	}
	rf := runtime.FuncForPC(v.Pointer())
	if rf == nil {
		return "", fmt.Errorf("workflow: cannot name the activity function %T", fn)
	}
	full := rf.Name()
	name := full[strings.LastIndex(full, "/")+1:]
	name = name[strings.LastIndex(name, ".")+1:]
	return strings.TrimSuffix(name, "-fm"), nil
}

// ApplicationError is an activity's error as it crosses the history: a
// type, a message, and whether retrying can help.
type ApplicationError struct {
	Type         string
	Message      string
	NonRetryable bool
}

// NewApplicationError returns an error for an activity to fail with, with
// an explicit type (matched by RetryPolicy.NonRetryableErrorTypes).
func NewApplicationError(message, errType string, nonRetryable bool) *ApplicationError {
	return &ApplicationError{Type: errType, Message: message, NonRetryable: nonRetryable}
}

func (e *ApplicationError) Error() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// Is makes errors.Is(err, ErrCanceled) true for the failure of an activity
// or child that ended because it was cancelled (type "CanceledError"), and
// errors.Is(err, ErrReplan) for an activity whose critic decided to replan
// (type "ReplanError").
func (e *ApplicationError) Is(target error) bool {
	return target == ErrCanceled && e.Type == sdkhook.FailureCanceled || target == ErrReplan && e.Type == ReplanErrorType
}

// failure is the JSON form of a failure payload.
type failure struct {
	Type         string `json:"type"`
	Message      string `json:"message"`
	NonRetryable bool   `json:"nonRetryable"`
}

// encodeFailure writes err as a failure payload, the JSON object
// {"type": ..., "message": ..., "nonRetryable": bool}, for the worker to
// put in activity_failed (and attempt_failed) events. An *ApplicationError
// in err's chain gives the type and retryability, and the message is err's
// whole text (so what wrappers added is kept); any other error is of the type
// named by its Go type without package or pointer ("errorString" for
// errors.New), with its Error text, and retryable.
func encodeFailure(err error) []byte {
	if err == nil {
		err = errors.New("unknown failure")
	}
	f := failure{Message: err.Error()}
	var ae *ApplicationError
	var act *ActivityError
	switch {
	case errors.As(err, &ae):
		f = failure{Type: ae.Type, Message: ae.Message, NonRetryable: ae.NonRetryable}
		if error(ae) != err {
			f.Message = err.Error() // wrapped: keep what the wrappers said
		}
	case errors.As(err, &act):
		f = failure{Type: act.Type, Message: act.Message, NonRetryable: act.NonRetryable}
		if error(act) != err {
			f.Message = err.Error()
		}
	default:
		t := reflect.TypeOf(err)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		f.Type = t.Name()
	}
	b, mErr := json.Marshal(f)
	if mErr != nil { // cannot happen for three plain fields
		return []byte(`{"type":"","message":"unencodable failure"}`)
	}
	return b
}

// decodeFailure reads a failure payload written by encodeFailure as an
// *ApplicationError. A payload that is not such JSON becomes the message of
// an error of no type, so nothing the history holds is lost.
func decodeFailure(data []byte) error {
	var f failure
	if err := json.Unmarshal(data, &f); err != nil {
		return &ApplicationError{Message: string(data)}
	}
	return &ApplicationError{Type: f.Type, Message: f.Message, NonRetryable: f.NonRetryable}
}

// ActivityError is what an activity's future returns when the activity
// failed for good: which activity, at which step, and the failure it
// reported (Cause, an *ApplicationError, whose fields are copied here).
type ActivityError struct {
	ActivityName string
	Step         string
	Type         string
	Message      string
	NonRetryable bool
	Cause        error
}

func newActivityError(name, step string, cause error) *ActivityError {
	e := &ActivityError{ActivityName: name, Step: step, Cause: cause}
	var ae *ApplicationError
	if errors.As(cause, &ae) {
		e.Type, e.Message, e.NonRetryable = ae.Type, ae.Message, ae.NonRetryable
	} else if cause != nil {
		e.Message = cause.Error()
	}
	return e
}

func (e *ActivityError) Error() string {
	msg := e.Message
	if e.Type != "" {
		msg = e.Type + ": " + msg
	}
	return fmt.Sprintf("activity %s (step %s) failed: %s", e.ActivityName, e.Step, msg)
}

// Unwrap returns the failure the activity reported.
func (e *ActivityError) Unwrap() error { return e.Cause }

// prepareCommand names a command's function (or takes its string name) and
// encodes its arguments; a cancelled ctx gives ErrCanceled instead.
func prepareCommand(ctx Context, what string, fnOrName any, args []any) (string, []byte, error) {
	name, err := activityNameOf(fnOrName)
	if err != nil {
		return "", nil, err
	}
	if ctx.Err() != nil {
		return "", nil, ErrCanceled
	}
	input, err := converter.Encode(args...)
	if err != nil {
		return "", nil, fmt.Errorf("workflow: %s %s: %w", what, name, err)
	}
	return name, input, nil
}
