package workflow

import (
	"bytes"
	"fmt"

	"github.com/heddlewf/heddle/sdk/converter"
)

// ReceiveChannel is the receiving half of a Channel.
type ReceiveChannel interface {
	// Name returns the name given at creation, used in error messages.
	Name() string
	// Receive blocks until a value arrives or the channel is closed and
	// drained. It stores the value into valuePtr (nil discards it) and
	// returns true, or returns false, leaving valuePtr alone, once the
	// channel is closed and empty. As in Temporal, cancelling ctx does not
	// end the wait; select on ctx.Done() for that.
	Receive(ctx Context, valuePtr any) (more bool)
	// ReceiveAsync receives a value if one is available without blocking.
	ReceiveAsync(valuePtr any) (ok bool)
	// ReceiveAsyncWithMoreFlag is ReceiveAsync that also reports, as more
	// == false, that the channel is closed and drained.
	ReceiveAsyncWithMoreFlag(valuePtr any) (ok bool, more bool)
	// Len returns the number of buffered values plus blocked senders.
	Len() int
}

// SendChannel is the sending half of a Channel.
type SendChannel interface {
	// Name returns the name given at creation, used in error messages.
	Name() string
	// Send blocks until the value is taken: on an unbuffered channel until
	// a receiver takes it, on a buffered one until there is room. Sending on
	// a closed channel panics, as it does in Go. Cancelling ctx does not end
	// the wait.
	Send(ctx Context, v any)
	// SendAsync sends only if that needs no waiting, and reports whether
	// it did.
	SendAsync(v any) (ok bool)
	// Close marks the channel as closed; receivers drain what is buffered
	// and then see more == false. Closing twice panics.
	Close()
}

// Channel is the workflow's replacement for a Go channel: it holds Go
// values, hands them over in FIFO order, and blocks only through the
// dispatcher, so the order in which coroutines exchange values is the same
// on every replay.
//
// Receivers store values with the rules of assignment: the target must be
// of the value's type, a type it is assignable to, or any. A payload
// delivered by deliverToChannel (or sent as a converter.EncodedValue) is
// decoded with the converter into the target instead. A value that cannot
// be stored makes Receive panic, as in Temporal, because the channel has no
// way to return the error and dropping the value would lose it silently.
type Channel interface {
	SendChannel
	ReceiveChannel
}

// NewChannel returns an unbuffered channel.
func NewChannel(ctx Context) Channel { return NewNamedBufferedChannel(ctx, "", 0) }

// NewNamedChannel returns an unbuffered channel with a name for messages.
func NewNamedChannel(ctx Context, name string) Channel {
	return NewNamedBufferedChannel(ctx, name, 0)
}

// NewBufferedChannel returns a channel that holds up to size values before
// Send blocks.
func NewBufferedChannel(ctx Context, size int) Channel {
	return NewNamedBufferedChannel(ctx, "", size)
}

// NewNamedBufferedChannel returns a buffered channel with a name for
// messages.
func NewNamedBufferedChannel(ctx Context, name string, size int) Channel {
	envOf(ctx) // a channel outside a workflow could never be waited on
	if size < 0 {
		panic(fmt.Sprintf("workflow: channel %q with negative buffer size %d", name, size))
	}
	if name == "" {
		name = "channel"
	}
	return newChannel(name, size)
}

// deliverToChannel appends a payload written by converter.Encode to ch
// without blocking and without regard to its buffer size, so that the
// worker can hand a signal to the workflow from outside any coroutine. The
// payload is copied. A receiver decodes it into its value pointer. It is
// for the SDK's signal delivery, not for workflow code, and it fails if ch
// was not made by this package or is closed.
func deliverToChannel(ch Channel, payload []byte) error {
	c, ok := ch.(*channelImpl)
	if !ok {
		return fmt.Errorf("workflow: deliverToChannel: a %T is not a channel made by this package", ch)
	}
	if c.closed {
		return fmt.Errorf("workflow: deliverToChannel: channel %q is closed", c.name)
	}
	c.offer(converter.NewEncodedValue(bytes.Clone(payload)), true)
	return nil
}

