package raftfsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// replicaState is where one replica's state database lives, and how a
// snapshot replaces it: a directory of its own (stateDir, a node of one
// group) or a keyspace of its node's state store (replicaKeyspace, a shard
// replica of a sharded node).
//
// The FSM owns the database open returns and each one load returns; it
// calls open once, then load, hold, retire and closeDB from Raft's FSM
// goroutine, except hold, which a reader opening a copy may call from any
// goroutine.
type replicaState interface {
	// open returns the live database. damaged, when not empty, says the
	// state failed its integrity checks and was replaced by an empty one,
	// which the replica rebuilds from its group.
	open() (db *storage.DB, damaged string, err error)
	// load fills a fresh database from a snapshot and makes it the live
	// one; on error the live one is kept.
	load(r io.Reader) (*storage.DB, storage.SnapshotInfo, error)
	// hold registers an open snapshot of db; the returned func releases it.
	hold(db *storage.DB) func()
	// retire lets go of a database load replaced, once its snapshots are
	// released, in the background.
	retire(db *storage.DB)
	// closeDB lets go of the live database at shutdown, after its
	// snapshots and the retirements in progress.
	closeDB(db *storage.DB) error
	// generation is the number of the live database: 0 until a snapshot
	// is loaded, one more at each load.
	generation() int
}

var (
	_ replicaState = (*stateDir)(nil)
	_ replicaState = (*replicaKeyspace)(nil)
)

// nodeStore is a sharded node's one state database, <dir>/state, which
// holds the state of every shard replica the node has, each in a keyspace
// of its own (docs/sharding.md, "A node's directory"). Sharing one Badger
// is what keeps a node's memory, files and background work from growing
// with its replicas: one set of memtables, flushes and compactions for all.
//
// A replica's keyspace is 's', its shard and a generation, 4 bytes each,
// big-endian. The file GENERATIONS beside the database names each
// replica's live generation (absent: 0). A snapshot loads into the next
// generation's keyspace; the database is synced, GENERATIONS replaced
// (written aside, synced, renamed), and the old generation cleared.
// Keyspaces GENERATIONS does not name as live (a load a crash cut short)
// are cleared at open, and Host.removeLeftShards drops the keyspaces of
// shards the node does not hold (a replica that moved away). The tools that read a
// stopped node (heddle verify) find a replica's keyspace from the file,
// without opening the database.
type nodeStore struct {
	dir *stateDir // CURRENT and data-NNNNNN: damage moves the whole store aside
	db  *storage.DB
	// damaged, when not empty, says the store failed its integrity checks
	// at open and was replaced by an empty one: every replica rebuilds.
	damaged string

	mu   sync.Mutex        // guards gens and the writes of GENERATIONS
	gens map[uint32]uint32 // GENERATIONS: the live generation of shards (absent: 0)
	// stopCollect ends the collection of the value log (collect) and
	// waits for it; nil when none was started.
	stopCollect func()
	// limits are the storage options the node was configured with, whose
	// batch limits every replica's keyspace keeps (see WithBatchLimits):
	// the store's own follow its memtables, sized for its replicas.
	limits storage.Options
}

const (
	keyspaceTag     = 's'
	generationsFile = "GENERATIONS"
)

// Memtables of a node store, when the configuration leaves their size to
// the default (see storeOptions).
const (
	memTableBytesPerReplica = storage.DefaultMemTableBytes
	maxStoreMemTableBytes   = 128 << 20
)

// storeOptions returns the options of a node store holding replicas shard
// replicas: opts, with a memtable of 16 MiB a replica, up to 128 MiB,
// unless opts sets one. A replica's next commands read what it wrote
// last, which its memtable holds; with one memtable of 16 MiB for eight
// replicas (three such nodes in one process, seq3) they were read back
// from tables so often that a workflow cost about 20% more CPU than with a
// store per replica, and with 128 MiB it cost the same. Past the cap, the
// replicas share it.
func storeOptions(opts storage.Options, replicas int) storage.Options {
	if opts.MemTableBytes == 0 {
		opts.MemTableBytes = min(max(int64(replicas), 1)*memTableBytesPerReplica, maxStoreMemTableBytes)
	}
	return opts
}

