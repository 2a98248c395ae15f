package workflow

import (
	"strings"
	"testing"

	"github.com/heddlewf/heddle/sdk/converter"
)

// On an unbuffered channel a Send hands its value to a Receive that is
// already waiting and goes on; with no receiver waiting it blocks until
// one comes.
func TestUnbufferedProducerConsumer(t *testing.T) {
	runTrace(t, "consumer receives; send 1; sent 1; send 2; got 1; consumer receives; got 2; consumer receives; "+
		"sent 2; send 3; sent 3; closed; got 3; consumer receives; drained",
		func(ctx Context, tr *trace) {
			ch := NewNamedChannel(ctx, "items")
			GoNamed(ctx, "producer", func(ctx Context) {
				for i := 1; i <= 3; i++ {
					tr.add("send %d", i)
					ch.Send(ctx, i)
					tr.add("sent %d", i)
				}
				ch.Close()
				tr.add("closed")
			})
			for {
				var v int
				tr.add("consumer receives")
				if !ch.Receive(ctx, &v) {
					tr.add("drained")
					return
				}
				tr.add("got %d", v)
			}
		})
}

// A buffered channel lets the producer run ahead by the buffer size; a
// Send on a full buffer blocks until a receive frees a slot. Len counts the
// buffered values and the blocked Send.
func TestBufferedProducerConsumer(t *testing.T) {
	runTrace(t, "consumer receives; send 1; sent 1; send 2; sent 2; send 3; sent 3; send 4; "+
		"got 1 (len 3); got 2 (len 2); got 3 (len 1); got 4 (len 0); sent 4; closed; drained",
		func(ctx Context, tr *trace) {
			ch := NewBufferedChannel(ctx, 2)
			Go(ctx, func(ctx Context) {
				for i := 1; i <= 4; i++ {
					tr.add("send %d", i)
					ch.Send(ctx, i)
					tr.add("sent %d", i)
				}
				ch.Close()
				tr.add("closed")
			})
			tr.add("consumer receives")
			var v int
			for ch.Receive(ctx, &v) {
				tr.add("got %d (len %d)", v, ch.Len())
			}
			tr.add("drained")
		})
}

func TestAsyncOperations(t *testing.T) {
	ctx := testCtx(t)
	unbuf := NewChannel(ctx)
	if unbuf.SendAsync(1) {
		t.Fatal("SendAsync on an unbuffered channel with no receiver succeeded")
	}
	buf := NewNamedBufferedChannel(ctx, "b", 2)
	if !buf.SendAsync("a") || !buf.SendAsync("b") || buf.SendAsync("c") {
		t.Fatal("SendAsync ignored the buffer size")
	}
	var s string
	if ok, more := buf.ReceiveAsyncWithMoreFlag(&s); !ok || !more || s != "a" {
		t.Fatalf("ReceiveAsyncWithMoreFlag = %v, %v, %q", ok, more, s)
	}
	if !buf.ReceiveAsync(&s) || s != "b" {
		t.Fatalf("ReceiveAsync got %q", s)
	}
	if ok, more := buf.ReceiveAsyncWithMoreFlag(&s); ok || !more {
		t.Fatalf("empty open channel: ReceiveAsyncWithMoreFlag = %v, %v", ok, more)
	}
}

// Close lets receivers drain what is buffered; after that Receive returns
// false and leaves the target alone. Sending on or closing a closed
// channel panics, as in Go.
func TestCloseSemantics(t *testing.T) {
	ctx := testCtx(t)
	ch := NewNamedBufferedChannel(ctx, "jobs", 3)
	ch.SendAsync(1)
	ch.SendAsync(2)
	ch.Close()
	var got []int
	for {
		v := -1
		ok, more := ch.ReceiveAsyncWithMoreFlag(&v)
		if !ok {
			if more || v != -1 {
				t.Fatalf("closed, drained channel: more = %v, v = %d", more, v)
			}
			break
		}
		got = append(got, v)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("drained %v, want [1 2]", got)
	}
	if p := mustPanic(t, func() { ch.SendAsync(3) }); !strings.Contains(p.(string), `send on closed channel "jobs"`) {
		t.Fatalf("panic %v", p)
	}
	if p := mustPanic(t, func() { ch.Close() }); !strings.Contains(p.(string), `close of closed channel "jobs"`) {
		t.Fatalf("panic %v", p)
	}
	if err := deliverToChannel(ch, []byte(`[1]`)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("deliverToChannel on a closed channel: %v", err)
	}
}

// A Receive blocked on a channel wakes with more == false when it closes.
func TestCloseWakesBlockedReceiver(t *testing.T) {
	var tr trace
	h := start(t, func(ctx Context) {
		ch := NewChannel(ctx)
		Go(ctx, func(ctx Context) { tr.add("close"); ch.Close() })
		v := "unchanged"
		more := ch.Receive(ctx, &v)
		tr.add("more=%v v=%s", more, v)
	})
	h.mustBeDone()
	if got := strings.Join(tr, "; "); got != "close; more=false v=unchanged" {
		t.Fatalf("trace %s", got)
	}
}

