package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// The deliverer of a sharded node (docs/sharding.md, "Cross-shard work"):
// for each shard this node leads, it delivers the shard's pending outbox
// entries to their target shards (Deliver), then acknowledges each to the
// shard's own group (AckDelivery), which deletes the entry. Each pair of
// source and target shards has a worker of its own, so a target that
// cannot be reached (a partitioned node, each try waiting out its timeout)
// holds back only its own pair. A worker delivers its pair's entries one at
// a time in the order written; a failure stops it, and it tries again
// after a backoff that doubles from deliverBackoffMin to deliverBackoffMax.
// The node's loop wakes at every commit and leadership change of its
// shards (Host.ShardsChanged), looks at the outbox of each shard it leads
// that applied something since its last look, and wakes the workers of
// the pairs with entries pending: with nothing pending nothing runs, and
// only a worker in backoff waits on a timer.
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
	// deliverTryTimeout bounds one node's try of a delivery while other
	// nodes remain to be tried (send): a node that is paused or cut off
	// would otherwise hold the whole deliverTimeout.
	deliverTryTimeout = 3 * time.Second
	// deliverBatch bounds the entries of one pair read at a time.
	deliverBatch = 64
)

// DeliverFunc sends a Deliver to node (whose HTTP address is httpAddr),
// the target shard's leader, and returns its answer. httpapi.NodeSender's
// Deliver is one.
type DeliverFunc func(ctx context.Context, node, httpAddr string, d *engine.Deliver) (*engine.DeliverResult, error)

// seenHold is a shard's hold (nil: none) as read at an applied index.
type seenHold struct {
	applied uint64
	held    *DeliveryHold
}

// pairKey names the entries from one shard to another.
type pairKey struct{ source, target int }

// deliverer is a node's delivery state.
type deliverer struct {
	h  *Host
	mu sync.Mutex
	// workers are the pairs' workers, started at a pair's first entry.
	workers map[pairKey]chan struct{}
	// delivered counts the entries this node acknowledged, by pair.
	delivered map[pairKey]uint64
	// scanned is, by shard this node leads, the applied index its outbox
	// was last looked at: a shard that applied nothing since is not looked
	// at again. Used by the loop's goroutine only.
	scanned map[int]uint64
	// heldSkips counts the times a worker found its source shard's
	// deliveries held and proposed nothing (for tests and the curious).
	heldSkips uint64
	// heldCh is closed (and replaced) at every held skip.
	heldCh chan struct{}
	// holds caches, by shard this node leads, the hold its state held at
	// an applied index. Used by the loop's goroutine only.
	holds map[int]seenHold
	// releasing are the shards whose expired hold this node is releasing.
	releasing map[int]bool
	// gauged are the pairs whose pending gauge this node last set above
	// 0, to set back to 0 when they drain or the node stops leading their
	// source. Used by the loop's goroutine only.
	gauged map[pairKey]bool
}

// shardMetrics returns the Metrics of shard k's series on this node (nil
// when the node records none).
func (d *deliverer) shardMetrics(k int) *metrics.Metrics {
	m, err := d.h.cfg.Metrics.ForShard(strconv.Itoa(k))
	if err != nil {
		return nil // the node's Metrics is not a sharded node's: openShard refused it already
	}
	return m
}

// gauge sets the pending gauges of source shard k's pairs: n by target,
// and 0 for every pair set before that has none now.
func (d *deliverer) gauge(k int, pending map[int]int) {
	m := d.shardMetrics(k)
	for p := range d.gauged {
		if p.source == k && pending[p.target] == 0 {
			m.OutboxPending(strconv.Itoa(p.target), 0)
			delete(d.gauged, p)
		}
	}
	for t, n := range pending {
		m.OutboxPending(strconv.Itoa(t), n)
		d.gauged[pairKey{k, t}] = true
	}
}

// deliverLoop runs the node's loop until the node closes.
func (h *Host) deliverLoop() {
	defer h.wg.Done()
	d := h.delivery
	for {
		changed := h.ShardsChanged() // before the look, so no commit is missed
		d.pass()
		// A hold's expiry is a time, not a commit: the loop wakes at the
		// first one to release it (expireHolds).
		var expiry <-chan time.Time
		var t clock.Timer
		if next := d.expireHolds(); !next.IsZero() {
			t = h.cfg.Clock.NewTimer(next.Sub(h.cfg.Clock.Now()))
			expiry = t.C()
		}
		select {
		case <-h.ctx.Done():
		case <-changed:
		case <-expiry:
		}
		if t != nil {
			t.Stop()
		}
		if h.ctx.Err() != nil {
			return
		}
	}
}

