package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/skl"
)

// DB is an open heddle database. It is safe for concurrent use: reads run in
// their own read transactions, while writes go through Batch, which the caller
// must drive from a single goroutine (the local log or the Raft FSM).
type DB struct {
	bdb  *badger.DB
	opts Options
	// maxBytes and maxCount are the limits one Batch stays below, kept with a
	// margin under Badger's own so that ErrTxnTooBig never surfaces mid-batch.
	maxBytes, maxCount int64
	// maxValue is the largest single value Badger accepts here.
	maxValue int64
	// ks is the key prefix of a keyspace (see Keyspace), added to every
	// key this DB reads or writes and taken off every key it returns; nil
	// for the database itself.
	ks []byte
}

// Open opens (creating if needed) the database described by opts.
//
// Before Badger sees a directory, Open checks its files (see Check) and
// refuses a damaged one with a *DamagedError (matching ErrDamaged) naming
// the first damaged file; a log whose only damage is the torn tail a crash
// leaves is not damaged. It also refuses, with a *NoSpaceError, when the
// disk cannot take the tables that replaying the logs writes.
func Open(opts Options) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	bo := opts.badgerOptions()
	if !opts.InMemory {
		floor, err := checkBeforeOpen(opts)
		if err != nil {
			return nil, err
		}
		// Memtables written larger than opts says (by a node that held
		// more replicas, or before MemTableBytes was lowered) replay
		// into memtables as large: a smaller one would overflow, and
		// Badger would exit the process. The batch limits stay those of
		// opts, below.
		if floor > opts.MemTableBytes {
			bo = bo.WithMemTableSize(floor)
		}
	}
	bdb, err := openBadger(bo)
	// Badger wraps its errors with %+v, not %w, so the sentinel is found
	// by its text.
	if opts.ReadOnly && err != nil && (errors.Is(err, badger.ErrTruncateNeeded) || strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error())) {
		return nil, fmt.Errorf("%w: %q: %v", ErrNeedsRecovery, opts.Dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %q: %w", opts.Dir, err)
	}
	db := &DB{bdb: bdb, opts: opts}
	// Keep 10% headroom under Badger's limits: its own accounting adds
	// per-entry overhead that our estimate does not model exactly.
	mb := maxBatchBytes(opts.MemTableBytes)
	db.maxBytes = min(bdb.MaxBatchSize(), mb) * 9 / 10
	db.maxCount = min(bdb.MaxBatchCount(), mb/int64(skl.MaxNodeSize)) * 9 / 10
	db.maxValue = opts.ValueLogFileBytes
	if opts.InMemory {
		db.maxValue = inMemoryValueLimit(opts.MemTableBytes)
	}
	return db, nil
}

// checkBeforeOpen runs the integrity and free-space checks on the
// directory of opts, creating it when it does not exist, and returns the
// memtable size its memtables' logs need (inspection.memTableFloor).
func checkBeforeOpen(opts Options) (memTableFloor int64, err error) {
	if opts.ReadOnly {
		// Only an existing database opens read-only: nothing is created.
		if _, err := os.Stat(filepath.Join(opts.Dir, "MANIFEST")); err != nil {
			return 0, fmt.Errorf("storage: open %q read-only: %w", opts.Dir, err)
		}
	} else if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return 0, fmt.Errorf("storage: open %q: %w", opts.Dir, err)
	}
	unlock, err := lockDir(opts.Dir)
	if err != nil {
		return 0, err
	}
	insp, err := inspect(opts.Dir)
	unlock() // Badger takes the lock again at once
	if err != nil {
		return 0, err
	}
	if n := len(insp.damages); n > 0 {
		d := *insp.damages[0]
		d.More = n - 1
		return 0, &d
	}
	if opts.ReadOnly {
		return insp.memTableFloor, nil // it writes nothing, so it needs no room
	}
	return insp.memTableFloor, opts.checkOpenSpace(insp.replayBytes)
}

// openBadger opens Badger, turning a panic on its own goroutine into a
// *DamagedError. (Badger's other goroutines cannot be recovered; the checks
// before it are what keep them from meeting damaged files.)
func openBadger(bo badger.Options) (bdb *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{File: bo.Dir, Kind: DamageUnreadable, Offset: -1,
				Reason: "Badger panicked reading the directory: " + firstLine(fmt.Sprint(r))}
		}
	}()
	return badger.Open(bo)
}

// Close flushes and closes the database. Closing a keyspace does nothing:
// the database it is part of stays open until its owner closes it.
func (db *DB) Close() error {
	if db.ks != nil {
		return nil
	}
	return db.bdb.Close()
}

// Sync makes every committed write durable, for databases opened with
// NoSync (a Raft node's state, whose durability is the Raft log's until a
// snapshot is taken). A keyspace's Sync syncs its whole database.
func (db *DB) Sync() error { return db.bdb.Sync() }

// Badger exposes the underlying database for read-only helpers and tests.
func (db *DB) Badger() *badger.DB { return db.bdb }

// Options returns the options the database was opened with, defaults applied.
func (db *DB) Options() Options { return db.opts }

// View runs fn in a read-only transaction over a consistent point in time.
func (db *DB) View(fn func(r *Reader) error) error {
	return db.bdb.View(func(txn *badger.Txn) error { return fn(&Reader{txn: txn, ks: db.ks}) })
}

// Get reads one key in its own read transaction.
func (db *DB) Get(key []byte) ([]byte, error) {
	var out []byte
	err := db.View(func(r *Reader) error {
		v, err := r.Get(key)
		out = v
		return err
	})
	return out, err
}
