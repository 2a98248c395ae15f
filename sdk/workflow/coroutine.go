package workflow

// Go starts f in a new coroutine, the workflow's replacement for the go
// statement. The coroutine first runs after the coroutines that exist
// already have had their turn, so the order is the same on every replay.
func Go(ctx Context, f func(ctx Context)) { GoNamed(ctx, "", f) }

// GoNamed is Go with a name that appears in panic and deadlock reports.
func GoNamed(ctx Context, name string, f func(ctx Context)) {
	if o := outboundOf(ctx); o != nil {
		o.Go(ctx, name, f)
		return
	}
	goNamed(ctx, name, f)
}

func goNamed(ctx Context, name string, f func(ctx Context)) {
	d := envOf(ctx).Dispatcher()
	d.Go(name, func() { f(ctx) })
}

// Await blocks until condition returns true, and returns nil, or until ctx
// is cancelled, and returns ErrCanceled. condition is re-evaluated only
// when the coroutine gets a turn, so it may read workflow state freely but
// must not block. If both hold, cancellation wins, as in Temporal.
func Await(ctx Context, condition func() bool) error {
	if o := outboundOf(ctx); o != nil {
		return o.Await(ctx, condition)
	}
	return await(ctx, condition)
}

func await(ctx Context, condition func() bool) error {
	d := envOf(ctx).Dispatcher()
	var err error
	d.Block(func() bool {
		if err = ctx.Err(); err != nil {
			return true
		}
		return condition()
	})
	return err
}
