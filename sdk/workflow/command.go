package workflow

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

// watchCancel sets f to ErrCanceled when ctx is cancelled before f is
// ready. The wait runs in a coroutine of its own, so the future is set even
// if nobody is blocked in its Get (a Selector may be watching it).
func watchCancel(ctx Context, f *futureImpl) {
	if f.ready {
		return
	}
	if ctx.Err() != nil {
		f.resolve(nil, ErrCanceled)
		return
	}
	if ctx.Done() == nil {
		return // cannot be cancelled
	}
	d := envOf(ctx).Dispatcher()
	d.Go("cancel-watch", func() {
		d.Block(func() bool { return f.ready || ctx.Err() != nil })
		if !f.ready {
			f.resolve(nil, ErrCanceled)
		}
	})
}
