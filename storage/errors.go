package storage

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is; the typed errors below wrap them.
var (
	// ErrNotFound reports that a key holds no value.
	ErrNotFound = errors.New("storage: not found")
	// ErrCorrupt reports bytes that do not decode as what their key says they are.
	ErrCorrupt = errors.New("storage: corrupt record")
	// ErrBatchFull reports that a command's writes do not fit into the current batch;
	// the caller commits the batch and adds the writes to a fresh one.
	ErrBatchFull = errors.New("storage: batch full")
	// ErrTooLarge reports that one command's writes exceed what a single Badger
	// transaction can hold even on its own.
	ErrTooLarge = errors.New("storage: writes exceed one transaction")
	// ErrInvalidOptions reports an Options value that Validate rejects.
	ErrInvalidOptions = errors.New("storage: invalid options")
	// ErrRead reports that Badger failed to read a key or value that it
	// holds (an I/O error, a checksum mismatch, a closed database). Unlike
	// every other error here it says nothing about the data, only about this
	// database: another copy of the same state would have read it.
	ErrRead = errors.New("storage: read failed")
)

// CorruptCode is the stable code carried by every CorruptError.
const CorruptCode = "HDL-STORE-0001"

// CorruptError names a record that failed to decode: the key it was read from
// (when known), the kind it was expected to be and why decoding failed.
type CorruptError struct {
	Key    []byte
	Kind   Kind
	Reason string
}

func (e *CorruptError) Error() string {
	if len(e.Key) > 0 {
		return fmt.Sprintf("storage: corrupt %s record at key %q: %s [%s]", e.Kind, e.Key, e.Reason, CorruptCode)
	}
	return fmt.Sprintf("storage: corrupt %s record: %s [%s]", e.Kind, e.Reason, CorruptCode)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Code returns the stable code of corruption errors.
func (e *CorruptError) Code() string { return CorruptCode }
