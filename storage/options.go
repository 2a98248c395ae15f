package storage

import (
	"fmt"
	"log"
	"os"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Defaults chosen for a database that lives inside someone else's program.
// Badger's own defaults reserve five 64 MiB memtables and a 256 MiB block
// cache (over half a gigabyte before the first write); heddle's working set is
// small records and index keys, so two 16 MiB memtables and a 16 MiB block
// cache keep the resident cost near 64 MiB while one synced transaction can
// still carry about 2.4 MiB of writes (15% of a memtable, Badger's limit).
const (
	DefaultMemTableBytes       = 16 << 20
	DefaultNumMemtables        = 2
	DefaultBlockCacheBytes     = 16 << 20
	DefaultValueThresholdBytes = 4 << 10
	DefaultValueLogFileBytes   = 64 << 20
)

// Options configures Open. The zero value is valid only together with InMemory
// or a Dir; every other zero field takes the documented default.
type Options struct {
	// Dir is the directory holding the database. Required unless InMemory.
	Dir string
	// InMemory keeps everything in memory (for tests); nothing survives Close.
	InMemory bool
	// ReadOnly opens an existing database without writing to its files: a
	// tool that reads a stopped node's database (heddle verify) must leave
	// it as it found it. Writes through it fail. Not with InMemory.
	ReadOnly bool
	// NoSync disables the fsync of each commit. The zero value (false) is the
	// durable default: a commit returns only after its writes reached the disk.
	NoSync bool
	// MemTableBytes is the size of one memtable; 0 means DefaultMemTableBytes.
	MemTableBytes int64
	// NumMemtables is how many memtables may exist at once; 0 means DefaultNumMemtables.
	NumMemtables int
	// BlockCacheBytes is the block cache size; 0 means DefaultBlockCacheBytes.
	BlockCacheBytes int64
	// ValueThresholdBytes: values at least this large go to the value log
	// instead of the LSM tree; 0 means DefaultValueThresholdBytes.
	ValueThresholdBytes int64
	// ValueLogFileBytes is the size of one value-log file; 0 means DefaultValueLogFileBytes.
	ValueLogFileBytes int64
	// Logger receives Badger's messages; nil means warnings and errors to stderr.
	Logger badger.Logger
	// ReserveBytes is the free space writes leave on the file system
	// holding Dir: while less is free, DB.CheckSpace fails with ErrNoSpace
	// and the writers that ask it refuse their writes (reads go on). 0
	// means DefaultReserveBytes; -1 turns the reserve off. Ignored when
	// InMemory.
	ReserveBytes int64
	// FreeBytes measures the free space of the file system holding a
	// directory, in bytes; nil means the operating system's measure
	// (statfs). Embedders with quotas of their own, and tests, set it.
	// It may be called from many goroutines at once.
	FreeBytes func(dir string) (uint64, error)
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.MemTableBytes == 0 {
		o.MemTableBytes = DefaultMemTableBytes
	}
	if o.NumMemtables == 0 {
		o.NumMemtables = DefaultNumMemtables
	}
	if o.BlockCacheBytes == 0 {
		o.BlockCacheBytes = DefaultBlockCacheBytes
	}
	if o.ValueThresholdBytes == 0 {
		o.ValueThresholdBytes = DefaultValueThresholdBytes
	}
	if o.ValueLogFileBytes == 0 {
		o.ValueLogFileBytes = DefaultValueLogFileBytes
	}
	if o.Logger == nil {
		o.Logger = quietLogger{log.New(os.Stderr, "badger ", log.LstdFlags)}
	}
	return o
}

// Validate reports the first field of o that Open would reject.
func (o Options) Validate() error {
	bad := func(field, why string) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidOptions, field, why)
	}
	switch {
	case !o.InMemory && o.Dir == "":
		return bad("Dir", "is empty and InMemory is false")
	case o.InMemory && o.Dir != "":
		return bad("Dir", "must be empty when InMemory is true")
	case o.InMemory && o.ReadOnly:
		return bad("ReadOnly", "must be false when InMemory is true")
	case o.MemTableBytes < 0 || (o.MemTableBytes > 0 && o.MemTableBytes < 1<<20):
		return bad("MemTableBytes", "must be 0 (default) or at least 1 MiB")
	case o.NumMemtables < 0 || o.NumMemtables == 1:
		return bad("NumMemtables", "must be 0 (default) or at least 2")
	case o.BlockCacheBytes < 0:
		return bad("BlockCacheBytes", "must not be negative")
	case o.ValueThresholdBytes < 0 || o.ValueThresholdBytes > 1<<20:
		return bad("ValueThresholdBytes", "must be between 0 and 1 MiB")
	case o.ValueLogFileBytes < 0 || (o.ValueLogFileBytes > 0 && o.ValueLogFileBytes < 1<<20) || o.ValueLogFileBytes >= 2<<30:
		return bad("ValueLogFileBytes", "must be 0 (default) or in [1 MiB, 2 GiB)")
	case o.ReserveBytes < -1:
		return bad("ReserveBytes", "must be -1 (off), 0 (default) or positive")
	}
	d := o.withDefaults()
	if d.ValueThresholdBytes > maxBatchBytes(d.MemTableBytes) {
		return bad("ValueThresholdBytes", "must be below 15% of MemTableBytes")
	}
	return nil
}

