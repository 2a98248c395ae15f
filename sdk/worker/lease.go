package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// lease is a job's lease as the worker holding it sees it: the attempt, and
// until when the worker trusts that the engine has not taken the job back.
// The heartbeat loop and the activities' own heartbeats renew it; both may
// run at once.
type lease struct {
	ref   engine.LeaseRef
	ttl   time.Duration
	trust time.Duration // how long after a successful renewal's sending it is trusted

	mu         sync.Mutex
	validUntil time.Time

	// paused: the last renewal said the job is paused (an operator's
	// pause, or an activity task held by its run's): an activity task
	// starts no new try, and gives its job back at the next one.
	paused atomic.Bool
}

// newLease starts trusting a lease just claimed: the claim counts as a
// renewal sent now (just after it returned).
func (w *queueWorker) newLease(ref engine.LeaseRef) *lease {
	ttl := w.opts.LeaseTTL
	l := &lease{ref: ref, ttl: ttl, trust: ttl - min(ttl/10, time.Second)}
	l.validUntil = w.opts.Clock.Now().Add(l.trust)
	return l
}

// renewed records a renewal that succeeded, sent at sent. The engine
// applied it after it was sent, and its new expiry counts from that
// application on the engine's clock, so the lease runs at least until
// sent+TTL: the worker trusts it until then, less a margin for a skew
// between its clock and the engine's (a tenth of the lease, at most a
// second). It stops trusting no later than the engine may take the job
// back, and no earlier: a slow renewal on a busy machine is not a lost
// lease.
func (l *lease) renewed(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := sent.Add(l.trust); t.After(l.validUntil) {
		l.validUntil = t
	}
}

func (l *lease) until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// maxBeatsInFlight bounds the renewals sent and not yet answered.
const maxBeatsInFlight = 3

type beat struct {
	sent time.Time
	res  *engine.HeartbeatResult
	err  error
}

// heartbeat renews the lease every third of its length, on a fixed
// schedule, not counted from each answer: on a busy machine an answer can
// take a good part of a short lease, and waiting for it before the next
// beat used to let the lease run out under a worker that was renewing it
// all along. Up to maxBeatsInFlight renewals may be out at once.
//
// A refusal means the attempt is stale, so the job's context is cancelled
// at once; for an activity task, a cancel request cancels the activity.
// When no renewal has succeeded for so long that the lease may have lapsed
// (the service is unreachable, or a node holding the requests is paused),
// the job's context is cancelled too: the job may already be another
// worker's, and this one must not start activities on a lease it lost.
// Fencing would refuse its writes anyway; stopping early saves running a
// step twice.
func (w *queueWorker) heartbeat(ctx context.Context, cancel, onCancelRequested context.CancelFunc, l *lease, done chan struct{}) {
	defer close(done)
	every := w.opts.LeaseTTL / 3
	clk := w.opts.Clock
	next := clk.Now().Add(every)
	beats := make(chan beat, maxBeatsInFlight) // room for every beat out: a sender never blocks
	var out []time.Time                        // when each renewal on its way was sent, oldest first
	planned := clk.Now()                       // when this loop meant to wake next
	var grace time.Time
	for {
		now := clk.Now()
		if now.Sub(planned) > every/2 {
			// This loop woke half a beat period or more after it meant to
			// (the process was starved of CPU, or the machine paused it): the
			// missing answers are its own doing, not evidence that the
			// lease is lost. A renewal goes out now, and it has a period
			// to answer before the lease counts as lapsed.
			grace = now.Add(every)
			next = now
		}
		deadline := l.until()
		for _, sent := range out {
			// A renewal is on its way: if it succeeds, the lease is
			// trusted until its sending plus the trust, so until then its
			// answer, slow as it may be on a busy machine, decides. (After
			// that, even its success would not make the lease trusted.)
			// The oldest renewal sent after the trusted one counts: a
			// later one would stretch the wait further whenever renewals
			// are lost instead of slow.
			if t := sent.Add(l.trust); t.After(deadline) {
				deadline = t
				break
			}
		}
		if !now.Before(deadline) && !now.Before(grace) {
			if w.opts.OnError != nil {
				w.opts.OnError(l.ref.Job, fmt.Errorf("%w: no lease renewal of job %d attempt %d succeeded in time; stopping its turn", ErrLeaseLapsed, l.ref.Job, l.ref.Attempt))
			}
			cancel()
			return
		}
		if !now.Before(next) && len(out) < maxBeatsInFlight {
			out = append(out, now)
			// The next beat is due a period after this one was due, not
			// after it was sent: late wake-ups on a busy machine must not
			// add up.
			next = next.Add(every)
			if next.Before(now) {
				next = now.Add(every)
			}
			go func(sent time.Time) {
				res, err := w.e.Heartbeat(ctx, engine.Heartbeat{Leases: []engine.LeaseRef{l.ref}, LeaseMS: w.opts.LeaseTTL.Milliseconds()})
				beats <- beat{sent: sent, res: res, err: err}
			}(now)
		}
		wake := deadline
		if grace.After(wake) {
			wake = grace
		}
		if len(out) < maxBeatsInFlight && next.Before(wake) {
			wake = next
		}
		planned = wake
		if planned.Before(now) {
			planned = now
		}
		t := clk.NewTimer(planned.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case b := <-beats:
			t.Stop()
			if i := slices.IndexFunc(out, b.sent.Equal); i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
			if b.err != nil {
				continue // a transient failure: the next beat tries again
			}
			if len(b.res.Refused) > 0 {
				cancel()
				return
			}
			l.renewed(b.sent)
			l.paused.Store(len(b.res.Paused) > 0)
			if len(b.res.CancelRequested) > 0 && onCancelRequested != nil {
				onCancelRequested()
			}
		}
	}
}
