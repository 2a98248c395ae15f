package storage

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// The outbox's keyspace (docs/sharding.md, "Cross-shard work"): what a shard
// of a sharded cluster sends to another, and what it received. One prefix
// byte (a capital, as the list's indexes) with a sub-tag byte per kind of
// key, as the review tasks have.
//
//	Oe<target:8><seq:8>     outbox entry: a command for shard target, in the order written
//	On<target:8>            the last sequence given to an entry for shard target
//	Od<source:8><seq:8>     delivered record: entry seq of shard source was applied here, and its outcome
//	Oc<parent:8><step>      a parent's step whose child runs on another shard: the child's job id once known
//	Ot<parent:8><step>      a parent's step whose review task lives on another shard: the task's id once known
//	Os<job:8><step>         a run's step whose signal or cancel request is on its way to another shard: the entry's target and seq
//	Ou<job:8><step>         on the resource pool's shard: a unit a step of another shard asked for, waiting or granted
//	Ow<source:8>            every entry of shard source below this sequence is acknowledged: their delivered records are gone
const PrefixOutbox byte = 'O'

// Record kinds of the outbox; the numbers are stored and never reused.
const (
	KindOutboxEntry Kind = 19
	KindDelivered   Kind = 20
	KindRemoteChild Kind = 21
	// KindRemoteReview is the link of a run's step to its review task on
	// another shard (engine.RemoteReview).
	KindRemoteReview Kind = 22
	// KindRemoteUnit is the pool shard's record of a unit a step of
	// another shard asked for (engine.RemoteUnit).
	KindRemoteUnit Kind = 23
)

// Sub-tags of the outbox keys.
const (
	outboxTagEntry     = 'e'
	outboxTagNext      = 'n'
	outboxTagDelivered = 'd'
	outboxTagChild     = 'c'
	outboxTagAcked     = 'w'
	outboxTagSending   = 's'
	outboxTagUnit      = 'u'
	outboxTagReview    = 't'
)

// Prefixes of the outbox key kinds, for scans.
var (
	OutboxEntryPrefix     = []byte{PrefixOutbox, outboxTagEntry}
	OutboxNextPrefix      = []byte{PrefixOutbox, outboxTagNext}
	OutboxDeliveredPrefix = []byte{PrefixOutbox, outboxTagDelivered}
	RemoteChildPrefix     = []byte{PrefixOutbox, outboxTagChild}
	SendingPrefix         = []byte{PrefixOutbox, outboxTagSending}
	RemoteUnitPrefix      = []byte{PrefixOutbox, outboxTagUnit}
	RemoteReviewPrefix    = []byte{PrefixOutbox, outboxTagReview}
)

func outboxKey(tag byte, capacity int) []byte {
	b := make([]byte, 2, 2+capacity)
	b[0], b[1] = PrefixOutbox, tag
	return b
}

// OutboxTargetPrefix is where the entries for shard target are, in order.
func OutboxTargetPrefix(target int) []byte {
	return appendU64(outboxKey(outboxTagEntry, 16), uint64(target))
}

// OutboxEntryKey is the key of entry seq for shard target.
func OutboxEntryKey(target int, seq uint64) []byte { return appendU64(OutboxTargetPrefix(target), seq) }

// OutboxNextKey holds the last sequence given to an entry for shard target.
func OutboxNextKey(target int) []byte { return appendU64(outboxKey(outboxTagNext, 8), uint64(target)) }

// DeliveredKey is the key of the record of entry seq of shard source,
// applied on this shard.
func DeliveredKey(source int, seq uint64) []byte {
	return appendU64(appendU64(outboxKey(outboxTagDelivered, 16), uint64(source)), seq)
}

// RemoteChildPrefix is where the steps of job parent whose children run on
// other shards are.
func RemoteChildJobPrefix(parent uint64) []byte {
	return appendU64(outboxKey(outboxTagChild, 8+16), parent)
}

// RemoteChildKey is the key of the link of step of job parent to a child
// on another shard.
func RemoteChildKey(parent uint64, step string) []byte {
	return append(RemoteChildJobPrefix(parent), step...)
}

// RemoteReviewKey is the key of the link of step of job parent to its
// review task on another shard.
func RemoteReviewKey(parent uint64, step string) []byte {
	return append(appendU64(outboxKey(outboxTagReview, 8+16), parent), step...)
}

// ParseRemoteReviewKey decodes a remote review link's key.
func ParseRemoteReviewKey(k []byte) (parent uint64, step string, err error) {
	if len(k) < 10 || k[0] != PrefixOutbox || k[1] != outboxTagReview {
		return 0, "", keyError(k, "not a remote review key")
	}
	return binary.BigEndian.Uint64(k[2:10]), string(k[10:]), nil
}