// expireHolds releases, through the log, the delivery holds past their
// expiry of the shards this node leads (hold.go): a backup that died
// holding stops deliveries only until then. It returns the earliest expiry
// still to come (zero: none).
func (d *deliverer) expireHolds() time.Time {
	var next time.Time
	now := d.h.cfg.Clock.Now()
	for k := range d.h.shards {
		n := d.h.Shard(k)
		if n == nil || !n.IsLeader() || d.h.ctx.Err() != nil {
			delete(d.holds, k)
			continue
		}
		// The hold is read again only when the shard applied something
		// since the last look: a pass runs at every commit of any shard.
		applied := n.fsm.Applied()
		seen, ok := d.holds[k]
		if !ok || seen.applied != applied {
			held, err := n.deliveryHold()
			if err != nil {
				d.h.report(fmt.Errorf("shard %d: reading the delivery hold: %w", k, err))
				delete(d.holds, k)
				continue
			}
			seen = seenHold{applied: applied, held: held}
			d.holds[k] = seen
		}
		held := seen.held
		if held == nil {
			continue
		}
		at := time.UnixMilli(held.ExpiresMS)
		if at.After(now) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		d.mu.Lock()
		busy := d.releasing[k]
		d.releasing[k] = true
		d.mu.Unlock()
		if busy {
			continue
		}
		d.h.wg.Add(1)
		go func() {
			defer d.h.wg.Done()
			ctx, cancel := context.WithTimeout(d.h.ctx, deliverTimeout)
			defer cancel()
			err := n.applyHoldEntry(ctx, holdBody{Token: held.Token, Release: true})
			if err != nil && !errors.Is(err, ErrNotHeld) {
				d.h.report(fmt.Errorf("shard %d: releasing the expired delivery hold %q of %s: %w", k, held.Token, held.Owner, err))
			}
			d.mu.Lock()
			delete(d.releasing, k)
			d.mu.Unlock()
			// Its commit wakes the loop again (or, failed, the next one).
		}()
	}
	return next
}

// pass wakes the workers of the pairs with entries pending in the shards
// this node leads.
func (d *deliverer) pass() {
	for k := range d.h.shards {
		n := d.h.Shard(k)
		if n == nil || !n.IsLeader() || d.h.ctx.Err() != nil {
			delete(d.scanned, k) // looked at afresh when it leads again
			d.gauge(k, nil)      // its leader counts its entries
			continue
		}
		applied := n.fsm.Applied()
		if last, ok := d.scanned[k]; ok && last == applied {
			continue
		}
		d.scanned[k] = applied
		var backlog []engine.DeliveryBacklog
		err := n.Engine().View(engine.WithStaleRead(d.h.ctx), func(r *storage.Reader) error {
			var err error
			backlog, err = machine.OutboxBacklog(r, k)
			return err
		})
		if err != nil {
			d.h.report(fmt.Errorf("shard %d: reading the outbox: %w", k, err))
			delete(d.scanned, k)
			continue
		}
		pending := map[int]int{}
		for _, b := range backlog {
			pending[b.Target] = int(b.Pending)
			d.wake(pairKey{k, b.Target})
		}
		d.gauge(k, pending)
	}
}

// wake wakes pair p's worker, starting it first if needed.
func (d *deliverer) wake(p pairKey) {
	d.mu.Lock()
	ch, ok := d.workers[p]
	if !ok {
		ch = make(chan struct{}, 1)
		d.workers[p] = ch
		d.h.wg.Add(1)
		go d.work(p, ch)
	}
	d.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default: // already woken
	}
}

