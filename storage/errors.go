package storage

import (
	"errors"
	"fmt"
	"strings"
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
	// ErrDamaged reports a data directory that fails the integrity checks
	// Open runs before Badger sees it: a write-ahead or value log damaged
	// before its end or cut short, a MANIFEST missing beside data files or
	// failing its checksum, a table that fails its checksums or is missing.
	// Badger would silently drop or alter acknowledged data; Open refuses
	// (see DamagedError, and PlanRepair for what an operator may do).
	ErrDamaged = errors.New("storage: data directory damaged")
	// ErrNoSpace reports a write refused because the file system holding
	// the database has less free space than the reserve (see NoSpaceError).
	// Reads go on; writes are accepted again once space is freed.
	ErrNoSpace = errors.New("storage: not enough free space")
	// ErrNeedsRecovery reports a database that Open with ReadOnly cannot
	// open: it was not closed cleanly (its process was killed), and
	// opening it replays and truncates its logs, which is a write. A
	// read-write Open recovers it; a tool that must not write opens a copy.
	ErrNeedsRecovery = errors.New("storage: database not closed cleanly: it needs the recovery a read-write open makes")
)

// Stable codes of this package's typed errors.
const (
	// CorruptCode is carried by every CorruptError.
	CorruptCode = "HDL-STORE-0001"
	// DamagedCode is carried by every DamagedError.
	DamagedCode = "HDL-STORE-0002"
	// NoSpaceCode is carried by every NoSpaceError.
	NoSpaceCode = "HDL-STORE-0003"
)

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

// Damage names what is wrong with one file of a data directory.
type Damage string

// The kinds of damage the integrity checks find.
const (
	// DamageLogCorrupt: a record of a write-ahead (.mem) or value (.vlog)
	// log fails its checksum or is malformed, and intact records follow it.
	// Badger would stop reading at the bad record and drop the rest.
	DamageLogCorrupt Damage = "log-corrupt"
	// DamageLogCut: a log ends inside a record or a transaction, with none
	// of the zero padding a crash leaves: the file was cut short.
	DamageLogCut Damage = "log-cut"
	// DamageLogHeader: a log's header is short or names an encryption key
	// (heddle never encrypts).
	DamageLogHeader Damage = "log-header"
	// DamageManifestMissing: data files lie in the directory but MANIFEST,
	// which lists the tables, is gone. Badger would delete every table.
	DamageManifestMissing Damage = "manifest-missing"
	// DamageManifestCorrupt: MANIFEST does not read back (a checksum, its
	// magic or a change it records).
	DamageManifestCorrupt Damage = "manifest-corrupt"
	// DamageTableMissing: MANIFEST lists a table whose file is gone.
	DamageTableMissing Damage = "table-missing"
	// DamageTableCorrupt: a table (.sst) fails its checksums or is cut
	// short. Badger would skip it, or serve altered values, or panic.
	DamageTableCorrupt Damage = "table-corrupt"
	// DamageUnreadable: Badger itself panicked opening the directory,
	// on damage the checks before it did not recognise.
	DamageUnreadable Damage = "unreadable"
)

// DamagedError describes one damaged file. Open returns the first one found
// (More counts the others); Check returns them all.
type DamagedError struct {
	// File is the damaged file's path.
	File string
	// Kind says what is wrong.
	Kind Damage
	// Offset is where the damage starts in File, -1 when the whole file is
	// concerned (a missing file, a table).
	Offset int64
	// BytesAfter is how many bytes lie from Offset to the end of the last
	// intact record after it: what Badger would drop and what a truncation
	// at Offset drops. For a whole file (Offset -1) it is the file's size.
	BytesAfter int64
	// RecordsAfter is how many intact records lie after Offset; TxnsAfter
	// is how many of them are a transaction's end marker: each a committed
	// (in a synced store, acknowledged) transaction that Badger would drop.
	RecordsAfter, TxnsAfter int
	// Reason says what was seen, in words.
	Reason string
	// More counts the other damaged files Open found besides this one.
	More int
}

func (e *DamagedError) Error() string {
	var b strings.Builder
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "storage: damaged data directory: %s: at offset %d, %s", e.File, e.Offset, e.Reason)
	} else {
		fmt.Fprintf(&b, "storage: damaged data directory: %s: %s", e.File, e.Reason)
	}
	switch {
	case e.BytesAfter > 0 && e.Offset >= 0:
		fmt.Fprintf(&b, "; %d bytes lie after it", e.BytesAfter)
		switch {
		case e.RecordsAfter > 0 && strings.HasSuffix(e.File, ".vlog"):
			fmt.Fprintf(&b, " (%d intact values)", e.RecordsAfter)
		case e.RecordsAfter > 0:
			fmt.Fprintf(&b, " (%d intact records, %d committed transactions)", e.RecordsAfter, e.TxnsAfter)
		}
	case e.BytesAfter > 0:
		fmt.Fprintf(&b, "; the file holds %d bytes", e.BytesAfter)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "; %d more damaged files", e.More)
	}
	fmt.Fprintf(&b, " [%s]", DamagedCode)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrDamaged) true.
func (e *DamagedError) Unwrap() error { return ErrDamaged }

// Code returns DamagedCode.
func (e *DamagedError) Code() string { return DamagedCode }

// NoSpaceError details ErrNoSpace: the free space of the file system
// holding Dir, and what was asked for.
type NoSpaceError struct {
	Dir string
	// FreeBytes is the space the file system reported free.
	FreeBytes uint64
	// NeedBytes is what the refused operation needs free: the reserve for a
	// write, or what opening the directory writes (flushing the replayed
	// logs) for Open.
	NeedBytes uint64
	// Op is what was refused ("write", "open").
	Op string
}

func (e *NoSpaceError) Error() string {
	then := "reads go on, and writes are accepted again once space is freed on that disk"
	if e.Op == "open" {
		then = "free space on that disk and open it again"
	}
	return fmt.Sprintf("storage: %s refused: %s has %d bytes free, under the %d bytes it needs; %s [%s]",
		e.Op, e.Dir, e.FreeBytes, e.NeedBytes, then, NoSpaceCode)
}

// Unwrap makes errors.Is(err, ErrNoSpace) true.
func (e *NoSpaceError) Unwrap() error { return ErrNoSpace }

// Code returns NoSpaceCode.
func (e *NoSpaceError) Code() string { return NoSpaceCode }
