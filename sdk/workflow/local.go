package workflow

import (
	"errors"
	"reflect"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
)

// LocalActivityOptions say how long a local activity may run and how it is
// retried, as Temporal's do. ScheduleToCloseTimeout or StartToCloseTimeout
// is required.
type LocalActivityOptions struct {
	// ScheduleToCloseTimeout bounds the whole activity, retries included.
	ScheduleToCloseTimeout time.Duration
	// StartToCloseTimeout bounds one attempt.
	StartToCloseTimeout time.Duration
	// RetryPolicy says how failed attempts are retried; nil means the
	// defaults of RetryPolicy's zero value.
	RetryPolicy *RetryPolicy
}

type localActivityOptionsKey struct{}

// WithLocalActivityOptions returns a child of ctx whose local activities
// run with opts.
func WithLocalActivityOptions(ctx Context, opts LocalActivityOptions) Context {
	if opts.RetryPolicy != nil {
		rp := *opts.RetryPolicy
		rp.NonRetryableErrorTypes = append([]string(nil), rp.NonRetryableErrorTypes...)
		opts.RetryPolicy = &rp
	}
	return WithValue(ctx, localActivityOptionsKey{}, opts)
}

// GetLocalActivityOptions returns the local activity options set on ctx,
// or the zero value.
func GetLocalActivityOptions(ctx Context) LocalActivityOptions {
	opts, _ := ctx.Value(localActivityOptionsKey{}).(LocalActivityOptions)
	return opts
}

// ExecuteLocalActivity runs activity in the workflow's own worker and
// returns the future of its result. activity is a function, which need
// not be registered (the worker calls it as it is), or the name of a
// registered activity. The options are the LocalActivityOptions of ctx.
//
// In heddle every activity of the workflow's own task queue already runs
// in the workflow's worker, and its result is one committed step; a local
// activity is such an activity, recorded the same way (activity.Info's
// IsLocalActivity tells it apart). Its future behaves as ExecuteActivity's.
// Options without ScheduleToCloseTimeout and StartToCloseTimeout fail the
// future without running anything, as in Temporal.
func ExecuteLocalActivity(ctx Context, activity any, args ...any) Future {
	if o := outboundOf(ctx); o != nil {
		if name := typeName(activity); name != "" {
			if _, isName := activity.(string); !isName {
				ctx = WithValue(ctx, localFnKey{}, localFn{name: name, fn: activity})
			}
			return o.ExecuteLocalActivity(ctx, name, args...)
		}
	}
	return executeLocalActivity(ctx, activity, args...)
}

func executeLocalActivity(ctx Context, activity any, args ...any) Future {
	lo := GetLocalActivityOptions(ctx)
	if lo.ScheduleToCloseTimeout <= 0 && lo.StartToCloseTimeout <= 0 {
		f, set := newCommandFuture()
		set(nil, errors.New("workflow: local activity: LocalActivityOptions need a ScheduleToCloseTimeout or a StartToCloseTimeout"))
		return f
	}
	opts := ActivityOptions{ScheduleToCloseTimeout: lo.ScheduleToCloseTimeout, StartToCloseTimeout: lo.StartToCloseTimeout,
		RetryPolicy: lo.RetryPolicy}
	var fn any
	if v := reflect.ValueOf(activity); v.Kind() == reflect.Func && !v.IsNil() {
		fn = activity
	}
	return issueActivity(ctx, activity, args, sdkhook.Activity[ActivityOptions]{Options: opts, Local: true, LocalFn: fn})
}