// work is pair p's worker: at each wake it delivers the pair's pending
// entries in order while this node leads the source shard, backing off
// after a failure.
func (d *deliverer) work(p pairKey, wake <-chan struct{}) {
	defer d.h.wg.Done()
	ctx := d.h.ctx
	var delay time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		for {
			n := d.h.Shard(p.source)
			if n == nil || !n.IsLeader() || ctx.Err() != nil {
				break
			}
			done, err := d.drain(ctx, n, p)
			if err == nil {
				delay = 0
				if done {
					break
				}
				continue
			}
			if ctx.Err() != nil {
				return
			}
			delay = min(max(2*delay, deliverBackoffMin), deliverBackoffMax)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// drain delivers and acknowledges up to deliverBatch pending entries of
// pair p, in order, stopping at the first failure; done says that none
// were left.
func (d *deliverer) drain(ctx context.Context, n *Node, p pairKey) (done bool, err error) {
	var entries []*engine.OutboxEntry
	err = n.Engine().View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
		return r.Scan(storage.OutboxTargetPrefix(p.target), nil, true, func(k, b []byte) (bool, error) {
			e, err := machine.DecodeOutboxEntry(b)
			if err != nil {
				return false, err
			}
			entries = append(entries, e)
			return len(entries) < deliverBatch, nil
		})
	})
	if err != nil {
		d.h.report(fmt.Errorf("shard %d: reading the outbox: %w", p.source, err))
		return false, err
	}
	for _, e := range entries {
		// A held source proposes nothing (its state machine would refuse
		// the acknowledgement anyway): the worker waits for the release,
		// whose commit wakes it.
		if held, err := n.deliveryHold(); err != nil || held != nil {
			if held != nil {
				d.mu.Lock()
				d.heldSkips++
				close(d.heldCh)
				d.heldCh = make(chan struct{})
				d.mu.Unlock()
			}
			return err == nil, err
		}
		if err := d.one(ctx, n, e); err != nil {
			return false, err
		}
	}
	return len(entries) == 0, nil
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
		d.shardMetrics(e.Source).OutboxAcknowledged(strconv.Itoa(e.Target))
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
	// The node believed to lead may be down or may lead no more: a node
	// without a replica of the target knows only the placement's desired
	// leader, which keeps its place while its node is down. The target's
	// other replicas are tried in turn: one leads, and a follower forwards
	// to the leader it knows (unless the node speaks by its certificate,
	// which is not forwarded); the delivery's reference makes a repeat a
	// duplicate, answered with the first outcome. A try cut at
	// deliverTryTimeout by a slow leader may thus be proposed again
	// through another replica, which answers it as that duplicate.
	others := d.h.otherReplicas(del.Target, id)
	res, err := d.try(ctx, id, addr, del, len(others) > 0)
	for i, n := range others {
		if err == nil || refusal(err) || ctx.Err() != nil {
			break
		}
		res, err = d.try(ctx, n.ID, n.HTTPAddr, del, i < len(others)-1)
	}
	return res, err
}

// try sends del to node id through DeliverTo, within deliverTryTimeout
// when more nodes remain to be tried.
func (d *deliverer) try(ctx context.Context, id, addr string, del *engine.Deliver, more bool) (*engine.DeliverResult, error) {
	if more {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deliverTryTimeout)
		defer cancel()
	}
	return d.h.cfg.DeliverTo(ctx, id, addr, del)
}

// otherReplicas returns the nodes holding a replica of shard k, but for
// node except and this node, in the placement's order.
func (h *Host) otherReplicas(k int, except string) []PlacementNode {
	p := h.placement.Load()
	if k < 0 || k >= p.Shards {
		return nil
	}
	var out []PlacementNode
	for _, id := range p.Groups[k].Replicas {
		if id == except || id == h.ID() {
			continue
		}
		if n, ok := p.node(id); ok {
			out = append(out, n)
		}
	}
	return out
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

// Delivered returns how many outbox entries of shard source for shard
// target this node acknowledged since it started.
func (h *Host) Delivered(source, target int) uint64 {
	h.delivery.mu.Lock()
	defer h.delivery.mu.Unlock()
	return h.delivery.delivered[pairKey{source, target}]
}

// heldSkipped returns how many times a worker of this node found its
// source held, and a channel closed at the next time.
func (d *deliverer) heldSkipped() (uint64, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.heldSkips, d.heldCh
}

// report passes a background error to OnSchedulerError, if set.
func (h *Host) report(err error) {
	if h.cfg.OnSchedulerError != nil && h.ctx.Err() == nil {
		h.cfg.OnSchedulerError(err)
	}
}
