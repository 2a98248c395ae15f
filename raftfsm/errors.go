package raftfsm

import (
	"errors"

	"github.com/heddlewf/heddle/engine"
)

// Sentinel errors, matched with errors.Is. Errors about leadership and
// unknown outcomes are the engine's (engine.ErrNotLeader,
// engine.ErrUnknownOutcome), so callers of engine.Service see one set.
var (
	// ErrBadEntry: a log entry did not decode (see EntryError).
	ErrBadEntry = errors.New("raftfsm: bad log entry")
	// ErrClosed: the node was closed.
	ErrClosed = errors.New("raftfsm: node closed")
	// ErrConfig: an invalid Config field.
	ErrConfig = errors.New("raftfsm: invalid config")
	// ErrStateFailed: the state database failed while applying committed
	// log entries, and the node stopped (see StateFailure).
	ErrStateFailed = errors.New("raftfsm: state database failed")
	// ErrDeliveriesHeld: a shard refused a Deliver, an AckDelivery or a
	// hold because a delivery hold is set (see HeldError). It is the
	// engine's sentinel, so that the HTTP API answers it by name and a
	// deliverer on another node knows it.
	ErrDeliveriesHeld = engine.ErrDeliveriesHeld
	// ErrNotHeld: a release, or a backup's copy, found no delivery hold
	// for its token: it expired and the shard's leader released it.
	ErrNotHeld = errors.New("raftfsm: no delivery hold")
	// ErrBackup: a backup directory is unusable (see BackupError).
	ErrBackup = errors.New("raftfsm: bad backup")
	// ErrTooManyReplicas: a node would hold more shard replicas than its
	// process can keep open (CheckReplicaFiles); nothing was created.
	ErrTooManyReplicas = errors.New("raftfsm: too many shard replicas for this process")
)

// Stable codes of this package's typed errors.
const (
	BadEntryCode     = "HDL-RAFT-0001"
	StateFailureCode = "HDL-RAFT-0002"
	HeldCode         = "HDL-RAFT-0003"
	BackupCode       = "HDL-RAFT-0004"
)

// EntryError details ErrBadEntry.
type EntryError struct {
	Index  uint64 // the log index, 0 when decoding outside the log
	Reason string
}

func (e *EntryError) Error() string {
	return "raftfsm: bad log entry " + itoa(e.Index) + ": " + e.Reason + " [" + BadEntryCode + "]"
}
func (e *EntryError) Unwrap() error { return ErrBadEntry }
func (e *EntryError) Code() string  { return BadEntryCode }

// StateFailure is the value a node panics with when its state database
// fails in the middle of applying committed log entries: a read, a write
// into the batch or the commit. Raft gives an FSM no way to refuse an entry,
// and every peer applies it, so a node that went on would serve a state
// that lacks what its peers hold. Stopping keeps its database at the last
// entry it fully applied; restarted on a working disk, it applies the rest
// from the log (or from a snapshot) like any node that was down.
type StateFailure struct {
	Index uint64 // the log entry being applied
	Op    string // what the node was doing ("committing applied log entries")
	Err   error  // what the database answered
}

func (e *StateFailure) Error() string {
	return "raftfsm: state database failed at log entry " + itoa(e.Index) + " while " + e.Op +
		"; this node stops rather than diverge from its peers: " + e.Err.Error() + " [" + StateFailureCode + "]"
}

// Unwrap makes errors.Is match both ErrStateFailed and the database's error.
func (e *StateFailure) Unwrap() []error { return []error{ErrStateFailed, e.Err} }

// Code returns StateFailureCode.
func (e *StateFailure) Code() string { return StateFailureCode }

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}
