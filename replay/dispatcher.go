package replay

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// Dispatcher runs the coroutines of one workflow execution so that exactly
// one of them runs at any moment and they take turns in a fixed order. Each
// coroutine is a goroutine, but it only runs between a resume from the
// dispatcher and its next Block, so workflow code sees no real concurrency
// and the same history always yields the same interleaving.
//
// A Dispatcher is driven by one goroutine (the worker's). Coroutines must
// block only through Block (which every SDK primitive uses); blocking on
// anything else — a Go channel, a mutex, time.Sleep — is detected as a
// deadlock after DeadlockTimeout.
type Dispatcher struct {
	coroutines []*Coroutine
	nextID     int
	running    *Coroutine
	root       *Coroutine
	// closed is read by coroutines abandoned after a deadlock, hence atomic.
	closed atomic.Bool
	// broken holds the deadlock that left a coroutine running outside the
	// SDK; the dispatcher cannot give turns safely after it.
	broken error
	// DeadlockTimeout bounds how long one coroutine may run between two
	// Blocks; 0 means one second. It is the one wall-clock reading in
	// replay, a watchdog that never decides what the workflow does.
	DeadlockTimeout time.Duration
}

// Coroutine is one thread of workflow code.
type Coroutine struct {
	d      *Dispatcher
	name   string
	resume chan resumeMsg // run on, exit (the dispatcher is closing), or report the stack
	yield  chan yieldMsg  // the coroutine hands control back (room for one)
	cond   func() bool    // what the coroutine waits for; nil while running
	done   atomic.Bool
	err    error // a panic in the coroutine's code
}

type yieldMsg struct {
	progressed bool // it ran past a Block (or exited) since the resume
	// stack answers resumeStack: the coroutine's frames where it waits.
	stack []runtime.Frame
}

// resumeMsg is what the dispatcher hands a waiting coroutine.
type resumeMsg uint8

const (
	// resumeRun gives the coroutine its turn.
	resumeRun resumeMsg = iota
	// resumeExit unwinds it: the dispatcher is closing.
	resumeExit
	// resumeStack asks for its stack where it waits, and leaves it waiting
	// (the __stack_trace query); nothing of the workflow runs.
	resumeStack
)

// errExit unwinds a coroutine's stack when the dispatcher closes.
var errExit = errors.New("replay: coroutine exit")

// IsExit reports whether a value recovered from a panic is the unwinding of
// a closing coroutine, which SDK code that recovers panics of user code (an
// update's validator) must let go on.
func IsExit(recovered any) bool { return recovered == errExit }

// PanicError reports workflow code that panicked: the value and the stack.
type PanicError struct {
	Coroutine string
	Value     any
	Stack     string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("replay: workflow coroutine %q panicked: %v [%s]", e.Coroutine, e.Value, PanicCode)
}

// Code returns the stable code of PanicError.
func (e *PanicError) Code() string { return PanicCode }

// DeadlockError reports a coroutine that did not give control back within
// the dispatcher's DeadlockTimeout: workflow code blocked outside the SDK.
type DeadlockError struct {
	Coroutine string
	Timeout   time.Duration
	Stacks    string // all goroutines, to find the blocking call
}

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("replay: workflow coroutine %q did not yield within %v: it blocks outside the SDK "+
		"(a Go channel, mutex, time.Sleep or I/O) [%s]", e.Coroutine, e.Timeout, DeadlockCode)
}

// Code returns the stable code of DeadlockError.
func (e *DeadlockError) Code() string { return DeadlockCode }

// NewDispatcher returns a dispatcher whose first coroutine, "root", runs fn.
func NewDispatcher(fn func()) *Dispatcher {
	d := &Dispatcher{}
	d.root = d.Go("root", fn)
	return d
}

// Go adds a coroutine that runs fn; it first runs during the current or next
// ExecuteUntilAllBlocked, after the coroutines that exist already.
func (d *Dispatcher) Go(name string, fn func()) *Coroutine {
	if d.closed.Load() {
		// A deferred function of a closing coroutine: nothing runs any more.
		c := &Coroutine{d: d, name: name}
		c.done.Store(true)
		return c
	}
	if name == "" {
		name = fmt.Sprintf("coroutine-%d", d.nextID)
	}
	d.nextID++
	c := &Coroutine{d: d, name: name, resume: make(chan resumeMsg), yield: make(chan yieldMsg, 1)}
	d.coroutines = append(d.coroutines, c)
	go c.start(fn)
	return c
}

func (c *Coroutine) start(fn func()) {
	defer func() {
		r := recover()
		if r != nil && r != errExit {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.err = &PanicError{Coroutine: c.name, Value: r, Stack: string(buf)}
		}
		c.done.Store(true)
		// yield has room for one message, so this never blocks, even for
		// a coroutine the dispatcher abandoned after a deadlock.
		c.yield <- yieldMsg{progressed: true}
	}()
	if c.wait() == resumeExit {
		panic(errExit)
	}
	fn()
}

