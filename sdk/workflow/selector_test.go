package workflow

import (
	"strings"
	"testing"
)

// Among cases that are ready when Select runs, the first added wins.
func TestSelectorPicksFirstAddedReadyCase(t *testing.T) {
	runTrace(t, "pending=true; b: 2; a: 1; pending=false",
		func(ctx Context, tr *trace) {
			a, b := NewBufferedChannel(ctx, 1), NewBufferedChannel(ctx, 1)
			a.SendAsync(1)
			b.SendAsync(2)
			recv := func(name string) func(c ReceiveChannel, more bool) {
				return func(c ReceiveChannel, more bool) {
					var v int
					c.Receive(ctx, &v)
					tr.add("%s: %d", name, v)
				}
			}
			sel := NewSelector(ctx).AddReceive(b, recv("b")).AddReceive(a, recv("a"))
			tr.add("pending=%v", sel.HasPending())
			sel.Select(ctx)
			sel.Select(ctx)
			tr.add("pending=%v", sel.HasPending())
		})
}

// While Select waits, the rule is the same: when its coroutine gets the
// turn, the first added ready case runs, although the other became ready
// first (Temporal would run that one).
func TestSelectorWhileWaitingPicksFirstAdded(t *testing.T) {
	runTrace(t, "select; set b; set a; future a; future b",
		func(ctx Context, tr *trace) {
			fa, sa := NewFuture(ctx)
			fb, sb := NewFuture(ctx)
			Go(ctx, func(ctx Context) {
				tr.add("set b")
				sb.SetValue("b")
				tr.add("set a")
				sa.SetValue("a")
			})
			sel := NewSelector(ctx)
			for _, f := range []Future{fa, fb} {
				sel.AddFuture(f, func(f Future) {
					var s string
					_ = f.Get(ctx, &s)
					tr.add("future %s", s)
				})
			}
			tr.add("select")
			sel.Select(ctx)
			sel.Select(ctx)
		})
}

// A future case runs once per Selector: after both futures have been
// handled, the Selector has nothing pending and falls to its default.
func TestSelectorFutureCaseFiresOnce(t *testing.T) {
	runTrace(t, "future 1; future 2; pending=false; default",
		func(ctx Context, tr *trace) {
			sel := NewSelector(ctx)
			for i := 1; i <= 2; i++ {
				f, s := NewFuture(ctx)
				s.SetValue(i)
				sel.AddFuture(f, func(f Future) {
					var n int
					_ = f.Get(ctx, &n)
					tr.add("future %d", n)
				})
			}
			sel.Select(ctx)
			sel.Select(ctx)
			tr.add("pending=%v", sel.HasPending())
			sel.AddDefault(func() { tr.add("default") })
			sel.Select(ctx)
		})
}

// The default case runs only when no case is ready, and never blocks.
func TestSelectorDefault(t *testing.T) {
	runTrace(t, "default; received 1",
		func(ctx Context, tr *trace) {
			ch := NewBufferedChannel(ctx, 1)
			sel := NewSelector(ctx).AddReceive(ch, func(c ReceiveChannel, more bool) {
				var v int
				c.Receive(ctx, &v)
				tr.add("received %d", v)
			})
			sel.AddDefault(func() { tr.add("default") })
			sel.Select(ctx)
			ch.SendAsync(1)
			sel.Select(ctx)
		})
}

// A receive case whose callback does not receive leaves the value in the
// channel, even one taken from a blocked Send, which is released.
func TestSelectorReceiveCaseLeavesValue(t *testing.T) {
	runTrace(t, "send; select; ready more=true len=1; sent; later got 9",
		func(ctx Context, tr *trace) {
			ch := NewChannel(ctx)
			sent := false
			Go(ctx, func(ctx Context) {
				tr.add("send")
				ch.Send(ctx, 9)
				sent = true
				tr.add("sent")
			})
			Go(ctx, func(ctx Context) {
				tr.add("select")
				NewSelector(ctx).AddReceive(ch, func(c ReceiveChannel, more bool) {
					tr.add("ready more=%v len=%d", more, c.Len())
				}).Select(ctx)
				_ = Await(ctx, func() bool { return sent })
				var v int
				ch.Receive(ctx, &v)
				tr.add("later got %d", v)
			})
		})
}

