package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// A delivery hold (docs/sharding.md, "Backups") stops a shard from applying
// cross-shard deliveries and their acknowledgements while a backup copies
// the cluster's shards. It is state of the shard itself, written through
// the shard's own log (an entryHold), and the shard's state machine refuses
// every Deliver and AckDelivery while it is set: the refusal happens where
// the command would take effect, so no proposal already on its way (a
// deliverer that read the outbox before the hold, a deposed leader's late
// retry, a forward in flight) can land after the hold. Every shard held at
// once, no shard changes anything another shard's state depends on, so
// copies of the shards taken at different moments of the hold make one
// consistent cut: each pair's outbox and delivered records are as they
// were at one moment.
//
// A hold names a token (one backup) and an owner (who took it, for the
// operator) and expires: the shard's leader releases a hold past its
// expiry through the log (deliverer.go), so that a backup that dies
// holding does not stop deliveries for ever. The expiry is a wall time the
// holder chose; the state machine never reads a clock, it only applies
// the release the leader proposes.

// keyHold is the shard's hold record, absent when deliveries flow.
var keyHold = []byte("mhold")

// Bounds of a hold's fields, so that a hold entry stays small.
const (
	maxHoldTokenBytes = 128
	maxHoldOwnerBytes = 256
	maxHoldBodyBytes  = maxHoldTokenBytes + maxHoldOwnerBytes + 64
)

// holdBody is the body of an entryHold and the value of keyHold: set the
// hold Token (or, with Release, remove it).
type holdBody struct {
	Token     string `msgpack:"t"`
	Owner     string `msgpack:"o,omitempty"`
	ExpiresMS int64  `msgpack:"e,omitempty"`
	Release   bool   `msgpack:"r,omitempty"`
}

// DeliveryHold is a shard's hold as its state records it.
type DeliveryHold struct {
	Token     string
	Owner     string
	ExpiresMS int64 // Unix milliseconds past which the shard's leader releases it
}

// checkHold checks the fields of a hold entry.
func checkHold(b *holdBody) error {
	switch {
	case b.Token == "" || len(b.Token) > maxHoldTokenBytes:
		return fmt.Errorf("a hold's token of %d bytes, not in [1, %d]", len(b.Token), maxHoldTokenBytes)
	case len(b.Owner) > maxHoldOwnerBytes:
		return fmt.Errorf("a hold's owner of %d bytes, more than %d", len(b.Owner), maxHoldOwnerBytes)
	case !b.Release && b.ExpiresMS <= 0:
		return fmt.Errorf("a hold without an expiry")
	}
	return nil
}

// decodeHold reads a hold record (the key's value or an entry's body).
func decodeHold(b []byte) (*holdBody, error) {
	if len(b) > maxHoldBodyBytes {
		return nil, fmt.Errorf("a hold of %d bytes, more than %d", len(b), maxHoldBodyBytes)
	}
	var h holdBody
	if err := msgpack.Unmarshal(b, &h); err != nil {
		return nil, err
	}
	return &h, checkHold(&h)
}

// HeldError is the refusal of a Deliver or AckDelivery by a shard whose
// deliveries are held, and of a hold by a shard that another token holds.
// It matches ErrDeliveriesHeld. A deliverer takes it as a failure to try
// again later, never as the target's answer.
type HeldError struct {
	Shard     int
	Token     string
	Owner     string
	ExpiresMS int64
	What      string // what was refused
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("raftfsm: %s refused: shard %d's deliveries are held by %q (owner %q) until %s; "+
		"a backup holds them while it copies the shards, and releases them when done or at the expiry [%s]",
		e.What, e.Shard, e.Token, e.Owner, time.UnixMilli(e.ExpiresMS).UTC().Format(time.RFC3339), HeldCode)
}

// Unwrap makes errors.Is match ErrDeliveriesHeld.
func (e *HeldError) Unwrap() error { return ErrDeliveriesHeld }

// Code returns HeldCode.
func (e *HeldError) Code() string { return HeldCode }

// applyHold applies an entryHold in tx: a set is refused while another
// token holds; a release of a token that does not hold is refused with
// ErrNotHeld (the hold expired and was released, or another took it), so
// that a backup learns its cut may not be one.
func applyHold(tx *storage.Tx, shard int, b *holdBody) error {
	cur, err := readHold(tx.Get)
	if err != nil {
		return err
	}
	if b.Release {
		if cur == nil || cur.Token != b.Token {
			return fmt.Errorf("%w: shard %d holds no deliveries for %q (expired and released, or never taken)", ErrNotHeld, shard, b.Token)
		}
		tx.Delete(keyHold)
		return nil
	}
	if cur != nil && cur.Token != b.Token {
		return &HeldError{Shard: shard, Token: cur.Token, Owner: cur.Owner, ExpiresMS: cur.ExpiresMS, What: "a hold for " + b.Token}
	}
	v, err := msgpack.Marshal(&holdBody{Token: b.Token, Owner: b.Owner, ExpiresMS: b.ExpiresMS})
	if err != nil {
		return err
	}
	tx.Set(keyHold, v)
	return nil
}

// readHold reads the hold record with get (nil when deliveries flow). A
// record that does not decode is reported as corrupt.
func readHold(get func([]byte) ([]byte, error)) (*holdBody, error) {
	v, err := get(keyHold)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := decodeHold(v)
	if err != nil {
		return nil, &storage.CorruptError{Key: keyHold, Kind: storage.KindMeta, Reason: "the delivery hold: " + err.Error()}
	}
	return h, nil
}

// isDelivery reports whether cmd is one a hold refuses.
func isDelivery(cmd engine.Command) bool {
	switch cmd.(type) {
	case *engine.Deliver, *engine.AckDelivery:
		return true
	}
	return false
}