// channelImpl is the one Channel implementation. Waiting parties are kept
// in queues so that a value moves between coroutines in a fixed order:
//
//   - buf holds values sent but not yet received. It may hold more than
//     size: deliveries from the worker are unbounded, and a value sent to a
//     blocked Select is parked here until the Select's callback receives it.
//   - recvq holds blocked Receive calls, which a sender hands its value to
//     directly, and the receive cases of blocked Selects.
//   - sendq holds blocked Send calls and the send cases of blocked Selects,
//     whose values a receiver takes directly.
type channelImpl struct {
	name   string
	size   int
	buf    []any
	closed bool
	recvq  []*recvWaiter
	sendq  []*sendWaiter
}

// recvWaiter is a blocked Receive (sel == nil) or a Select's receive case.
type recvWaiter struct {
	sel   *selectWait
	value any
	done  bool // a sender handed over value
}

// sendWaiter is a blocked Send (sel == nil) or a Select's send case.
type sendWaiter struct {
	sel     *selectWait
	caseIdx int
	value   any
	done    bool // a receiver took value
}

// live reports whether r can still be handed a value by anyone but self.
func (r *recvWaiter) live(self *selectWait) bool {
	if r.sel == nil {
		return !r.done
	}
	return r.sel != self && !r.sel.claimed
}

// live reports whether s's value can still be taken by anyone but self.
func (s *sendWaiter) live(self *selectWait) bool {
	if s.sel == nil {
		return !s.done
	}
	return s.sel != self && !s.sel.claimed
}

var _ Channel = (*channelImpl)(nil)

func newChannel(name string, size int) *channelImpl {
	return &channelImpl{name: name, size: size}
}

func (c *channelImpl) Name() string { return c.name }

func (c *channelImpl) Len() int {
	n := len(c.buf)
	for _, s := range c.sendq {
		if s.live(nil) {
			n++
		}
	}
	return n
}

func (c *channelImpl) Receive(ctx Context, valuePtr any) (more bool) {
	d := envOf(ctx).Dispatcher()
	v, ok, more := c.receiveAsync()
	if !ok && more {
		w := &recvWaiter{}
		c.recvq = append(c.recvq, w)
		func() {
			defer c.dropReceiver(w)
			// Besides a direct hand-over, wake when a value is parked in
			// buf: one a Select was promised but left for others.
			d.Block(func() bool { return w.done || c.canReceive(nil) })
		}()
		if w.done {
			v, ok, more = w.value, true, true
		} else {
			v, ok, more = c.receiveAsync()
		}
	}
	if ok {
		c.store(v, valuePtr)
	}
	return more
}

func (c *channelImpl) ReceiveAsync(valuePtr any) (ok bool) {
	ok, _ = c.ReceiveAsyncWithMoreFlag(valuePtr)
	return ok
}

func (c *channelImpl) ReceiveAsyncWithMoreFlag(valuePtr any) (ok bool, more bool) {
	v, ok, more := c.receiveAsync()
	if ok {
		c.store(v, valuePtr)
	}
	return ok, more
}

func (c *channelImpl) Send(ctx Context, v any) {
	d := envOf(ctx).Dispatcher()
	c.mustBeOpen()
	if c.offer(v, false) {
		return
	}
	w := &sendWaiter{value: v}
	c.sendq = append(c.sendq, w)
	func() {
		defer c.dropSender(w)
		d.Block(func() bool { return w.done || c.closed })
	}()
	if !w.done {
		panic(fmt.Sprintf("workflow: channel %q was closed while a Send waited on it", c.name))
	}
}

func (c *channelImpl) SendAsync(v any) (ok bool) {
	c.mustBeOpen()
	return c.offer(v, false)
}

func (c *channelImpl) Close() {
	if c.closed {
		panic(fmt.Sprintf("workflow: close of closed channel %q", c.name))
	}
	c.closed = true
	// Blocked Receives see the close through canReceive; blocked Sends
	// through c.closed, and panic in their own coroutine.
}

func (c *channelImpl) mustBeOpen() {
	if c.closed {
		panic(fmt.Sprintf("workflow: send on closed channel %q", c.name))
	}
}

func (c *channelImpl) store(v any, valuePtr any) {
	if err := assign(v, valuePtr); err != nil {
		panic(fmt.Errorf("workflow: receive from channel %q: %w", c.name, err))
	}
}