// wait parks the coroutine until the dispatcher gives it its turn or
// closes, answering the requests for its stack meanwhile. A coroutine
// that has not run yet answers with no frames.
func (c *Coroutine) wait() resumeMsg {
	for {
		m := <-c.resume
		if m != resumeStack {
			return m
		}
		var stack []runtime.Frame
		if c.cond != nil {
			stack = callerFrames()
		}
		c.yield <- yieldMsg{stack: stack}
	}
}

// Block makes the running coroutine wait until cond holds. cond is evaluated
// only while this coroutine has the turn, so it may read workflow state
// without locks. Block must be called from workflow code (a coroutine).
func (d *Dispatcher) Block(cond func() bool) {
	c := d.running
	if c == nil {
		panic("replay: Block called outside a workflow coroutine")
	}
	if d.closed.Load() {
		panic(errExit) // a deferred function of a closing coroutine
	}
	if cond() {
		return
	}
	c.cond = cond
	c.yield <- yieldMsg{progressed: true}
	for {
		if c.wait() == resumeExit {
			panic(errExit)
		}
		if cond() {
			c.cond = nil
			return
		}
		c.yield <- yieldMsg{progressed: false}
	}
}

// ExecuteUntilAllBlocked gives every coroutine turns, in creation order, until
// a full round makes no progress: every coroutine is blocked on a condition
// that does not hold, or done. It returns the first panic or deadlock.
func (d *Dispatcher) ExecuteUntilAllBlocked() error {
	if d.closed.Load() {
		return errors.New("replay: dispatcher is closed")
	}
	if d.broken != nil {
		return d.broken
	}
	timeout := d.DeadlockTimeout
	if timeout == 0 {
		timeout = time.Second
	}
	for {
		progressed := false
		for i := 0; i < len(d.coroutines); i++ { // Go may append during the round
			c := d.coroutines[i]
			if c.done.Load() {
				continue
			}
			d.running = c
			c.resume <- resumeRun
			msg, err := d.await(c, timeout)
			d.running = nil
			if err != nil {
				d.broken = err
				return err
			}
			if c.err != nil {
				return c.err
			}
			progressed = progressed || msg.progressed
		}
		d.compact()
		if !progressed {
			return nil
		}
	}
}

func (d *Dispatcher) await(c *Coroutine, timeout time.Duration) (yieldMsg, error) {
	select {
	case msg := <-c.yield:
		return msg, nil
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case msg := <-c.yield:
		return msg, nil
	case <-t.C:
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		return yieldMsg{}, &DeadlockError{Coroutine: c.name, Timeout: timeout, Stacks: string(buf)}
	}
}

// compact drops finished coroutines, keeping the order of the others.
func (d *Dispatcher) compact() {
	live := d.coroutines[:0]
	for _, c := range d.coroutines {
		if !c.done.Load() {
			live = append(live, c)
		}
	}
	for i := len(live); i < len(d.coroutines); i++ {
		d.coroutines[i] = nil
	}
	d.coroutines = live
}

// Done reports whether every coroutine has finished.
func (d *Dispatcher) Done() bool {
	for _, c := range d.coroutines {
		if !c.done.Load() {
			return false
		}
	}
	return true
}

// RootDone reports whether the first coroutine (the workflow function) has
// returned; others it started may still be blocked.
func (d *Dispatcher) RootDone() bool { return d.root.done.Load() }

// Close ends every coroutine that has not finished by unwinding its stack
// (deferred functions in workflow code run). A closed dispatcher runs no more.
// After a deadlock nothing is unwound: the coroutines are abandoned.
func (d *Dispatcher) Close() {
	if d.closed.Swap(true) {
		return
	}
	if d.broken != nil {
		// A coroutine still runs outside the SDK and may touch the
		// dispatcher at any time, so nothing here can be read safely:
		// abandon every coroutine (they stay parked; their memory is the
		// price of a deadlocked workflow).
		return
	}
	for _, c := range d.coroutines {
		if c.done.Load() {
			continue
		}
		d.running = c
		// Both waits are bounded: a deferred function that blocks outside
		// the SDK while unwinding must not hang the worker.
		select {
		case c.resume <- resumeExit:
			select {
			case <-c.yield:
			case <-time.After(100 * time.Millisecond):
			}
		case <-time.After(100 * time.Millisecond):
		}
		d.running = nil
	}
	d.coroutines = nil
}

// Stable codes of replay's typed errors.
const (
	NondeterminismCode = "HDL-REPLAY-1100"
	DeadlockCode       = "HDL-REPLAY-1101"
	PanicCode          = "HDL-REPLAY-1102"
)
