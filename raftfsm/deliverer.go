package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// The deliverer of a sharded node (docs/sharding.md, "Cross-shard work"):
// for each shard this node leads, it delivers the shard's pending outbox
// entries to their target shards (Deliver), then acknowledges each to the
// shard's own group (AckDelivery), which deletes the entry. Entries from
// one shard to one target go in the order written, one at a time: a
// target that fails holds back that pair's later entries, not the other
// pairs'. A failed delivery is tried again after a backoff that doubles
// from deliverBackoffMin to deliverBackoffMax. It wakes at every commit and
// leadership change of the node's shards (Host.ShardsChanged), and on a
// timer only while a retry is due: with nothing pending it does nothing.
//
// A target shard this node leads is delivered to in process; another
// node's through HostConfig.DeliverTo, the node speaking as itself. A new
// leader of a shard finds the entries in the shard's state and delivers
// them again: the target's delivered record answers a repeat with the
// first outcome, so the effect lands once.

const (
	deliverBackoffMin = 20 * time.Millisecond
	deliverBackoffMax = 5 * time.Second
	// deliverTimeout bounds one delivery or acknowledgement.
	deliverTimeout = 10 * time.Second
	// deliverBatch bounds the entries of one shard read per pass.
	deliverBatch = 256
)

// DeliverFunc sends a Deliver to node (whose HTTP address is httpAddr),
// the target shard's leader, and returns its answer. httpapi.NodeSender's
// Deliver is one.
type DeliverFunc func(ctx context.Context, node, httpAddr string, d *engine.Deliver) (*engine.DeliverResult, error)

// pairKey names the entries from one shard to another.
type pairKey struct{ source, target int }

// pairRetry is a pair's backoff after a failed delivery.
type pairRetry struct {
	delay time.Duration
	at    time.Time
}

// deliverer holds the retry state of a node's pairs.
type deliverer struct {
	h     *Host
	mu    sync.Mutex
	retry map[pairKey]pairRetry
	// delivered counts the entries this node acknowledged, for tests and
	// metrics.
	delivered map[pairKey]uint64
	// scanned is, by shard this node leads, the applied index its outbox
	// was last read at: a commit of another shard wakes the deliverer, and
	// a shard that applied nothing since (and has no retry due) is not read
	// again. Used by the loop's goroutine only.
	scanned map[int]uint64
}

// deliverLoop runs the deliverer until the node closes.
func (h *Host) deliverLoop() {
	defer h.wg.Done()
	d := h.delivery
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		changed := h.ShardsChanged() // before the pass, so no commit is missed
		next := d.pass()
		var due <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			due = timer.C
		}
		select {
		case <-h.ctx.Done():
			timer.Stop()
			return
		case <-changed:
		case <-due:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// pass delivers what every shard this node leads has pending, and returns
// when the next retry is due (zero: none).
func (d *deliverer) pass() time.Time {
	var next time.Time
	earliest := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for k, n := range d.h.shards {
		if n == nil || !n.IsLeader() || d.h.ctx.Err() != nil {
			delete(d.scanned, k) // read afresh when it leads again
			continue
		}
		applied := n.fsm.Applied()
		if last, ok := d.scanned[k]; ok && last == applied {
			if at, due := d.retryOf(k); !due {
				earliest(at)
				continue
			}
		}
		d.scanned[k] = applied
		earliest(d.shard(k, n))
	}
	return next
}

// retryOf returns the earliest retry time of shard k's pairs in backoff,
// and whether one is due now.
func (d *deliverer) retryOf(k int) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var at time.Time
	now := time.Now()
	for p, r := range d.retry {
		if p.source != k {
			continue
		}
		if !now.Before(r.at) {
			return r.at, true
		}
		if at.IsZero() || r.at.Before(at) {
			at = r.at
		}
	}
	return at, false
}

