package workflow

import (
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/sdk/converter"
)

// Get blocks until another coroutine sets the future.
func TestFutureGetBlocksUntilSet(t *testing.T) {
	runTrace(t, "get; ready=false; set; got 42 <nil>", func(ctx Context, tr *trace) {
		f, s := NewFuture(ctx)
		Go(ctx, func(ctx Context) {
			tr.add("ready=%v", f.IsReady())
			tr.add("set")
			s.SetValue(42)
		})
		tr.add("get")
		var n int
		err := f.Get(ctx, &n)
		tr.add("got %d %v", n, err)
	})
}

// The worker sets futures between workflow tasks, outside any coroutine.
func TestFutureSetByWorker(t *testing.T) {
	var s Settable
	var got string
	h := start(t, func(ctx Context) {
		var f Future
		f, s = NewFuture(ctx)
		_ = f.Get(ctx, &got)
	})
	if h.env.d.Done() {
		t.Fatal("Get did not block")
	}
	s.SetValue("result")
	h.step()
	h.mustBeDone()
	if got != "result" {
		t.Fatalf("got %q", got)
	}
}

func TestFutureValuesAndErrors(t *testing.T) {
	ctx := testCtx(t)
	boom := errors.New("boom")

	f, s := NewFuture(ctx)
	s.Set(1, boom)
	n := -1
	if err := f.Get(ctx, &n); err != boom || n != -1 {
		t.Fatalf("Get = %v, n = %d; want the error and n untouched", err, n)
	}

	f, s = NewFuture(ctx)
	s.SetValue(nil)
	if err := f.Get(ctx, &n); err != nil || n != -1 {
		t.Fatalf("nil value: Get = %v, n = %d", err, n)
	}

	f, s = NewFuture(ctx)
	s.SetValue("text")
	if err := f.Get(ctx, nil); err != nil {
		t.Fatalf("Get(nil) = %v", err)
	}
	if err := f.Get(ctx, &n); err == nil || !strings.Contains(err.Error(), "cannot store a value of type string in a int") {
		t.Fatalf("mismatched Get = %v", err)
	}

	f, s = NewFuture(ctx)
	payload, _ := converter.Encode(signal{Customer: "ada", Amount: 3})
	s.SetValue(converter.NewEncodedValue(payload))
	var sig signal
	if err := f.Get(ctx, &sig); err != nil || sig.Customer != "ada" || sig.Amount != 3 {
		t.Fatalf("payload Get = %v, %+v", err, sig)
	}

	f, s = NewFuture(ctx)
	s.SetError(boom)
	if err := f.Get(ctx, nil); err != boom {
		t.Fatalf("SetError: Get = %v", err)
	}
}

// A future is set once; a second Set is a bug and panics, as in Temporal.
func TestSettableSetTwicePanics(t *testing.T) {
	ctx := testCtx(t)
	_, s := NewFuture(ctx)
	s.SetValue(1)
	if p := mustPanic(t, func() { s.SetError(errors.New("late")) }); !strings.Contains(p.(string), "already set") {
		t.Fatalf("panic %v", p)
	}
}

func TestChain(t *testing.T) {
	runTrace(t, "chained ready=false; source set; chained got ada", func(ctx Context, tr *trace) {
		src, srcSet := NewFuture(ctx)
		chained, chainedSet := NewFuture(ctx)
		chainedSet.Chain(src)
		tr.add("chained ready=%v", chained.IsReady())
		Go(ctx, func(ctx Context) {
			tr.add("source set")
			payload, _ := converter.Encode(signal{Customer: "ada"})
			srcSet.SetValue(converter.NewEncodedValue(payload))
		})
		var s signal
		if err := chained.Get(ctx, &s); err != nil {
			tr.add("error %v", err)
		}
		tr.add("chained got %s", s.Customer)
	})
}

func TestChainRules(t *testing.T) {
	ctx := testCtx(t)
	boom := errors.New("boom")
	ready, readySet := NewFuture(ctx)
	readySet.SetError(boom)
	f, s := NewFuture(ctx)
	s.Chain(ready)
	if !f.IsReady() || f.Get(ctx, nil) != boom {
		t.Fatal("chaining to a ready future did not copy its outcome")
	}

	pending, _ := NewFuture(ctx)
	_, s2 := NewFuture(ctx)
	s2.Chain(pending)
	for name, fn := range map[string]func(){
		"Set on a chained future": func() { s2.SetValue(1) },
		"Chain twice":             func() { s2.Chain(pending) },
		"Chain after Set":         func() { s.Chain(pending) },
		"Chain to itself": func() {
			f3, s3 := NewFuture(ctx)
			s3.Chain(f3)
		},
	} {
		p := mustPanic(t, fn)
		if !strings.Contains(p.(string), "workflow: Settable.") {
			t.Errorf("%s: panic %v", name, p)
		}
	}
}
