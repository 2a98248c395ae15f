package worker

import (
	"context"
	"errors"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// activitySlot waits for a free place under
// Options.MaxConcurrentActivityExecutionSize and returns its release. Local
// activities are not counted, as in Temporal, where they have a bound of
// their own. A context that ends while waiting ends the wait with its
// error, which the caller treats as the try's.
func (w *queueWorker) activitySlot(ctx context.Context, local bool) (release func(), err error) {
	if w.activitySlots == nil || local {
		return func() {}, nil
	}
	select {
	case w.activitySlots <- struct{}{}:
		return func() { <-w.activitySlots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// backgroundActivityContext gives an activity's context the values of
// Options.BackgroundActivityContext (the activity's own values first) and
// cancels it when that context is cancelled. The returned stop must be
// called when the try ends.
func (w *queueWorker) backgroundActivityContext(ctx context.Context) (context.Context, func()) {
	bg := w.opts.BackgroundActivityContext
	if bg == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(valuesFrom{Context: ctx, values: bg})
	stop := context.AfterFunc(bg, func() { cancel(context.Cause(bg)) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// valuesFrom is a context that looks a key up in values when its own
// chain does not have it.
type valuesFrom struct {
	context.Context
	values context.Context
}

// Value returns the context's own value for key, else values'.
func (c valuesFrom) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// fatal reports whether a claim error means the service will never serve
// this worker again, so that polling on would only spin: the node refused
// the client's credentials.
func fatal(err error) bool {
	return errors.Is(err, httpapi.ErrUnauthorized)
}