// applyHoldEntry proposes a hold entry through n, which must lead its
// group.
func (n *Node) applyHoldEntry(ctx context.Context, b holdBody) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	data, err := encodeEntry(entryHold, &b)
	if err != nil {
		return err
	}
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	if err := futureError(ctx, f); err != nil {
		return n.applyError(err)
	}
	if out, ok := f.Response().(*entryOutcome); ok && len(out.errs) > 0 && out.errs[0] != nil {
		return out.errs[0]
	}
	return nil
}

// DeliveryHold returns the hold of this node's replica of shard k, as far
// as the replica applied (nil: deliveries flow, or no replica here).
func (h *Host) DeliveryHold(k int) (*DeliveryHold, error) {
	n := h.Shard(k)
	if n == nil {
		return nil, nil
	}
	return n.deliveryHold()
}

func (n *Node) deliveryHold() (*DeliveryHold, error) {
	var b *holdBody
	err := n.fsm.View(func(r *storage.Reader) error {
		var err error
		b, err = readHold(r.Get)
		return err
	})
	if err != nil || b == nil {
		return nil, err
	}
	return &DeliveryHold{Token: b.Token, Owner: b.Owner, ExpiresMS: b.ExpiresMS}, nil
}

// leaderOf returns this node's replica of shard k when it leads it, else a
// not-leader error naming the leader it knows.
func (h *Host) leaderOf(k int) (*Node, error) {
	if k < 0 || k >= h.ShardCount() {
		return nil, fmt.Errorf("%w: shard %d is not in [0, %d)", engine.ErrInvalidCommand, k, h.ShardCount())
	}
	if n := h.Shard(k); n != nil && n.IsLeader() {
		return n, nil
	}
	id, addr := h.ShardLeader(k)
	if id == h.ID() {
		id, addr = "", ""
	}
	return nil, &engine.NotLeaderError{LeaderID: id, LeaderHTTP: addr}
}

// HoldDeliveries holds shard k's deliveries for token until ttl from now
// (docs/sharding.md, "Backups"); this node must lead the shard. Holding
// again with the same token extends the hold. It returns once the hold is
// applied on this node: from then on the shard applies no Deliver and no
// AckDelivery until ReleaseDeliveries or the expiry.
func (h *Host) HoldDeliveries(ctx context.Context, k int, token, owner string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: a hold of %v: it needs a time to expire", engine.ErrInvalidCommand, ttl)
	}
	b := holdBody{Token: token, Owner: owner, ExpiresMS: h.cfg.Clock.Now().Add(ttl).UnixMilli()}
	if err := checkHold(&b); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrInvalidCommand, err)
	}
	n, err := h.leaderOf(k)
	if err != nil {
		return err
	}
	return n.applyHoldEntry(ctx, b)
}

// ReleaseDeliveries ends shard k's hold for token; this node must lead the
// shard. It fails with ErrNotHeld when the shard holds nothing for token.
func (h *Host) ReleaseDeliveries(ctx context.Context, k int, token string) error {
	b := holdBody{Token: token, Release: true}
	if err := checkHold(&b); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrInvalidCommand, err)
	}
	n, err := h.leaderOf(k)
	if err != nil {
		return err
	}
	return n.applyHoldEntry(ctx, b)
}

// ShardCopy is a copy of one shard's state as of one moment, open for
// streaming (Host.OpenShardCopy).
type ShardCopy struct {
	// AppliedIndex is the shard's log index the copy holds everything up
	// to.
	AppliedIndex uint64
	snap         *storage.Snapshot
	release      func()
}

// Stream writes the copy in storage's snapshot format (what
// storage.DB.LoadSnapshot reads).
func (c *ShardCopy) Stream(w io.Writer) (storage.SnapshotInfo, error) { return c.snap.Stream(w) }

// Close releases the copy's view of the database.
func (c *ShardCopy) Close() {
	c.snap.Close()
	c.release()
}

// OpenShardCopy fixes a copy of shard k as of now, on its leader (this
// node): a read barrier first, so the copy holds every entry committed
// before the call, then a view of the database. With token set, the copy
// must hold that delivery hold: a copy taken outside the hold (its expiry
// passed and the leader released it) would not belong to the backup's
// cut, and is refused with ErrNotHeld.
func (h *Host) OpenShardCopy(ctx context.Context, k int, token string) (*ShardCopy, error) {
	n, err := h.leaderOf(k)
	if err != nil {
		return nil, err
	}
	if err := n.readBarrier(ctx); err != nil {
		return nil, err
	}
	n.fsm.mu.RLock()
	db := n.fsm.db
	release := n.fsm.state.hold(db)
	snap := db.OpenSnapshot()
	n.fsm.mu.RUnlock()
	c := &ShardCopy{snap: snap, release: release}
	var held *holdBody
	err = snap.View(func(r *storage.Reader) error {
		var err error
		if c.AppliedIndex, err = storage.AppliedIndex(r); err != nil {
			return err
		}
		held, err = readHold(r.Get)
		return err
	})
	switch {
	case err != nil:
	case token != "" && (held == nil || held.Token != token):
		err = fmt.Errorf("%w: shard %d's copy at index %d holds no delivery hold for %q (it expired and was released?)", ErrNotHeld, k, c.AppliedIndex, token)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// StreamShardCopy opens a copy of shard k under the hold token
// (OpenShardCopy) and streams it to the writer begin returns, which it
// calls once with the copy's applied index. It makes a Host an
// httpapi.ShardBackup.
func (h *Host) StreamShardCopy(ctx context.Context, k int, token string, begin func(appliedIndex uint64) io.Writer) error {
	c, err := h.OpenShardCopy(ctx, k, token)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Stream(begin(c.AppliedIndex))
	return err
}
