package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

// sleepingClock is a manual clock that says each time a timer is made and
// when it fires: the heartbeat loop makes one just before it waits, so a
// test that moves the clock knows when the loop has caught up.
type sleepingClock struct {
	*clock.Manual
	made chan struct{}

	mu sync.Mutex
	at time.Time // when the newest timer fires
}

func (c *sleepingClock) NewTimer(d time.Duration) clock.Timer {
	t := c.Manual.NewTimer(d)
	c.mu.Lock()
	c.at = c.Manual.Now().Add(d)
	c.mu.Unlock()
	c.made <- struct{}{}
	return t
}

func (c *sleepingClock) wakeAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// heldBeat is one lease renewal the test answers when it chooses.
type heldBeat struct{ answer chan error }

// heldBeats is a service whose lease renewals wait for the test's answer.
type heldBeats struct {
	engine.Service
	calls chan heldBeat
}

func (s heldBeats) Heartbeat(ctx context.Context, _ engine.Heartbeat) (*engine.HeartbeatResult, error) {
	b := heldBeat{answer: make(chan error, 1)}
	s.calls <- b
	select {
	case err := <-b.answer:
		if err != nil {
			return nil, err
		}
		return &engine.HeartbeatResult{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// The heartbeat loop on a manual clock, with renewals that take 7 s to
// answer under a 9 s lease (beats every 3 s, trusted for 8.1 s after their
// sending): slow, but each answer comes while the renewal it answers can
// still make the lease trusted, so the turn goes on. It used to wait for a
// renewal on its way only half a period (1.5 s) past the trust of the last
// one answered, so any answer slower than 6.6 s cost a lease the worker
// held (under load, TestShortLeasesOnABusyMachine saw answers take 0.75 of
// its lease, and its steps ran twice). When answers stop, the turn stops
// once the oldest renewal on its way could no longer help.
func TestSlowRenewalsKeepTheLease(t *testing.T) {
	const (
		ttl     = 9 * time.Second
		every   = ttl / 3
		trust   = ttl - ttl/10
		latency = 7 * time.Second // renewals answered this long after their sending
		step    = 500 * time.Millisecond
	)
	start := time.Unix(1_000_000, 0)
	clk := &sleepingClock{Manual: clock.NewManual(start), made: make(chan struct{})}
	svc := heldBeats{calls: make(chan heldBeat, maxBeatsInFlight)}
	lapsed := make(chan error, 1)
	w := &queueWorker{e: svc, opts: Options{LeaseTTL: ttl, Clock: clk,
		OnError: func(_ engine.JobID, err error) { lapsed <- err }}}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{}) // the loop cancelled the turn
	done := make(chan struct{})
	l := w.newLease(engine.LeaseRef{Job: 1, Attempt: 1})
	go w.heartbeat(ctx, func() { close(stopped) }, nil, l, done)
	defer func() { stop(); <-done }()

	// settle waits until the loop waits on a timer still to fire, or has
	// stopped the turn; advance moves the clock a step and, when that
	// fires the loop's timer, lets the loop catch up.
	settle := func() {
		t.Helper()
		for {
			select {
			case <-clk.made:
				if clk.wakeAt().After(clk.Now()) {
					return
				}
			case <-stopped:
				return
			}
		}
	}
	advance := func() {
		fires := !clk.wakeAt().After(clk.Now().Add(step))
		clk.Advance(step)
		if fires {
			settle()
		}
	}
	settle()
	// Beats go out every 3 s (the clock moves in steps that land on
	// them); the test answers the n-th, sent at n*3 s, at n*3 s + 7 s.
	var calls []heldBeat
	answered := 0
	elapsed := func() time.Duration { return clk.Now().Sub(start) }
	running := func() {
		t.Helper()
		select {
		case <-stopped:
			t.Fatalf("the turn stopped at %v, with renewals answered %v after their sending (%v), under a %v lease",
				elapsed(), latency, <-lapsed, ttl)
		default:
		}
	}
	for elapsed() < 40*time.Second {
		advance()
		running()
		if elapsed()%every == 0 {
			// The beat due now went out: take it, so that the calls are
			// in the order of their sending.
			select {
			case b := <-svc.calls:
				calls = append(calls, b)
			case <-stopped:
				running()
			}
		}
		for answered < len(calls) && elapsed() >= time.Duration(answered+1)*every+latency {
			calls[answered].answer <- nil
			answered++
			settle()
			running()
		}
	}
	if want := l.until(); !want.After(clk.Now()) {
		t.Fatalf("the lease is trusted until %v, before now (%v)", want.Sub(start), elapsed())
	}

	// The answers stop. The last one answered was sent at s; the oldest on
	// its way was sent at s+3 s and could make the lease trusted until
	// s+3 s+8.1 s: the turn stops then, not before, at the first step
	// after it.
	last := time.Duration(answered) * every
	stopAt := last + every + trust
	for {
		select {
		case <-stopped:
		default:
			if elapsed() > stopAt+step {
				t.Fatalf("the turn still runs at %v, after the renewals on their way could no longer help (%v)", elapsed(), stopAt)
			}
			advance()
			continue
		}
		break
	}
	if elapsed() < stopAt {
		t.Fatalf("the turn stopped at %v, before the renewal on its way could no longer help (%v)", elapsed(), stopAt)
	}
	if err := <-lapsed; !errors.Is(err, ErrLeaseLapsed) {
		t.Fatalf("the turn stopped with %v, want ErrLeaseLapsed", err)
	}
	<-done
}
