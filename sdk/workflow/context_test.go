package workflow

import (
	"strings"
	"testing"
	"time"
)

// WithCancel: cancelling ends an Await with ErrCanceled.
func TestAwaitReturnsErrCanceled(t *testing.T) {
	runTrace(t, "await; cancel; await returned canceled (IsCanceledError true, Err canceled)", func(ctx Context, tr *trace) {
		child, cancel := WithCancel(ctx)
		Go(ctx, func(ctx Context) {
			tr.add("cancel")
			cancel()
			cancel() // a second call does nothing
		})
		tr.add("await")
		err := Await(child, func() bool { return false })
		tr.add("await returned %v (IsCanceledError %v, Err %v)", err, IsCanceledError(err), child.Err())
	})
}

func TestAwaitCondition(t *testing.T) {
	runTrace(t, "await; set; await returned <nil>", func(ctx Context, tr *trace) {
		done := false
		Go(ctx, func(ctx Context) { tr.add("set"); done = true })
		tr.add("await")
		err := Await(ctx, func() bool { return done })
		tr.add("await returned %v", err)
	})
}

// The Done channel can be a Selector case, which is how workflow code waits
// for "this or cancellation".
func TestDoneInSelector(t *testing.T) {
	runTrace(t, "select; cancel; cancelled: more=false err=canceled", func(ctx Context, tr *trace) {
		child, cancel := WithCancel(ctx)
		never := NewChannel(ctx)
		Go(ctx, func(ctx Context) { tr.add("cancel"); cancel() })
		tr.add("select")
		NewSelector(ctx).
			AddReceive(never, func(ReceiveChannel, bool) { tr.add("never") }).
			AddReceive(child.Done(), func(c ReceiveChannel, more bool) {
				tr.add("cancelled: more=%v err=%v", more, child.Err())
			}).
			Select(ctx)
	})
}

// Cancelling a context cancels its descendants, not its parent; a context
// made from a cancelled parent starts cancelled.
func TestCancellationPropagates(t *testing.T) {
	ctx := testCtx(t)
	parent, cancelParent := WithCancel(ctx)
	child, _ := WithCancel(parent)
	grandchild, cancelGrandchild := WithCancel(WithValue(child, "k", "v"))
	cancelGrandchild()
	if grandchild.Err() != ErrCanceled || child.Err() != nil || parent.Err() != nil {
		t.Fatal("cancelling a child reached its parent")
	}
	sibling, _ := WithCancel(child)
	cancelParent()
	for name, c := range map[string]Context{"parent": parent, "child": child, "sibling": sibling} {
		if c.Err() != ErrCanceled {
			t.Errorf("%s not cancelled", name)
		}
		if ok, more := c.Done().ReceiveAsyncWithMoreFlag(nil); ok || more {
			t.Errorf("%s: Done not closed", name)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the root was cancelled by a child")
	}
	late, _ := WithCancel(parent)
	if late.Err() != ErrCanceled {
		t.Fatal("a child of a cancelled parent was not born cancelled")
	}
	if _, ok := late.Deadline(); ok {
		t.Fatal("a workflow context has a deadline")
	}
}

// A disconnected context keeps values but not cancellation, so clean-up
// can still wait after the workflow is cancelled.
func TestDisconnectedContext(t *testing.T) {
	type key struct{}
	runTrace(t, "workflow cancelled: canceled; clean-up ctx: <nil> value=order-7; clean-up done; own cancel: canceled",
		func(ctx Context, tr *trace) {
			ctx = WithValue(ctx, key{}, "order-7")
			workflowCtx, cancelWorkflow := WithCancel(ctx)
			cancelWorkflow()
			tr.add("workflow cancelled: %v", workflowCtx.Err())
			cleanup, cancelCleanup := NewDisconnectedContext(workflowCtx)
			inner, _ := WithCancel(cleanup)
			tr.add("clean-up ctx: %v value=%v", inner.Err(), inner.Value(key{}))
			if err := Await(inner, func() bool { return true }); err == nil {
				tr.add("clean-up done")
			}
			cancelCleanup()
			tr.add("own cancel: %v", inner.Err())
		})
}

// The worker cancels the whole workflow through the root's CancelFunc,
// between workflow tasks.
func TestWorkerCancelsRoot(t *testing.T) {
	var err error
	h := start(t, func(ctx Context) {
		err = Await(ctx, func() bool { return false })
	})
	h.cancel()
	h.step()
	h.mustBeDone()
	if err != ErrCanceled {
		t.Fatalf("Await = %v", err)
	}
}

func TestWithValue(t *testing.T) {
	type key string
	ctx := testCtx(t)
	a := WithValue(ctx, key("user"), "ada")
	b := WithValue(a, key("user"), "bob")
	c, _ := WithCancel(b)
	if a.Value(key("user")) != "ada" || c.Value(key("user")) != "bob" || c.Value(key("other")) != nil {
		t.Fatal("WithValue lookups wrong")
	}
	if p := mustPanic(t, func() { WithValue(ctx, nil, 1) }); !strings.Contains(p.(string), "nil key") {
		t.Fatalf("panic %v", p)
	}
	if p := mustPanic(t, func() { WithValue(ctx, []int{1}, 1) }); !strings.Contains(p.(string), "cannot be compared") {
		t.Fatalf("panic %v", p)
	}
}

type notWorkflowCtx struct{}

func (notWorkflowCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (notWorkflowCtx) Done() Channel               { return nil }
func (notWorkflowCtx) Err() error                  { return nil }
func (notWorkflowCtx) Value(any) any               { return nil }

func TestNonWorkflowContextPanics(t *testing.T) {
	for _, ctx := range []Context{nil, notWorkflowCtx{}} {
		if p := mustPanic(t, func() { NewChannel(ctx) }); !strings.Contains(p.(string), "pass the Context the workflow function received") {
			t.Fatalf("panic %v", p)
		}
	}
}

func TestNowAndIsReplaying(t *testing.T) {
	var now time.Time
	var replaying bool
	h := startErr(t, func(ctx Context) {
		now, replaying = Now(ctx), IsReplaying(ctx)
	})
	h.env.replaying = true
	h.step()
	if !now.Equal(epoch) || !replaying {
		t.Fatalf("Now = %v, IsReplaying = %v", now, replaying)
	}
}

// Go starts coroutines that run after the existing ones, in order.
func TestGoOrder(t *testing.T) {
	runTrace(t, "root; first; second; nested", func(ctx Context, tr *trace) {
		GoNamed(ctx, "first", func(ctx Context) {
			tr.add("first")
			Go(ctx, func(ctx Context) { tr.add("nested") })
		})
		Go(ctx, func(ctx Context) { tr.add("second") })
		tr.add("root")
	})
}