// openNodeStore opens the state store under dir (a node's state/) for a
// node holding replicas shard replicas, configured with opts.
func openNodeStore(dir string, opts storage.Options, replicas int) (*nodeStore, error) {
	sd, err := newStateDir(dir, storeOptions(opts, replicas))
	if err != nil {
		return nil, err
	}
	gens, err := readGenerations(dir)
	if err != nil {
		return nil, err
	}
	db, damaged, err := sd.open()
	if err != nil {
		return nil, err
	}
	s := &nodeStore{dir: sd, db: db, damaged: damaged, gens: gens, limits: opts}
	if err := s.clearStale(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return s, nil
}

// close closes the store; every replica's FSM must be closed first.
func (s *nodeStore) close() error {
	if s.stopCollect != nil {
		s.stopCollect()
		s.stopCollect = nil
	}
	return s.dir.closeDB(s.db)
}

// collect collects the store's value log at every tick until close
// (storage.CollectOnTicks), and calls after with what each collection
// rewrote or failed at. A replica's values past Badger's value threshold
// stay in the value log after its keyspace is cleared (a snapshot
// replaced it, or it moved away), where a directory of its own was
// removed whole; compactions count them dropped, and a collection gives
// their space back (storage.DB.CollectValueLog). The Host ticks every
// storage.DefaultValueLogInterval.
func (s *nodeStore) collect(ticks <-chan time.Time, after func(rewritten int, err error)) {
	s.stopCollect = storage.CollectOnTicks(ticks, s.db.CollectValueLog, after)
}

// valueLogTicks returns the ticks of a value log's collection every
// interval and a function that stops them; tests replace it to tick the
// collection themselves.
var valueLogTicks = defaultValueLogTicks

func defaultValueLogTicks(interval time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(interval)
	return t.C, t.Stop
}

// keyspace returns generation gen of shard's state.
func (s *nodeStore) keyspace(shard, gen uint32) *storage.DB {
	return s.db.Keyspace(keyspacePrefix(shard, gen)).WithBatchLimits(s.limits)
}

func keyspacePrefix(shard, gen uint32) []byte {
	b := []byte{keyspaceTag}
	b = binary.BigEndian.AppendUint32(b, shard)
	return binary.BigEndian.AppendUint32(b, gen)
}

// readGenerations reads dir's GENERATIONS: a line "shard generation" for
// each replica that loaded a snapshot or moved in from a directory of its
// own.
func readGenerations(dir string) (map[uint32]uint32, error) {
	path := filepath.Join(dir, generationsFile)
	f, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return map[uint32]uint32{}, nil
	case err != nil:
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	defer func() { _ = f.Close() }() // read only: closing cannot lose anything
	// A damaged file may be of any size: read no more than one byte past
	// the largest a node writes, which decodeGenerations refuses.
	b, err := io.ReadAll(io.LimitReader(f, int64(maxGenerationsBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	gens, err := decodeGenerations(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gens, nil
}

// maxGenerationsBytes bounds the size of GENERATIONS: a line of the
// longest shard and generation for each of engine.MaxShards shards.
var maxGenerationsBytes = engine.MaxShards * len(fmt.Sprintf("%d %d\n", engine.MaxShards-1, uint32(math.MaxUint32)))

// decodeGenerations reads GENERATIONS' bytes: a line "shard generation"
// (decimal, one space, ending in a newline) for at most engine.MaxShards
// shards, in shard order, each once: the form encodeGenerations writes and
// nothing else.
func decodeGenerations(b []byte) (map[uint32]uint32, error) {
	gens := map[uint32]uint32{}
	if len(b) == 0 {
		return gens, nil
	}
	if len(b) > maxGenerationsBytes {
		return nil, fmt.Errorf("%w: GENERATIONS holds more than the %d bytes of %d shards' lines", storage.ErrCorrupt, maxGenerationsBytes, engine.MaxShards)
	}
	if b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%w: GENERATIONS does not end in a newline (a write cut short?)", storage.ErrCorrupt)
	}
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	if len(lines) > engine.MaxShards {
		return nil, fmt.Errorf("%w: GENERATIONS has %d lines, more than the %d shards a cluster may have", storage.ErrCorrupt, len(lines), engine.MaxShards)
	}
	var prev uint32
	for i, line := range lines {
		var shard, gen uint32
		n, err := fmt.Sscanf(line, "%d %d", &shard, &gen)
		if err != nil || n != 2 || fmt.Sprintf("%d %d", shard, gen) != line || shard >= engine.MaxShards {
			return nil, fmt.Errorf("%w: GENERATIONS line %d is %q, not a shard and its generation", storage.ErrCorrupt, i+1, line)
		}
		if i > 0 && shard <= prev {
			return nil, fmt.Errorf("%w: GENERATIONS line %d names shard %d after shard %d (its lines are in shard order, each shard once)", storage.ErrCorrupt, i+1, shard, prev)
		}
		gens[shard], prev = gen, shard
	}
	return gens, nil
}

// encodeGenerations writes gens as decodeGenerations reads them, in shard
// order.
func encodeGenerations(gens map[uint32]uint32) []byte {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(gens)) {
		fmt.Fprintf(&b, "%d %d\n", k, gens[k])
	}
	return []byte(b.String())
}

// generation returns the live generation of shard's replica.
func (s *nodeStore) generation(shard uint32) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gens[shard]
}

// setGeneration makes gen shard's live generation, durably: it syncs the
// database first, which runs without a sync per commit, so that the
// generation's keys are on disk before the file names it.
func (s *nodeStore) setGeneration(shard, gen uint32) error {
	return s.writeGenerations(shard, func(gens map[uint32]uint32) { gens[shard] = gen })
}

// forget drops shard's line from GENERATIONS.
func (s *nodeStore) forget(shard uint32) error {
	return s.writeGenerations(shard, func(gens map[uint32]uint32) { delete(gens, shard) })
}

// recorded reports whether GENERATIONS has a line for shard: a replica
// that loaded a snapshot, or whose state moved in from the layout before
// the node store (moveLegacy).
func (s *nodeStore) recorded(shard uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.gens[shard]
	return ok
}

func (s *nodeStore) writeGenerations(shard uint32, change func(map[uint32]uint32)) error {
	if err := s.db.Sync(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.gens)
	change(next)
	if err := writeFileSynced(s.dir.dir, generationsFile, encodeGenerations(next)); err != nil {
		return fmt.Errorf("raftfsm: recording the generation of shard %d's state: %w", shard, err)
	}
	s.gens = next
	return nil
}

// firstKey returns the store's first replica key at or after start, nil
// when there is none.
func (s *nodeStore) firstKey(start []byte) ([]byte, error) {
	var found []byte
	err := s.db.View(func(r *storage.Reader) error {
		return r.Scan([]byte{keyspaceTag}, start, false, func(k, _ []byte) (bool, error) {
			found = k
			return false, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("raftfsm: reading the node's state store: %w", err)
	}
	if found != nil && len(found) < 9 {
		return nil, fmt.Errorf("%w: the node's state store holds key %x, which names no replica's state", storage.ErrCorrupt, found)
	}
	return found, nil
}

// clearStale clears every keyspace whose generation is not its shard's
// live one: what a load that a crash cut short wrote.
func (s *nodeStore) clearStale() error {
	for start := []byte{keyspaceTag}; ; {
		found, err := s.firstKey(start)
		if err != nil || found == nil {
			return err
		}
		shard, gen := binary.BigEndian.Uint32(found[1:5]), binary.BigEndian.Uint32(found[5:9])
		if gen != s.generation(shard) {
			if err := s.db.Keyspace(found[:9]).Clear(); err != nil {
				return fmt.Errorf("raftfsm: clearing generation %d of shard %d's state, left over: %w", gen, shard, err)
			}
		}
		start = storage.PrefixEnd(found[:9])
	}
}

// shards returns the shards whose state the store holds keys of.
func (s *nodeStore) shards() ([]uint32, error) {
	var out []uint32
	for start := []byte{keyspaceTag}; ; {
		found, err := s.firstKey(start)
		if err != nil || found == nil {
			return out, err
		}
		out = append(out, binary.BigEndian.Uint32(found[1:5]))
		start = storage.PrefixEnd(found[:5])
	}
}

// dropReplica clears every generation of shard's replica and then forgets
// its generation: a replica that comes back starts from nothing.
func (s *nodeStore) dropReplica(shard uint32) error {
	prefix := binary.BigEndian.AppendUint32([]byte{keyspaceTag}, shard)
	if err := s.db.Keyspace(prefix).Clear(); err != nil {
		return fmt.Errorf("raftfsm: clearing shard %d's state: %w", shard, err)
	}
	if !s.recorded(shard) {
		// The store runs without a sync a commit: the deletes are made
		// durable before the replica's directory, which would bring the
		// removal back after a crash, goes.
		return s.db.Sync()
	}
	return s.forget(shard) // syncs first
}

// replicaKeyspace is one shard replica's state in its node's store.
type replicaKeyspace struct {
	store *nodeStore
	shard uint32
	gen   uint32 // the live generation; Raft's FSM goroutine alone changes it
	// legacy is the replica's state directory of the layout before the
	// node store (shards/NNNN/state), which open moves into the store.
	legacy string
	snapshotHolds
}

// replica returns shard's replica state; legacy is where the layout before
// the node store kept it.
func (s *nodeStore) replica(shard int, legacy string) *replicaKeyspace {
	return &replicaKeyspace{store: s, shard: uint32(shard), legacy: legacy, snapshotHolds: newSnapshotHolds()}
}

func (r *replicaKeyspace) open() (*storage.DB, string, error) {
	r.gen = r.store.generation(r.shard)
	damaged := r.store.damaged
	if r.legacy != "" {
		if d, err := r.moveLegacy(); err != nil {
			return nil, "", err
		} else if d != "" {
			damaged = d
		}
	}
	return r.store.keyspace(r.shard, r.gen), damaged, nil
}

func (r *replicaKeyspace) load(src io.Reader) (*storage.DB, storage.SnapshotInfo, error) {
	gen := r.gen + 1
	db := r.store.keyspace(r.shard, gen)
	fail := func(err error) (*storage.DB, storage.SnapshotInfo, error) {
		// The live generation is untouched; what was loaded is cleared
		// here or, failing that, at the next start.
		return nil, storage.SnapshotInfo{}, fmt.Errorf("raftfsm: restore snapshot: %w", errors.Join(err, db.Clear()))
	}
	// A snapshot must load into an empty keyspace, never on top of what
	// an earlier load left.
	if err := db.Clear(); err != nil {
		return fail(err)
	}
	info, err := db.LoadSnapshot(src)
	if err != nil {
		return fail(err)
	}
	if err := r.store.setGeneration(r.shard, gen); err != nil {
		// Not cleared: the file may name the new generation already (a
		// rename done, its directory's sync failed), and the next start
		// goes by what the file says. A later load clears it first.
		return nil, storage.SnapshotInfo{}, fmt.Errorf("raftfsm: restore snapshot: %w", err)
	}
	r.gen = gen
	return db, info, nil
}

func (r *replicaKeyspace) retire(db *storage.DB) {
	r.retireWith(db, func(db *storage.DB) error {
		if err := db.Clear(); err != nil {
			return fmt.Errorf("raftfsm: clearing the state a restore replaced: %w", err)
		}
		return nil
	})
}

func (r *replicaKeyspace) closeDB(db *storage.DB) error { return r.closeWith(db) }

func (r *replicaKeyspace) generation() int { return int(r.gen) }

// moveLegacy moves the replica's state from a directory of its own (the
// layout before the node store) into its keyspace, once: the keyspace is
// filled from a snapshot of the directory's database, the generation
// record written, and the directory removed. A stop part way leaves the
// directory, and the next start moves it again: a record already written
// means only the removal is left. damaged says the directory's database
// failed its integrity checks (the replica then starts empty and rebuilds).
func (r *replicaKeyspace) moveLegacy() (damaged string, err error) {
	if _, err := os.Stat(r.legacy); errors.Is(err, os.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("raftfsm: %w", err)
	}
	if r.store.recorded(r.shard) && r.store.damaged == "" {
		return "", removeDir(r.legacy) // moved in before a stop
	}
	// Not recorded, or recorded in a store that was damaged since and set
	// aside: the directory is the copy to move in.
	live, err := LiveStateDir(r.legacy)
	if err != nil {
		return "", err
	}
	opts := r.store.dir.opts
	opts.Dir = live
	into := r.store.db.Keyspace(keyspacePrefix(r.shard, 0))
	if err := into.Clear(); err != nil {
		return "", err
	}
	old, err := storage.Open(opts)
	switch {
	case errors.Is(err, storage.ErrDamaged):
		// Kept for the operator beside the store, never read again; the
		// replica starts empty.
		moved := filepath.Join(r.store.dir.dir, fmt.Sprintf("damaged-shard%04d-%d", r.shard, time.Now().Unix()))
		if rerr := os.Rename(live, moved); rerr != nil {
			return "", fmt.Errorf("raftfsm: moving the damaged state of shard %d aside: %w", r.shard, rerr)
		}
		damaged = fmt.Sprintf("%v; moved it to %s", err, moved)
	case err != nil:
		return "", fmt.Errorf("raftfsm: moving %s into the node's state store: %w", r.legacy, err)
	default:
		pr, pw := io.Pipe()
		written := make(chan struct{})
		go func() {
			defer close(written)
			_, err := old.WriteSnapshot(pw)
			pw.CloseWithError(err)
		}()
		_, err = into.LoadSnapshot(pr)
		pr.CloseWithError(errors.New("raftfsm: the move stopped reading")) // ends the writer after a failed load
		// The writer's read transaction must end before the database
		// closes: Badger unmaps its tables at close, iterators or not.
		<-written
		if err = errors.Join(err, old.Close()); err != nil {
			return "", fmt.Errorf("raftfsm: moving %s into the node's state store: %w", r.legacy, errors.Join(err, into.Clear()))
		}
	}
	if err := r.store.setGeneration(r.shard, 0); err != nil {
		return "", err
	}
	r.gen = 0
	return damaged, removeDir(r.legacy)
}

// removeDir removes dir and syncs its parent, so that the removal is
// durable before what depends on it.
func removeDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	d, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	return errors.Join(d.Sync(), d.Close())
}
