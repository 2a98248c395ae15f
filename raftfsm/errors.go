package raftfsm

import "errors"

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
)

// BadEntryCode is the stable code of EntryError.
const BadEntryCode = "HDL-RAFT-0001"

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