// SendingKey is the key of the mark of step of job whose signal or cancel
// request (engine.SenderStep) is on its way to another shard.
func SendingKey(job uint64, step string) []byte {
	return append(appendU64(outboxKey(outboxTagSending, 8+16), job), step...)
}

// RemoteUnitKey is the key, on the resource pool's shard, of the unit step
// of job (a run of another shard) asked for.
func RemoteUnitKey(job uint64, step string) []byte {
	return append(appendU64(outboxKey(outboxTagUnit, 8+16), job), step...)
}

// ParseSendingKey decodes a sending mark's key.
func ParseSendingKey(k []byte) (job uint64, step string, err error) {
	if len(k) < 10 || k[0] != PrefixOutbox || k[1] != outboxTagSending {
		return 0, "", keyError(k, "not a sending key")
	}
	return binary.BigEndian.Uint64(k[2:10]), string(k[10:]), nil
}

// SendingValue is the stored form of a sending mark: the pending entry's
// target shard and sequence.
func SendingValue(p OutboxPair) []byte {
	return appendU64(appendU64(make([]byte, 0, 16), uint64(p.Shard)), p.Seq)
}

// ParseSendingValue decodes a sending mark.
func ParseSendingValue(b []byte) (OutboxPair, error) {
	if len(b) != 16 {
		return OutboxPair{}, fmt.Errorf("%w: a sending mark of %d bytes, want 16", ErrCorrupt, len(b))
	}
	s := binary.BigEndian.Uint64(b[:8])
	if s > 1<<16 {
		return OutboxPair{}, fmt.Errorf("%w: a sending mark names shard %d", ErrCorrupt, s)
	}
	return OutboxPair{Shard: int(s), Seq: binary.BigEndian.Uint64(b[8:])}, nil
}

// AckedBelowKey holds the sequence below which every entry of shard source
// is acknowledged, as its deliveries said (engine.Deliver.AckedBelow).
func AckedBelowKey(source int) []byte { return appendU64(outboxKey(outboxTagAcked, 8), uint64(source)) }

// OutboxPair is the (shard, seq) of an entry or delivered key.
type OutboxPair struct {
	Shard int
	Seq   uint64
}

// ParseOutboxPair decodes an entry key (its target and seq) or a delivered
// key (its source and seq).
func ParseOutboxPair(k []byte) (OutboxPair, error) {
	if len(k) != 18 || k[0] != PrefixOutbox || (k[1] != outboxTagEntry && k[1] != outboxTagDelivered) {
		return OutboxPair{}, keyError(k, "not an outbox entry or delivered key")
	}
	s := binary.BigEndian.Uint64(k[2:10])
	if s > 1<<16 {
		return OutboxPair{}, keyError(k, "names no shard")
	}
	return OutboxPair{Shard: int(s), Seq: binary.BigEndian.Uint64(k[10:18])}, nil
}

// ParseRemoteUnitKey decodes a remote unit record's key.
func ParseRemoteUnitKey(k []byte) (job uint64, step string, err error) {
	if len(k) < 10 || k[0] != PrefixOutbox || k[1] != outboxTagUnit {
		return 0, "", keyError(k, "not a remote unit key")
	}
	return binary.BigEndian.Uint64(k[2:10]), string(k[10:]), nil
}

// ParseRemoteChildKey decodes a remote child link's key.
func ParseRemoteChildKey(k []byte) (parent uint64, step string, err error) {
	if len(k) < 10 || k[0] != PrefixOutbox || k[1] != outboxTagChild {
		return 0, "", keyError(k, "not a remote child key")
	}
	return binary.BigEndian.Uint64(k[2:10]), string(k[10:]), nil
}

// outbox describes an outbox key (DescribeKey).
func (d *keyDescriber) outbox() string {
	if len(d.k) < 2 {
		return "invalid key " + hex.EncodeToString(d.k)
	}
	d.rest = d.k[2:]
	var ok bool
	switch d.k[1] {
	case outboxTagEntry:
		ok = d.u64("target") && d.u64("seq") && d.end()
	case outboxTagNext:
		ok = d.u64("target") && d.end()
	case outboxTagAcked:
		ok = d.u64("source") && d.end()
	case outboxTagDelivered:
		ok = d.u64("source") && d.u64("seq") && d.end()
	case outboxTagChild:
		ok = d.u64("parent") && d.tail("step")
	case outboxTagSending, outboxTagUnit:
		ok = d.u64("job") && d.tail("step")
	case outboxTagReview:
		ok = d.u64("parent") && d.tail("step")
	default:
		return "unknown key " + hex.EncodeToString(d.k)
	}
	if !ok {
		return "invalid key " + hex.EncodeToString(d.k)
	}
	return d.b.String()
}
