package workflow

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// ExecuteActivity asks for activity to be run with args and returns the
// future of its result. activity is the activity function (named by
// ActivityName) or its registered name as a string. The args are encoded
// with converter.Encode, and the command carries the ActivityOptions of
// ctx (see WithActivityOptions). With the context of an open session
// (CreateSession) the activity is sent to the session's worker; with that
// of a failed session the future fails with ErrSessionFailed at once.
//
// The future's Get decodes the activity's result into its value pointer,
// or returns a *temporal.ActivityError when the activity failed for good,
// whose cause is the activity's failure (*temporal.ApplicationError,
// *temporal.CanceledError, *temporal.TimeoutError or *temporal.PanicError). When ctx
// is cancelled before the result arrives, Get returns ErrCanceled at once;
// the activity itself learns of the cancellation through the worker (its
// heartbeat or its context), not from this call. An arg that cannot be
// encoded, or an invalid retry policy, fails the future without issuing
// anything.
func ExecuteActivity(ctx Context, activity any, args ...any) Future {
	if o := outboundOf(ctx); o != nil {
		if name := typeName(activity); name != "" {
			return o.ExecuteActivity(ctx, name, args...)
		}
	}
	return executeActivity(ctx, activity, args...)
}

func executeActivity(ctx Context, activity any, args ...any) Future {
	opts, err := sessionActivityOptions(ctx, activity, GetActivityOptions(ctx))
	if err != nil {
		f, set := newCommandFuture()
		set(nil, err)
		return f
	}
	if testEnvOf(ctx) != nil {
		opts.RetryPolicy = testRetryPolicy(opts.RetryPolicy)
	}
	return issueActivity(ctx, activity, args, sdkhook.Activity[ActivityOptions]{Options: opts})
}

// issueActivity issues an activity command with the options a: a's
// Options are checked, and its DependsOn filled in from them.
func issueActivity(ctx Context, activity any, args []any, a sdkhook.Activity[ActivityOptions]) Future {
	opts := a.Options
	st := stateOf(ctx)
	f, set := newCommandFuture()
	name, input, err := prepareCommand(ctx, "activity", activity, args)
	if err != nil {
		set(nil, err)
		return f
	}
	if err := opts.RetryPolicy.Validate(); err != nil {
		set(nil, fmt.Errorf("workflow: activity %s: %w", name, err))
		return f
	}
	if err := checkStepOptions(&opts, st.info.TaskQueue); err != nil {
		set(nil, fmt.Errorf("workflow: activity %s: %w", name, err))
		return f
	}
	a.Options, a.DependsOn = opts, dependencySteps(opts.DependsOn)
	cmd := st.x.Issue(replay.KindActivity, name, input, a, 0, func(r replay.Resolution) {
		if !r.Failed {
			set(converter.NewEncodedValue(r.Payload), nil)
			return
		}
		step := ""
		if r.Event != nil {
			step = r.Event.Step
		}
		set(nil, temporal.NewActivityError(name, step, sdkhook.DecodeFailure(r.Payload)))
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