// A Send meets a Select waiting to receive on an unbuffered channel.
func TestSelectorReceivesFromSend(t *testing.T) {
	runTrace(t, "select; send; sent; selected 7",
		func(ctx Context, tr *trace) {
			ch := NewChannel(ctx)
			Go(ctx, func(ctx Context) {
				tr.add("send")
				ch.Send(ctx, 7)
				tr.add("sent")
			})
			tr.add("select")
			NewSelector(ctx).AddReceive(ch, func(c ReceiveChannel, more bool) {
				var v int
				c.Receive(ctx, &v)
				tr.add("selected %d", v)
			}).Select(ctx)
		})
}

// A Receive takes the value of a Select waiting to send; that Select then
// runs its send case whatever else became ready, since the value is gone.
func TestSelectorSendTakenByReceive(t *testing.T) {
	runTrace(t, "select; receive; got 5; send case ran",
		func(ctx Context, tr *trace) {
			ch := NewChannel(ctx)
			other := NewBufferedChannel(ctx, 1)
			Go(ctx, func(ctx Context) {
				tr.add("receive")
				var v int
				ch.Receive(ctx, &v)
				other.SendAsync("ready too")
				tr.add("got %d", v)
			})
			tr.add("select")
			NewSelector(ctx).
				AddReceive(other, func(ReceiveChannel, bool) { tr.add("other case ran") }).
				AddSend(ch, 5, func() { tr.add("send case ran") }).
				Select(ctx)
		})
}

// Two Selects meet on an unbuffered channel, whichever waits first.
func TestSelectorsMeet(t *testing.T) {
	sender := func(ctx Context, tr *trace, ch Channel) {
		tr.add("A selects")
		NewSelector(ctx).AddSend(ch, 5, func() { tr.add("A sent") }).Select(ctx)
	}
	receiver := func(ctx Context, tr *trace, ch Channel) {
		tr.add("B selects")
		NewSelector(ctx).AddReceive(ch, func(c ReceiveChannel, more bool) {
			var v int
			c.Receive(ctx, &v)
			tr.add("B got %d", v)
		}).Select(ctx)
	}
	runTrace(t, "A selects; B selects; B got 5; A sent", func(ctx Context, tr *trace) {
		ch := NewChannel(ctx)
		Go(ctx, func(ctx Context) { receiver(ctx, tr, ch) })
		sender(ctx, tr, ch)
	})
	runTrace(t, "B selects; A selects; A sent; B got 5", func(ctx Context, tr *trace) {
		ch := NewChannel(ctx)
		Go(ctx, func(ctx Context) { sender(ctx, tr, ch) })
		receiver(ctx, tr, ch)
	})
}

// SendAsync succeeds on an unbuffered channel when a Select waits to
// receive, once: the Select is then spoken for.
func TestSendAsyncToWaitingSelect(t *testing.T) {
	runTrace(t, "select; SendAsync true false; selected 1",
		func(ctx Context, tr *trace) {
			ch := NewChannel(ctx)
			Go(ctx, func(ctx Context) {
				tr.add("SendAsync %v %v", ch.SendAsync(1), ch.SendAsync(2))
			})
			tr.add("select")
			NewSelector(ctx).AddReceive(ch, func(c ReceiveChannel, more bool) {
				var v int
				c.Receive(ctx, &v)
				tr.add("selected %d", v)
			}).Select(ctx)
		})
}

// A receive case on a closed channel is ready with more == false.
func TestSelectorClosedChannel(t *testing.T) {
	runTrace(t, "more=false", func(ctx Context, tr *trace) {
		ch := NewChannel(ctx)
		ch.Close()
		NewSelector(ctx).AddReceive(ch, func(c ReceiveChannel, more bool) { tr.add("more=%v", more) }).Select(ctx)
	})
}

func TestSelectorRejectsForeignChannels(t *testing.T) {
	ctx := testCtx(t)
	var c Channel
	if p := mustPanic(t, func() { NewNamedSelector(ctx, "orders").AddReceive(c, nil) }); !strings.Contains(p.(string), "orders: a <nil> is not a channel made by this package") {
		t.Fatalf("panic %v", p)
	}
}
