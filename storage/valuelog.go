package storage

import (
	"errors"
	"fmt"
	"sync"
	"time"

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

// DefaultValueLogInterval is how often the owners of a database on disk
// (the embedded engine, a cluster node's state) collect its value log.
// Collecting finds nothing to rewrite until a value-log file is half
// garbage, so running it often costs little; running it seldom lets the
// garbage of a busy database grow by as much as it writes meanwhile.
const DefaultValueLogInterval = 10 * time.Minute

// CollectOnTicks runs collect (a database's CollectValueLog, or one that
// finds the database it collects) at every tick of ticks, one at a time,
// and hands after what each returned. It returns stop, which ends the
// collecting and waits for a collection under way to end: call it before
// closing the database. Ticks that come during a collection are dropped,
// as a time.Ticker drops them.
//
// Badger's collection reads the newest memtable's highest version without
// the lock its writers hold, which the race detector reports when a write
// runs meanwhile. The read is of one aligned word, and a stale value only
// makes the collection keep more deletion markers; tests that collect
// beside writes give ticks between their writes.
func CollectOnTicks(ticks <-chan time.Time, collect func() (int, error), after func(rewritten int, err error)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-ticks:
				n, err := collect()
				after(n, err)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}
