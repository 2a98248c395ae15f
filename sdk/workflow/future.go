package workflow

import (
	"fmt"
)

// Future is a value that becomes available later, such as an activity's
// result.
type Future interface {
	// Get blocks until the future is ready, then returns its error, or
	// stores its value into valuePtr (nil discards it) with the rules of
	// Channel.Receive. A nil value leaves valuePtr alone. Unlike Receive,
	// Get returns a value that cannot be stored as an error. Cancelling ctx
	// does not end the wait, as in Temporal: whoever sets the future is
	// expected to set it with an error on cancellation.
	Get(ctx Context, valuePtr any) error
	// IsReady reports whether Get would return without blocking.
	IsReady() bool
}

// Settable makes a Future ready. A future is set exactly once; a second Set
// panics, as in Temporal, because two writers of one result is a bug that
// would otherwise make the outcome depend on which came first.
type Settable interface {
	// Set makes the future ready with value and err. The value may be a
	// converter.EncodedValue; Get then decodes it into the caller's type.
	Set(value any, err error)
	// SetValue is Set(value, nil).
	SetValue(value any)
	// SetError is Set(nil, err).
	SetError(err error)
	// Chain makes the future ready with whatever future is set to, now if
	// it is ready or else when it becomes ready. A chained future must not
	// be set directly.
	Chain(future Future)
}

// NewFuture returns a future and the Settable that makes it ready. Setting
// it needs no coroutine, so the worker can resolve a future as it applies
// history.
func NewFuture(ctx Context) (Future, Settable) {
	envOf(ctx)
	f := &futureImpl{}
	return f, f
}

type futureImpl struct {
	ready     bool
	value     any
	err       error
	chained   bool          // Chain was called; only the source may set it
	followers []*futureImpl // futures chained to this one, in Chain order
	// step is the step of the activity whose result the future is ("" for
	// any other future), for ActivityOptions.DependsOn.
	step string
}

var (
	_ Future   = (*futureImpl)(nil)
	_ Settable = (*futureImpl)(nil)
)

func (f *futureImpl) IsReady() bool { return f.ready }

func (f *futureImpl) Get(ctx Context, valuePtr any) error {
	d := envOf(ctx).Dispatcher()
	if !f.ready {
		d.Block(func() bool { return f.ready })
	}
	if f.err != nil {
		return f.err
	}
	if f.value == nil {
		return nil
	}
	if err := assign(f.value, valuePtr); err != nil {
		return fmt.Errorf("workflow: Future.Get: %w", err)
	}
	return nil
}

func (f *futureImpl) Set(value any, err error) {
	if f.ready {
		panic("workflow: Settable.Set on a future that is already set")
	}
	if f.chained {
		panic("workflow: Settable.Set on a chained future; the future it is chained to sets it")
	}
	f.resolve(value, err)
}

func (f *futureImpl) SetValue(value any) { f.Set(value, nil) }
func (f *futureImpl) SetError(err error) { f.Set(nil, err) }

func (f *futureImpl) Chain(future Future) {
	if f.ready || f.chained {
		panic("workflow: Settable.Chain on a future that is already set or chained")
	}
	src, ok := future.(*futureImpl)
	if cf, isChild := future.(*childFuture); isChild {
		// A child's result future can be chained too, as in Temporal (an
		// interceptor wrapping ExecuteChildWorkflow passes it on).
		src, ok = cf.futureImpl, true
	}
	if !ok {
		panic(fmt.Sprintf("workflow: Settable.Chain to a %T; only futures made by NewFuture or ExecuteChildWorkflow can be chained", future))
	}
	if src == f {
		panic("workflow: Settable.Chain of a future to itself")
	}
	f.chained = true
	if src.ready {
		f.resolve(src.value, src.err)
		return
	}
	src.followers = append(src.followers, f)
}

// resolve makes f ready and passes the raw value on to its followers, so a
// payload is decoded only by the Get that knows the target type.
func (f *futureImpl) resolve(value any, err error) {
	f.ready, f.value, f.err = true, value, err
	followers := f.followers
	f.followers = nil
	for _, x := range followers {
		x.resolve(value, err)
	}
}
