package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// maxKeyBytes is the longest key Badger accepts.
const maxKeyBytes = 65000

// Batch is one Badger read-write transaction shared by many commands (group
// commit): each command runs in its own Tx, and only the writes of commands
// that succeeded are added. Commit makes them all durable with one sync.
//
// A Batch is driven by a single goroutine.
type Batch struct {
	db  *DB
	txn *badger.Txn
	// pending holds the writes added, which txn receives at Commit (see
	// pending for why not before).
	pending      *pending
	bytes, count int64
	// touched lists the job records written, so waiters on one job are
	// woken by its changes alone, and closed the jobs that closed (see
	// ClosedJobs).
	touched, closed []uint64
}

// NewBatch starts a batch.
func (db *DB) NewBatch() *Batch {
	return &Batch{db: db, txn: db.bdb.NewTransaction(true), pending: newPending()}
}

// Begin returns a Tx for one command over this batch.
func (b *Batch) Begin() *Tx { return NewTx(&Reader{txn: b.txn, pending: b.pending, ks: b.db.ks}) }

// TouchedJobs returns the ids of the job records the batch writes (with
// repeats), never nil.
func (b *Batch) TouchedJobs() []uint64 {
	if b.touched == nil {
		return []uint64{}
	}
	return b.touched
}

// ClosedJobs returns the ids of the jobs the batch closed (with repeats),
// never nil: those whose entry in the index by closing time it writes.
// A record is listed there only once it is terminal, and the entry is
// written when it turns terminal, so a waiter for a job's end needs no
// other wake-up.
func (b *Batch) ClosedJobs() []uint64 {
	if b.closed == nil {
		return []uint64{}
	}
	return b.closed
}

// Empty reports whether no writes were added.
func (b *Batch) Empty() bool { return b.count == 0 }

// Add moves tx's buffered writes into the batch, in the order tx first wrote
// them. It returns ErrBatchFull, writing nothing, when they do not fit beside
// what the batch holds (commit it and Add to a fresh batch: the writes remain
// valid, since the committed batch is exactly the state tx read), and
// ErrTooLarge when they would not fit even into an empty batch.
func (b *Batch) Add(tx *Tx) error {
	// A keyspace's prefix is part of every key Badger stores.
	n, size := int64(tx.Len()), tx.Bytes()+int64(tx.Len()*len(b.db.ks))
	if n > b.db.maxCount || size > b.db.maxBytes {
		return fmt.Errorf("%w: %d keys, %d bytes (limit %d keys, %d bytes)", ErrTooLarge, n, size, b.db.maxCount, b.db.maxBytes)
	}
	// Check every write before applying any: Badger refuses an oversized key
	// or value only when it meets it, after the earlier writes went in.
	for _, k := range tx.order {
		w := tx.writes[k]
		if len(k) == 0 {
			// Badger refuses it in a whole database; in a keyspace it
			// would be the prefix alone, which a snapshot cannot carry.
			return fmt.Errorf("storage: a write of an empty key: %w", badger.ErrEmptyKey)
		}
		if len(k)+len(b.db.ks) > maxKeyBytes || (!w.deleted && int64(len(w.val)) > b.db.maxValue) {
			return fmt.Errorf("%w: key of %d bytes with a value of %d bytes (limits %d, %d)",
				ErrTooLarge, len(k), len(w.val), maxKeyBytes, b.db.maxValue)
		}
	}
	if b.count+n > b.db.maxCount || b.bytes+size > b.db.maxBytes {
		return ErrBatchFull
	}
	for _, k := range tx.order {
		w := tx.writes[k]
		switch {
		case len(k) == 9 && k[0] == PrefixJob:
			b.touched = append(b.touched, binary.BigEndian.Uint64([]byte(k[1:])))
		case len(k) == 17 && k[0] == PrefixClosed && !w.deleted:
			b.closed = append(b.closed, binary.BigEndian.Uint64([]byte(k[9:])))
		}
		b.pending.put(pendingWrite{key: k, val: w.val, deleted: w.deleted})
	}
	b.count += n
	b.bytes += size
	return nil
}

// Commit makes the batch durable (synced unless the database was opened with
// NoSync) and ends it.
func (b *Batch) Commit() error {
	if b.count == 0 {
		b.txn.Discard()
		return nil
	}
	err := b.pending.each(func(w pendingWrite) error {
		// Badger keeps the key until the commit: each gets its own slice.
		key := append(append(make([]byte, 0, len(b.db.ks)+len(w.key)), b.db.ks...), w.key...)
		if w.deleted {
			return b.txn.Delete(key)
		}
		return b.txn.Set(key, w.val)
	})
	if err != nil {
		// Our accounting keeps us below Badger's limits, so this is an
		// internal error, and nothing of the batch is written.
		b.txn.Discard()
		return fmt.Errorf("storage: handing the batch's writes to Badger: %w", err)
	}
	return b.txn.Commit()
}

// Discard drops the batch without writing anything.
func (b *Batch) Discard() { b.txn.Discard() }
