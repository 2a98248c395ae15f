package storage

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// valueLogDiscardRatio is the share of a value-log file that must be
// garbage for CollectValueLog to rewrite it: at one half, a rewrite
// copies at most as many bytes as it frees.
const valueLogDiscardRatio = 0.5

// CollectValueLog gives back the space of values that were overwritten or
// deleted. Badger keeps values past its value threshold (4 KiB by
// default) in value-log files, which compactions do not shrink: they only
// count, file by file, the values they drop. It rewrites, one after
// another, the files at least half garbage by that count, and returns how
// many it rewrote. It runs beside reads and writes; a keyspace collects
// its whole database. A database in memory or read-only has nothing to
// collect.
func (db *DB) CollectValueLog() (int, error) {
	if db.opts.InMemory || db.opts.ReadOnly {
		return 0, nil
	}
	for n := 0; ; n++ {
		err := db.bdb.RunValueLogGC(valueLogDiscardRatio)
		switch {
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			// Nothing left past the ratio, or a collection already runs.
			return n, nil
		case err != nil:
			return n, fmt.Errorf("storage: collecting the value log: %w", err)
		}
	}
}
