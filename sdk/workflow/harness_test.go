package workflow

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/replay"
)

// fakeEnv stands in for the replay execution: a dispatcher and a clock the
// test sets.
type fakeEnv struct {
	d         *replay.Dispatcher
	now       time.Time
	replaying bool
}

func (e *fakeEnv) Dispatcher() *replay.Dispatcher { return e.d }
func (e *fakeEnv) Now() time.Time                 { return e.now }
func (e *fakeEnv) IsReplaying() bool              { return e.replaying }

// harness runs one workflow function the way the worker will: in a new
// dispatcher, until every coroutine is blocked or done.
type harness struct {
	t      *testing.T
	env    *fakeEnv
	ctx    Context
	cancel CancelFunc // cancels the workflow, as the worker does
}

var epoch = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// start creates the execution and runs it until all coroutines block.
func start(t *testing.T, wf func(ctx Context)) *harness {
	t.Helper()
	h := startErr(t, wf)
	h.step()
	return h
}

// startErr creates the execution without running it.
func startErr(t *testing.T, wf func(ctx Context)) *harness {
	t.Helper()
	env := &fakeEnv{now: epoch}
	ctx, cancel := newRootContext(env)
	env.d = replay.NewDispatcher(func() { wf(ctx) })
	t.Cleanup(env.d.Close)
	return &harness{t: t, env: env, ctx: ctx, cancel: cancel}
}

// step runs until all coroutines are blocked, failing the test on a panic
// or deadlock.
func (h *harness) step() {
	h.t.Helper()
	if err := h.env.d.ExecuteUntilAllBlocked(); err != nil {
		h.t.Fatal(err)
	}
}

// stepPanic runs until all coroutines are blocked and returns the panic a
// coroutine raised.
func (h *harness) stepPanic() *replay.PanicError {
	h.t.Helper()
	err := h.env.d.ExecuteUntilAllBlocked()
	var pe *replay.PanicError
	if !errors.As(err, &pe) {
		h.t.Fatalf("error %v, want a coroutine panic", err)
	}
	return pe
}

func (h *harness) mustBeDone() {
	h.t.Helper()
	if !h.env.d.Done() {
		h.t.Fatal("the workflow did not finish")
	}
}

// trace records what workflow code did, in order.
type trace []string

func (tr *trace) add(format string, args ...any) { *tr = append(*tr, fmt.Sprintf(format, args...)) }

// runTrace runs wf to completion several times and checks that every run
// leaves the same trace, and that it is want.
func runTrace(t *testing.T, want string, wf func(ctx Context, tr *trace)) {
	t.Helper()
	var first trace
	for run := 0; run < 5; run++ {
		var tr trace
		h := start(t, func(ctx Context) { wf(ctx, &tr) })
		h.mustBeDone()
		if run == 0 {
			first = tr
			if got := strings.Join(tr, "; "); got != want {
				t.Fatalf("trace\n got: %s\nwant: %s", got, want)
			}
		} else if !reflect.DeepEqual(tr, first) {
			t.Fatalf("run %d trace %q differs from the first %q", run, tr, first)
		}
	}
}

// mustPanic runs f and returns what it panicked with.
func mustPanic(t *testing.T, f func()) (v any) {
	t.Helper()
	defer func() {
		v = recover()
		if v == nil {
			t.Fatal("did not panic")
		}
	}()
	f()
	return nil
}

// testCtx returns a workflow context for calls that need no coroutine.
func testCtx(t *testing.T) Context {
	ctx, _ := newRootContext(&fakeEnv{now: epoch})
	return ctx
}