// shard delivers shard k's pending entries, in order per target.
func (d *deliverer) shard(k int, n *Node) time.Time {
	ctx := d.h.ctx
	var entries []*engine.OutboxEntry
	err := n.Engine().View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
		var err error
		entries, err = machine.PendingEntries(r, deliverBatch)
		return err
	})
	if err != nil {
		d.h.report(fmt.Errorf("shard %d: reading the outbox: %w", k, err))
		return time.Now().Add(deliverBackoffMax)
	}
	var next time.Time
	blocked := map[int]bool{}
	for _, e := range entries {
		p := pairKey{k, e.Target}
		if blocked[e.Target] {
			continue
		}
		if at, ok := d.waiting(p); ok {
			blocked[e.Target] = true
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		if err := d.one(ctx, n, e); err != nil {
			if ctx.Err() != nil || errors.Is(err, engine.ErrNotLeader) && !n.IsLeader() {
				return time.Time{} // closing, or no longer this shard's leader
			}
			blocked[e.Target] = true
			at := d.failed(p)
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		d.succeeded(p)
	}
	return next
}

// one delivers entry e of shard n and acknowledges it.
func (d *deliverer) one(ctx context.Context, n *Node, e *engine.OutboxEntry) error {
	ctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	// The entries of this pair before e are acknowledged: they went
	// first, in order (shard), or are gone from the outbox.
	ans, err := d.send(ctx, &engine.Deliver{DeliveryRef: e.DeliveryRef, Command: e.Command, AckedBelow: e.Seq})
	switch {
	case err == nil:
		a := *ans
		a.Duplicate = false
		ans = &a
	case refusal(err):
		// The target refused the command for good (a child whose workflow
		// id is taken, a run gone), writing nothing: the refusal is
		// recorded there as the entry's outcome, first outcome wins, and
		// what is recorded is the answer.
		msg, outcome := err.Error(), machine.Outcome(err)
		if len(msg) > 4<<10 {
			msg = msg[:4<<10]
		}
		refused := &engine.DeliverResult{Kind: e.Kind, Error: strings.ToValidUTF8(msg, "?"), Outcome: outcome}
		ans, err = d.send(ctx, &engine.Deliver{DeliveryRef: e.DeliveryRef, Command: e.Command, AckedBelow: e.Seq, Refusal: refused})
		if err != nil {
			return err
		}
		a := *ans
		a.Duplicate = false
		ans = &a
	default:
		return err
	}
	_, err = n.Engine().Propose(ctx, &engine.AckDelivery{DeliveryRef: e.DeliveryRef, Answer: *ans})
	if err == nil {
		d.mu.Lock()
		d.delivered[pairKey{e.Source, e.Target}]++
		d.mu.Unlock()
	}
	return err
}

// send proposes del to its target shard's leader: in process when this
// node leads it, else through DeliverTo.
func (d *deliverer) send(ctx context.Context, del *engine.Deliver) (*engine.DeliverResult, error) {
	if t := d.h.Shard(del.Target); t != nil && t.IsLeader() {
		res, err := t.Engine().Propose(ctx, del)
		if err != nil {
			return nil, err
		}
		out, ok := res.(*engine.DeliverResult)
		if !ok {
			return nil, fmt.Errorf("%w: Deliver returned %T", engine.ErrInvariant, res)
		}
		return out, nil
	}
	id, addr := d.h.ShardLeader(del.Target)
	switch {
	case id == "" || id == d.h.ID():
		return nil, &engine.NotLeaderError{}
	case d.h.cfg.DeliverTo == nil:
		return nil, fmt.Errorf("%w: shard %d is led by node %s, and this node has no way to deliver to another node (HostConfig.DeliverTo)", engine.ErrNotLeader, del.Target, id)
	}
	return d.h.cfg.DeliverTo(ctx, id, addr, del)
}

// refusal reports whether err is the target's refusal of the delivered
// command itself (one that a retry would meet again), not a failure to
// reach the target's leader or to apply there.
func refusal(err error) bool {
	if errors.Is(err, engine.ErrNotLeader) || errors.Is(err, engine.ErrUnknownOutcome) || errors.Is(err, engine.ErrClosed) {
		return false
	}
	switch machine.Outcome(err) {
	case "other", "storage_read", "corrupt", "invariant":
		return false
	}
	return true
}

func (d *deliverer) waiting(p pairKey) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.retry[p]
	if !ok || !time.Now().Before(r.at) {
		return time.Time{}, false
	}
	return r.at, true
}

func (d *deliverer) failed(p pairKey) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.retry[p]
	r.delay = min(max(2*r.delay, deliverBackoffMin), deliverBackoffMax)
	r.at = time.Now().Add(r.delay)
	d.retry[p] = r
	return r.at
}

func (d *deliverer) succeeded(p pairKey) {
	d.mu.Lock()
	delete(d.retry, p)
	d.mu.Unlock()
}

// Delivered returns how many outbox entries of shard source for shard
// target this node acknowledged since it started.
func (h *Host) Delivered(source, target int) uint64 {
	h.delivery.mu.Lock()
	defer h.delivery.mu.Unlock()
	return h.delivery.delivered[pairKey{source, target}]
}

// report passes a background error to OnSchedulerError, if set.
func (h *Host) report(err error) {
	if h.cfg.OnSchedulerError != nil && h.ctx.Err() == nil {
		h.cfg.OnSchedulerError(err)
	}
}