// canReceive reports whether a receive would not block, not counting a
// Select's own send cases (self).
func (c *channelImpl) canReceive(self *selectWait) bool {
	return len(c.buf) > 0 || c.closed || c.firstSender(self) >= 0
}

// canSend reports whether a send would not block (or would panic, on a
// closed channel), not counting a Select's own receive cases (self).
func (c *channelImpl) canSend(self *selectWait) bool {
	return c.closed || len(c.buf) < c.size || c.firstReceiver(self) >= 0
}

func (c *channelImpl) firstReceiver(self *selectWait) int {
	for i, r := range c.recvq {
		if r.live(self) {
			return i
		}
	}
	return -1
}

func (c *channelImpl) firstSender(self *selectWait) int {
	if c.closed {
		return -1 // blocked senders are about to panic; their values are not delivered
	}
	for i, s := range c.sendq {
		if s.live(self) {
			return i
		}
	}
	return -1
}

// offer sends v if that needs no waiting: to the first waiting receiver,
// else into the buffer if there is room or unbounded is set. A blocked
// Receive gets v directly. A blocked Select is only promised it: v is
// parked in buf and the Select, now claimed, wakes and chooses a case by
// its own rule; whatever it does not receive stays in the channel.
func (c *channelImpl) offer(v any, unbounded bool) bool {
	if i := c.firstReceiver(nil); i >= 0 {
		r := c.recvq[i]
		if r.sel == nil {
			r.value, r.done = v, true
			c.recvq = append(c.recvq[:i], c.recvq[i+1:]...)
		} else {
			r.sel.claimed = true
			c.buf = append(c.buf, v)
		}
		return true
	}
	if unbounded || len(c.buf) < c.size {
		c.buf = append(c.buf, v)
		return true
	}
	return false
}

// takeSender takes the value of the first waiting sender. A blocked Send
// is released; a blocked Select is claimed and must run that send case.
func (c *channelImpl) takeSender() (any, bool) {
	i := c.firstSender(nil)
	if i < 0 {
		return nil, false
	}
	s := c.sendq[i]
	if s.sel == nil {
		s.done = true
		c.sendq = append(c.sendq[:i], c.sendq[i+1:]...)
	} else {
		s.sel.claimed = true
		s.sel.forced = s.caseIdx
	}
	return s.value, true
}

// receiveAsync takes the next value in FIFO order: buffered values first,
// then waiting senders. A freed buffer slot is refilled from the waiting
// senders in order, which is what releases a Send blocked on a full
// buffer. more is false once the channel is closed and drained.
func (c *channelImpl) receiveAsync() (v any, ok bool, more bool) {
	if len(c.buf) > 0 {
		v = c.buf[0]
		c.buf[0] = nil
		c.buf = c.buf[1:]
		for len(c.buf) < c.size {
			sv, ok := c.takeSender()
			if !ok {
				break
			}
			c.buf = append(c.buf, sv)
		}
		return v, true, true
	}
	if v, ok := c.takeSender(); ok {
		return v, true, true
	}
	return nil, false, !c.closed
}

func (c *channelImpl) dropReceiver(w *recvWaiter) {
	for i, r := range c.recvq {
		if r == w {
			c.recvq = append(c.recvq[:i], c.recvq[i+1:]...)
			return
		}
	}
}

func (c *channelImpl) dropSender(w *sendWaiter) {
	for i, s := range c.sendq {
		if s == w {
			c.sendq = append(c.sendq[:i], c.sendq[i+1:]...)
			return
		}
	}
}

// dropSelect removes every case a Select registered on c.
func (c *channelImpl) dropSelect(w *selectWait) {
	recvq := c.recvq[:0]
	for _, r := range c.recvq {
		if r.sel != w {
			recvq = append(recvq, r)
		}
	}
	clear(c.recvq[len(recvq):])
	c.recvq = recvq
	sendq := c.sendq[:0]
	for _, s := range c.sendq {
		if s.sel != w {
			sendq = append(sendq, s)
		}
	}
	clear(c.sendq[len(sendq):])
	c.sendq = sendq
}