// A Send still blocked when its channel is closed panics in its own
// coroutine, as a blocked Go send does.
func TestCloseWithBlockedSenderPanics(t *testing.T) {
	h := startErr(t, func(ctx Context) {
		ch := NewNamedChannel(ctx, "orders")
		Go(ctx, func(ctx Context) { ch.Close() })
		ch.Send(ctx, 1)
	})
	pe := h.stepPanic()
	if !strings.Contains(pe.Error(), `channel "orders" was closed while a Send waited on it`) {
		t.Fatalf("panic %v", pe)
	}
}

type signal struct {
	Customer string `json:"customer"`
	Amount   int    `json:"amount"`
}

// The worker delivers signal payloads into a channel from outside any
// coroutine; Receive decodes them into the workflow's type, in order, and
// the delivery ignores the buffer size.
func TestDeliverToChannelDecodesPayload(t *testing.T) {
	var ch Channel
	var got []signal
	h := start(t, func(ctx Context) {
		ch = NewNamedChannel(ctx, "payments")
		for i := 0; i < 3; i++ {
			var s signal
			ch.Receive(ctx, &s)
			got = append(got, s)
		}
	})
	for i, name := range []string{"ada", "bob", "cy"} {
		payload, err := converter.Encode(signal{Customer: name, Amount: 10 * (i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		if err := deliverToChannel(ch, payload); err != nil {
			t.Fatal(err)
		}
	}
	if ch.Len() != 2 {
		t.Fatalf("Len = %d after three deliveries to a waiting receiver, want 2", ch.Len())
	}
	h.step()
	h.mustBeDone()
	want := []signal{{"ada", 10}, {"bob", 20}, {"cy", 30}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("received %+v, want %+v", got, want)
		}
	}
}

// A payload can also be received undecoded, or into any.
func TestDeliveredPayloadTargets(t *testing.T) {
	ctx := testCtx(t)
	ch := NewChannel(ctx)
	payload, _ := converter.Encode(signal{Customer: "ada"})
	for range 3 {
		if err := deliverToChannel(ch, payload); err != nil {
			t.Fatal(err)
		}
	}
	var ev converter.EncodedValue
	if !ch.ReceiveAsync(&ev) || string(converter.DataOf(ev)) != string(payload) {
		t.Fatalf("EncodedValue target got %q", converter.DataOf(ev))
	}
	var a any
	if !ch.ReceiveAsync(&a) || a.(map[string]any)["customer"] != "ada" {
		t.Fatalf("any target got %#v", a)
	}
	if !ch.ReceiveAsync(nil) || ch.Len() != 0 {
		t.Fatal("a nil target did not discard the value")
	}
	if err := deliverToChannel(nil, payload); err == nil {
		t.Fatal("deliverToChannel accepted a nil channel")
	}
}

// A value that cannot be stored in the target makes Receive panic with the
// channel's name, since Receive has no error to return.
func TestReceiveTypeMismatchPanics(t *testing.T) {
	ctx := testCtx(t)
	ch := NewNamedBufferedChannel(ctx, "counts", 2)
	ch.SendAsync("not a number")
	var n int
	p := mustPanic(t, func() { ch.ReceiveAsync(&n) })
	if err, ok := p.(error); !ok || !strings.Contains(err.Error(), `channel "counts": cannot store a value of type string in a int`) {
		t.Fatalf("panic %v", p)
	}
	_ = deliverToChannel(ch, []byte(`["x"]`))
	p = mustPanic(t, func() { ch.ReceiveAsync(&n) })
	if err, ok := p.(error); !ok || !strings.Contains(err.Error(), "decode payload") {
		t.Fatalf("panic %v", p)
	}
}

func TestAssignRules(t *testing.T) {
	type named int
	var (
		a  any
		e  error
		p  *int
		n  int
		nm named
	)
	x := 5
	ok := []struct {
		v   any
		ptr any
	}{{7, &a}, {&x, &p}, {nil, &p}, {nil, &e}, {3, &n}, {named(2), &nm}, {converter.NewEncodedValue(nil), &n}}
	for _, c := range ok {
		if err := assign(c.v, c.ptr); err != nil {
			t.Errorf("assign(%#v, %T): %v", c.v, c.ptr, err)
		}
	}
	bad := []struct {
		v    any
		ptr  any
		want string
	}{{1, n, "not a non-nil pointer"}, {1, (*int)(nil), "not a non-nil pointer"}, {nil, &n, "cannot store nil in a int"}, {named(1), &n, "type workflow.named in a int"}}
	for _, c := range bad {
		if err := assign(c.v, c.ptr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("assign(%#v, %T) = %v, want %q", c.v, c.ptr, err, c.want)
		}
	}
}

// A workflow that waits for something that never comes leaves the
// dispatcher all blocked: no error, and the workflow not done.
func TestBlockedForeverReportsAllBlocked(t *testing.T) {
	h := start(t, func(ctx Context) {
		var v int
		NewChannel(ctx).Receive(ctx, &v)
	})
	if h.env.d.RootDone() || h.env.d.Done() {
		t.Fatal("a workflow blocked forever finished")
	}
	h.step() // still nothing to do, still no error
}
