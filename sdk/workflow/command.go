package workflow

import "github.com/heddlewf/heddle/replay"

// newCommandFuture returns the future of a command and the function that
// sets it; setting it again, as a result that arrives after a cancellation
// does, is ignored.
func newCommandFuture() (*futureImpl, func(value any, err error)) {
	f := &futureImpl{}
	return f, func(value any, err error) {
		if !f.ready {
			f.resolve(value, err)
		}
	}
}

// watchCancel watches ctx for a cancellation that comes before f is ready:
// it then marks cmd cancelled for the worker (replay's CancelRequested) and,
// unless wait is set, fails f with ErrCanceled at once. With wait
// (Temporal's WaitForCancellation) f is set by the command's own result:
// the activity or child reports how it ended after the cancellation. The
// wait runs in a coroutine of its own, so this happens even if nobody is
// blocked in f's Get (a Selector may be watching it).
func watchCancel(ctx Context, x *replay.Execution, cmd *replay.Command, f *futureImpl, wait bool) {
	if f.ready || ctx.Done() == nil {
		return // already set, or ctx cannot be cancelled
	}
	cancelled := func() {
		x.RequestCancel(cmd)
		if !wait && !f.ready {
			f.resolve(nil, ErrCanceled)
		}
	}
	if ctx.Err() != nil {
		cancelled()
		return
	}
	d := envOf(ctx).Dispatcher()
	d.Go("cancel-watch", func() {
		d.Block(func() bool { return f.ready || ctx.Err() != nil })
		if !f.ready {
			cancelled()
		}
	})
}
