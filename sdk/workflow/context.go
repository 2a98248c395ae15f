package workflow

import (
	"fmt"
	"reflect"
	"time"

	"github.com/heddlewf/heddle/sdk/temporal"
)

// Context carries cancellation and values through workflow code, like Go's
// context.Context, but its Done channel is a workflow Channel so that waiting
// on it goes through the dispatcher.
type Context interface {
	// Deadline reports when the context will be cancelled on its own; no
	// workflow context has one yet, so ok is false.
	Deadline() (deadline time.Time, ok bool)
	// Done is closed when the context is cancelled. Receive from it, or add
	// it to a Selector, to wait for cancellation.
	Done() Channel
	// Err is nil until the context is cancelled and ErrCanceled after.
	Err() error
	// Value returns the value stored under key by WithValue, or nil.
	Value(key any) any
}

// CancelFunc cancels a context and its descendants. Calling it again does
// nothing.
type CancelFunc func()

// ErrCanceled is what Err and Await return once a context is cancelled: a
// *temporal.CanceledError, as in Temporal. errors.Is(err, ErrCanceled)
// holds for every cancellation (an activity's or a child's too).
var ErrCanceled = temporal.NewCanceledError()

// IsCanceledError reports whether err is, or wraps, a
// *temporal.CanceledError.
func IsCanceledError(err error) bool { return temporal.IsCanceledError(err) }

// newRootContext returns the context a workflow function receives, carrying
// e for the primitives. The CancelFunc cancels the workflow as a whole. It is
// for the worker that starts the execution, not for workflow code.
func newRootContext(e execEnv) (Context, CancelFunc) {
	if e == nil {
		panic("workflow: newRootContext needs an execEnv")
	}
	return newCancelCtx(rootCtx{env: e}, true)
}

// WithValue returns a copy of parent in which key maps to val. The key
// should be of an unexported type so that packages cannot collide.
func WithValue(parent Context, key, val any) Context {
	if parent == nil {
		panic("workflow: WithValue on a nil Context")
	}
	if key == nil {
		panic("workflow: WithValue with a nil key")
	}
	if !reflect.TypeOf(key).Comparable() {
		panic(fmt.Sprintf("workflow: WithValue with a key of type %T, which cannot be compared", key))
	}
	return &valueCtx{Context: parent, key: key, val: val}
}

// WithCancel returns a child of parent with its own Done channel, cancelled
// when the returned CancelFunc is called or when parent is cancelled,
// whichever comes first.
func WithCancel(parent Context) (Context, CancelFunc) {
	if parent == nil {
		panic("workflow: WithCancel on a nil Context")
	}
	return newCancelCtx(parent, true)
}

// NewDisconnectedContext returns a context that keeps parent's values but
// not its cancellation. Workflow code uses it for clean-up that must still
// run after the workflow has been cancelled.
func NewDisconnectedContext(parent Context) (Context, CancelFunc) {
	if parent == nil {
		panic("workflow: NewDisconnectedContext on a nil Context")
	}
	return newCancelCtx(parent, false)
}

// rootCtx is the top of every workflow context tree; it only holds the execEnv.
type rootCtx struct{ env execEnv }

func (rootCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (rootCtx) Done() Channel               { return nil }
func (rootCtx) Err() error                  { return nil }
func (r rootCtx) Value(key any) any {
	if key == (envKey{}) {
		return r.env
	}
	return nil
}

type valueCtx struct {
	Context
	key, val any
}

func (c *valueCtx) Value(key any) any {
	if c.key == key {
		return c.val
	}
	return c.Context.Value(key)
}

// cancelCtxKey makes Value return the nearest cancelCtx, which is how a new
// child finds the context it must be cancelled with.
type cancelCtxKey struct{}

type cancelCtx struct {
	parent   Context
	done     *channelImpl
	err      error
	owner    *cancelCtx   // the cancelCtx that cancels this one, if connected
	children []*cancelCtx // kept in creation order so cancellation is ordered
}

func newCancelCtx(parent Context, connected bool) (*cancelCtx, CancelFunc) {
	c := &cancelCtx{parent: parent, done: newChannel("context-done", 0)}
	if connected {
		if owner, ok := parent.Value(cancelCtxKey{}).(*cancelCtx); ok {
			if owner.err != nil {
				c.cancel(owner.err)
			} else {
				c.owner = owner
				owner.children = append(owner.children, c)
			}
		}
	}
	return c, func() { c.cancel(ErrCanceled) }
}

func (c *cancelCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *cancelCtx) Done() Channel               { return c.done }
func (c *cancelCtx) Err() error                  { return c.err }

func (c *cancelCtx) Value(key any) any {
	if key == (cancelCtxKey{}) {
		return c
	}
	return c.parent.Value(key)
}

// cancel closes Done, then cancels the children. It needs no coroutine, so
// the worker may cancel the root between workflow tasks.
func (c *cancelCtx) cancel(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if !c.done.closed { // workflow code can reach Done().Close() too
		c.done.Close()
	}
	children := c.children
	c.children = nil
	for _, child := range children {
		child.owner = nil
		child.cancel(err)
	}
	if c.owner != nil {
		c.owner.removeChild(c)
		c.owner = nil
	}
}

func (c *cancelCtx) removeChild(child *cancelCtx) {
	for i, x := range c.children {
		if x == child {
			c.children = append(c.children[:i], c.children[i+1:]...)
			return
		}
	}
}
