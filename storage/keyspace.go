package storage

import (
	"bytes"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/skl"
)

// Keyspace returns the part of db under prefix as a database of its own:
// every key it writes, reads, scans, snapshots or loads is stored with
// prefix in front, and it returns keys without it. Several replicas of
// different Raft groups share one Badger this way, as CockroachDB's ranges
// share one engine per store: one set of memtables, files, flushes and
// compactions for all of them instead of one each.
//
// A keyspace is a view, not a resource. Closing it does nothing, and it
// must not be used after db is closed. Keyspaces whose prefixes are not
// prefixes of one another never see each other's keys; the caller chooses
// them so (a fixed length, say). A keyspace of a keyspace nests the
// prefixes.
func (db *DB) Keyspace(prefix []byte) *DB {
	ks := *db
	ks.ks = append(append(make([]byte, 0, len(db.ks)+len(prefix)), db.ks...), prefix...)
	return &ks
}

// WithBatchLimits returns db whose batches keep to the limits of a
// database opened with o (its transaction's bytes and keys, and its
// largest value), where those are below db's own. A Raft replica's batch
// limits decide which entries it applies, so every replica of a group
// must have the same: a keyspace of a store whose memtables were sized for
// the replicas it holds takes the limits of the options the node was
// configured with, which the group's other replicas share.
func (db *DB) WithBatchLimits(o Options) *DB {
	limited := *db
	d := o.withDefaults()
	mb := maxBatchBytes(d.MemTableBytes)
	limited.maxBytes = min(db.maxBytes, mb*9/10)
	limited.maxCount = min(db.maxCount, mb/int64(skl.MaxNodeSize)*9/10)
	maxValue := d.ValueLogFileBytes
	if d.InMemory {
		maxValue = inMemoryValueLimit(d.MemTableBytes)
	}
	limited.maxValue = min(db.maxValue, maxValue)
	return &limited
}

// KeyspacePrefix returns the prefix of a keyspace (nil for a whole
// database).
func (db *DB) KeyspacePrefix() []byte { return bytes.Clone(db.ks) }

// full returns key as the database stores it, in a new slice when db is a
// keyspace.
func (db *DB) full(key []byte) []byte {
	if db.ks == nil {
		return key
	}
	return append(append(make([]byte, 0, len(db.ks)+len(key)), db.ks...), key...)
}

// clearChunk is how many keys Clear deletes in one write batch.
const clearChunk = 10_000

// Clear deletes every key of the keyspace, in write batches that other
// writers' commits interleave with; a crash part way leaves some keys,
// and the caller clears again. It does not stop writes, as Badger's
// DropPrefix does (which fails every write to the whole database while it
// runs); the deleted keys' space comes back as compactions pass over them.
// Nothing may write to the keyspace meanwhile. A whole database (no
// keyspace) cannot be cleared this way.
func (db *DB) Clear() error {
	if len(db.ks) == 0 {
		return fmt.Errorf("storage: Clear needs a keyspace, not a whole database")
	}
	for {
		var keys [][]byte
		err := db.bdb.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.PrefetchValues = false
			opts.Prefix = db.ks
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Rewind(); it.ValidForPrefix(db.ks) && len(keys) < clearChunk; it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("storage: clearing keyspace %x: %w", db.ks, err)
		}
		if len(keys) == 0 {
			return nil
		}
		wb := db.bdb.NewWriteBatch()
		for _, k := range keys {
			if err := wb.Delete(k); err != nil {
				wb.Cancel()
				return fmt.Errorf("storage: clearing keyspace %x: %w", db.ks, err)
			}
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("storage: clearing keyspace %x: %w", db.ks, err)
		}
	}
}