// badgerOptions translates o (with defaults applied) into Badger's options.
func (o Options) badgerOptions() badger.Options {
	bo := badger.DefaultOptions(o.Dir).
		WithInMemory(o.InMemory).
		WithReadOnly(o.ReadOnly).
		WithSyncWrites(!o.NoSync && !o.InMemory).
		WithMemTableSize(o.MemTableBytes).
		WithNumMemtables(o.NumMemtables).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBlockCacheSize(o.BlockCacheBytes).
		WithValueThreshold(o.ValueThresholdBytes).
		WithValueLogFileSize(o.ValueLogFileBytes).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithMetricsEnabled(false).
		WithCompression(options.None).
		WithLogger(o.Logger).
		// Verify each block's checksum when it is read: a block damaged
		// while the database is open then reads as absent rather than as
		// altered bytes (Badger's iterators end at it without an error,
		// so the tables are verified whole at open and before a
		// snapshot). Values in the value log carry their own checksum.
		// Badger's check at open is not used: it skips a damaged table.
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true).
		// heddle applies every write from one goroutine (the local log or the
		// Raft FSM), so Badger's conflict detection would only cost memory.
		WithDetectConflicts(false)
	if o.InMemory {
		// Badger keeps values inline in memory mode but applies its value
		// size limit from ValueThreshold; lift it to what a batch can hold.
		bo = bo.WithDir("").WithValueDir("").WithValueThreshold(inMemoryValueLimit(o.MemTableBytes))
	}
	return bo
}

// inMemoryValueLimit is the largest value an in-memory database stores.
func inMemoryValueLimit(memTableBytes int64) int64 { return min(1<<20, maxBatchBytes(memTableBytes)) }

// maxBatchBytes mirrors Badger's transaction size limit for a memtable size.
func maxBatchBytes(memTableBytes int64) int64 { return memTableBytes * 15 / 100 }

// quietLogger passes on only warnings and errors: Badger's info lines are
// noise inside someone else's program.
type quietLogger struct{ l *log.Logger }

func (q quietLogger) Errorf(f string, a ...any)   { q.l.Printf("ERROR: "+f, a...) }
func (q quietLogger) Warningf(f string, a ...any) { q.l.Printf("WARN: "+f, a...) }
func (quietLogger) Infof(string, ...any)          {}
func (quietLogger) Debugf(string, ...any)         {}

// MaxBatchBytes returns how many bytes of writes one batch of a database
// opened with o may carry (Badger's limit, less a safety margin).
func MaxBatchBytes(o Options) int64 { return maxBatchBytes(o.withDefaults().MemTableBytes) * 9 / 10 }
