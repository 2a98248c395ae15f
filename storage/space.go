package storage

import (
	"errors"
	"fmt"
)

// Badger writes through memory maps: its write-ahead and value logs are
// sparse files mapped whole, and each new table is mapped and copied in.
// When the disk fills under a mapped write the kernel answers with SIGBUS,
// which kills the process (a Go program cannot recover it in goroutines it
// does not own), and the restart, which replays the logs into new tables,
// does the same. So heddle keeps a free-space reserve, as etcd's NOSPACE
// alarm does with its quota: a writer that may refuse asks CheckSpace
// before each commit and refuses with ErrNoSpace while the file system has
// less free than the reserve. The reserve is sized to hold everything
// Badger may still write on its own after the last accepted commit: the
// pages of the memtables' logs and of the value log, the tables their
// flushes write, and a first compaction. Open refuses, with the same
// error, when there is not room for the tables the replay of the logs
// writes.

// errNoFreeProbe: this platform cannot measure free space.
var errNoFreeProbe = errors.New("storage: free space cannot be measured on this platform")

// DefaultReserveBytes is the reserve a zero Options.ReserveBytes means for
// o (with its defaults applied): the memtables' logs
// (NumMemtables × MemTableBytes), twice that again for the tables their
// flushes and the first compaction write, one value-log file, and 32 MiB
// for MANIFEST, the discard statistics and compaction slack. With the
// default sizes it is 192 MiB.
func DefaultReserveBytes(o Options) int64 {
	d := o.withDefaults()
	mem := int64(d.NumMemtables) * d.MemTableBytes
	return 3*mem + d.ValueLogFileBytes + 32<<20
}

// reserveBytes is the reserve o enforces, 0 for none.
func (o Options) reserveBytes() int64 {
	switch {
	case o.InMemory || o.ReserveBytes < 0:
		return 0
	case o.ReserveBytes == 0:
		return DefaultReserveBytes(o)
	}
	return o.ReserveBytes
}

// freeBytes measures the free space of the file system holding o.Dir.
func (o Options) freeBytes() (uint64, error) {
	if o.FreeBytes != nil {
		return o.FreeBytes(o.Dir)
	}
	return statFree(o.Dir)
}

// openSlackBytes is what opening a directory writes besides the tables of
// the replayed logs: the first pages of a new write-ahead and value log,
// the discard statistics, MANIFEST changes.
const openSlackBytes = 4 << 20

// checkOpenSpace refuses to open a directory when the file system cannot
// take what opening writes (twice the replayed log bytes, for the tables
// and their first compaction, plus openSlackBytes). Below the reserve but
// above that, the database opens to serve reads, and refuses writes.
func (o Options) checkOpenSpace(replayBytes int64) error {
	if o.reserveBytes() == 0 {
		return nil
	}
	free, err := o.freeBytes()
	if errors.Is(err, errNoFreeProbe) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: measuring the free space of %s: %w", o.Dir, err)
	}
	need := uint64(2*replayBytes + openSlackBytes)
	if free < need {
		return &NoSpaceError{Dir: o.Dir, FreeBytes: free, NeedBytes: need, Op: "open"}
	}
	return nil
}

// CheckSpace returns a *NoSpaceError (matching ErrNoSpace) when the file
// system holding the database has less free space than the reserve, and
// nil otherwise: always for an in-memory database, a reserve of -1, or a
// platform that cannot measure free space.
//
// Writers that may refuse a write call it before each commit: the embedded
// log for every batch that writes, a Raft leader before it proposes. The
// Raft state machine does not, since it must apply what the log committed:
// the reserve is what it applies into. CheckSpace is safe for concurrent
// use and costs one statfs call.
func (db *DB) CheckSpace() error {
	reserve := db.opts.reserveBytes()
	if reserve == 0 {
		return nil
	}
	free, err := db.opts.freeBytes()
	if errors.Is(err, errNoFreeProbe) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: measuring the free space of %s: %w", db.opts.Dir, err)
	}
	if free < uint64(reserve) {
		return &NoSpaceError{Dir: db.opts.Dir, FreeBytes: free, NeedBytes: uint64(reserve), Op: "write"}
	}
	return nil
}
