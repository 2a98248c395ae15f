package workflow

import "fmt"

// Selector is the workflow's replacement for Go's select statement: it
// waits for one of several channel operations or futures and runs the
// callback of exactly one.
//
// Choice rule: when Select runs (and again each time its coroutine gets a
// turn while it waits), the first ready case in the order the cases were
// added is chosen. Temporal chooses the same way when Select starts, but
// once it waits it takes the case that became ready first. Both rules are
// deterministic; this one also makes the choice independent of the order in
// which other coroutines happened to act within one round. The exception is
// a send case on a channel with no buffer room: when a receiver takes its
// value while Select waits, the value is already delivered, so that case is
// the one that runs.
//
// A receive case only reports that the channel has a value or is closed;
// the callback must call Receive (or ReceiveAsync) itself, and a value it
// does not take stays in the channel for the next receiver.
type Selector interface {
	// AddReceive adds a case that is ready when c has a value or is
	// closed; f gets c and more == false if it is closed and drained.
	AddReceive(c ReceiveChannel, f func(c ReceiveChannel, more bool)) Selector
	// AddSend adds a case that sends v on c when c can take it without
	// blocking, then calls f.
	AddSend(c SendChannel, v any, f func()) Selector
	// AddFuture adds a case that is ready when future is. It runs at most
	// once per Selector, however often Select is called, so a loop of
	// Selects over several futures handles each one once.
	AddFuture(future Future, f func(f Future)) Selector
	// AddDefault sets a callback that Select runs, without blocking, when
	// no case is ready.
	AddDefault(f func())
	// Select blocks until a case is ready, then runs its callback. As in
	// Temporal, cancelling ctx does not end the wait; add a receive case
	// on ctx.Done() for that.
	Select(ctx Context)
	// HasPending reports whether a case is ready, so that Select would
	// run a case callback without blocking. The default case does not
	// count.
	HasPending() bool
}

// NewSelector returns an empty Selector.
func NewSelector(ctx Context) Selector { return NewNamedSelector(ctx, "selector") }

// NewNamedSelector returns an empty Selector with a name for messages.
func NewNamedSelector(ctx Context, name string) Selector {
	envOf(ctx)
	return &selectorImpl{name: name}
}

type selectorImpl struct {
	name       string
	cases      []*selectCase
	hasDefault bool
	dflt       func()
}

// selectCase is one case; exactly one of recv, send and future is set.
type selectCase struct {
	recv   *channelImpl
	recvCh ReceiveChannel // as the caller passed it, for the callback
	recvFn func(c ReceiveChannel, more bool)

	send      *channelImpl
	sendValue any
	sendFn    func()

	future   *futureImpl
	futureFn func(f Future)
	fired    bool // the future case has run and is spent
}

// selectWait is one blocked Select, shared by the cases it registered on
// channels so that a counterpart can commit to it at most once.
type selectWait struct {
	claimed bool // a value was parked for it, or a send case was taken
	forced  int  // the send case whose value a receiver took, or -1
}

func (s *selectorImpl) AddReceive(c ReceiveChannel, f func(c ReceiveChannel, more bool)) Selector {
	s.cases = append(s.cases, &selectCase{recv: s.channel(c), recvCh: c, recvFn: f})
	return s
}

func (s *selectorImpl) AddSend(c SendChannel, v any, f func()) Selector {
	s.cases = append(s.cases, &selectCase{send: s.channel(c), sendValue: v, sendFn: f})
	return s
}

func (s *selectorImpl) AddFuture(future Future, f func(f Future)) Selector {
	fi, ok := future.(*futureImpl)
	if !ok {
		panic(fmt.Sprintf("workflow: %s: AddFuture of a %T; only futures made by this package can be selected", s.name, future))
	}
	s.cases = append(s.cases, &selectCase{future: fi, futureFn: f})
	return s
}

func (s *selectorImpl) AddDefault(f func()) {
	s.hasDefault, s.dflt = true, f
}

func (s *selectorImpl) channel(c any) *channelImpl {
	ci, ok := c.(*channelImpl)
	if !ok {
		panic(fmt.Sprintf("workflow: %s: a %T is not a channel made by this package", s.name, c))
	}
	return ci
}

func (s *selectorImpl) HasPending() bool { return s.firstReady(nil) >= 0 }

func (s *selectorImpl) Select(ctx Context) {
	d := envOf(ctx).Dispatcher()
	if i := s.firstReady(nil); i >= 0 {
		s.run(i)
		return
	}
	if s.hasDefault {
		if s.dflt != nil {
			s.dflt()
		}
		return
	}
	for {
		w := &selectWait{forced: -1}
		s.register(w)
		func() {
			defer s.unregister(w)
			d.Block(func() bool { return w.forced >= 0 || s.firstReady(w) >= 0 })
		}()
		if w.forced >= 0 {
			if f := s.cases[w.forced].sendFn; f != nil {
				f()
			}
			return
		}
		if i := s.firstReady(nil); i >= 0 {
			s.run(i)
			return
		}
	}
}

// firstReady returns the index of the first ready case, ignoring the
// Select's own registrations (self), or -1.
func (s *selectorImpl) firstReady(self *selectWait) int {
	for i, cs := range s.cases {
		switch {
		case cs.recv != nil:
			if cs.recv.canReceive(self) {
				return i
			}
		case cs.send != nil:
			if cs.send.canSend(self) {
				return i
			}
		default:
			if !cs.fired && cs.future.IsReady() {
				return i
			}
		}
	}
	return -1
}

// run performs ready case i and calls its callback.
func (s *selectorImpl) run(i int) {
	cs := s.cases[i]
	switch {
	case cs.recv != nil:
		c := cs.recv
		// Take a waiting sender's value now, so that the sender is released
		// even if the callback does not receive; the value waits in buf.
		if len(c.buf) == 0 {
			if v, ok := c.takeSender(); ok {
				c.buf = append(c.buf, v)
			}
		}
		more := len(c.buf) > 0 || !c.closed
		if cs.recvFn != nil {
			cs.recvFn(cs.recvCh, more)
		}
	case cs.send != nil:
		cs.send.mustBeOpen()
		if !cs.send.offer(cs.sendValue, false) {
			panic(fmt.Sprintf("workflow: %s: send case on channel %q chosen but it cannot send", s.name, cs.send.name))
		}
		if cs.sendFn != nil {
			cs.sendFn()
		}
	default:
		cs.fired = true
		if cs.futureFn != nil {
			cs.futureFn(cs.future)
		}
	}
}

// register puts the channel cases in the channels' queues while Select
// waits, so that a Send or another Select's send case can see a receiver,
// and a Receive or a receive case can take from a send case.
func (s *selectorImpl) register(w *selectWait) {
	for i, cs := range s.cases {
		switch {
		case cs.recv != nil:
			cs.recv.recvq = append(cs.recv.recvq, &recvWaiter{sel: w})
		case cs.send != nil:
			cs.send.sendq = append(cs.send.sendq, &sendWaiter{sel: w, caseIdx: i, value: cs.sendValue})
		}
	}
}

func (s *selectorImpl) unregister(w *selectWait) {
	for _, cs := range s.cases {
		switch {
		case cs.recv != nil:
			cs.recv.dropSelect(w)
		case cs.send != nil:
			cs.send.dropSelect(w)
		}
	}
}
