package raftfsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// openTestStore opens a node store in a fresh directory, closed when the
// test ends (closing twice is harmless).
func openTestStore(t *testing.T, opts storage.Options) *nodeStore {
	t.Helper()
	s, err := openNodeStore(filepath.Join(t.TempDir(), "state"), opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.db.Close() })
	return s
}

// keyspacesOf lists the replica keyspaces that hold keys in s, as "shard
// K generation G".
func keyspacesOf(t *testing.T, s *nodeStore) []string {
	t.Helper()
	var out []string
	err := s.db.View(func(r *storage.Reader) error {
		return r.Scan([]byte{keyspaceTag}, nil, false, func(k, _ []byte) (bool, error) {
			name := fmt.Sprintf("shard %d generation %d", binary.BigEndian.Uint32(k[1:5]), binary.BigEndian.Uint32(k[5:9]))
			if len(out) == 0 || out[len(out)-1] != name {
				out = append(out, name)
			}
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func putKeys(t *testing.T, db *storage.DB, kvs map[string]string) {
	t.Helper()
	b := db.NewBatch()
	tx := b.Begin()
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		tx.Set([]byte(k), []byte(kvs[k]))
	}
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

func keysOf(t *testing.T, db *storage.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := db.View(func(r *storage.Reader) error {
		return r.Scan(nil, nil, true, func(k, v []byte) (bool, error) {
			out[string(k)] = string(v)
			return true, nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNodeStoreGenerations: each replica's state is a keyspace of the
// node's store; a snapshot loads into the next generation, which
// GENERATIONS then names, and the old one is cleared once retired; at
// open, keyspaces no record names as live (a load a crash cut short) are
// cleared and the live ones kept; a replica dropped (moved away) leaves
// nothing, and its record goes.
func TestNodeStoreGenerations(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	opts := storage.Options{NoSync: true}
	s, err := openNodeStore(dir, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	one, two := s.replica(1, ""), s.replica(2, "")
	db1, damaged, err := one.open()
	if err != nil || damaged != "" {
		t.Fatalf("open: %v, %q", err, damaged)
	}
	db2, _, err := two.open()
	if err != nil {
		t.Fatal(err)
	}
	putKeys(t, db1, map[string]string{"a": "1", "b": "1"})
	putKeys(t, db2, map[string]string{"a": "2"})
	if got := keysOf(t, db1); !maps.Equal(got, map[string]string{"a": "1", "b": "1"}) {
		t.Fatalf("shard 1 holds %v", got)
	}

	// A snapshot of other contents replaces shard 1's state.
	src, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	putKeys(t, src, map[string]string{"c": "loaded"})
	var snap bytes.Buffer
	if _, err := src.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	_ = src.Close()
	release := one.hold(db1) // an open snapshot delays the old generation's clearing
	loaded, _, err := one.load(&snap)
	if err != nil {
		t.Fatal(err)
	}
	one.retire(db1)
	if got := keysOf(t, loaded); !maps.Equal(got, map[string]string{"c": "loaded"}) || one.generation() != 1 {
		t.Fatalf("after the load shard 1 holds %v at generation %d", got, one.generation())
	}
	if got := keysOf(t, db1); len(got) != 2 {
		t.Fatalf("the old generation was cleared while a snapshot held it: %v", got)
	}
	release()
	if err := one.closeDB(loaded); err != nil {
		t.Fatal(err)
	}
	if got := keyspacesOf(t, s); !slices.Equal(got, []string{"shard 1 generation 1", "shard 2 generation 0"}) {
		t.Fatalf("after the load and retirement the store holds %v", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, generationsFile)); err != nil || string(b) != "1 1\n" {
		t.Fatalf("GENERATIONS holds %q (%v)", b, err)
	}

	// What a load cut short by a crash leaves: keys of a generation no
	// record names.
	putKeys(t, s.db.Keyspace(keyspacePrefix(2, 1)), map[string]string{"half": "loaded"})
	putKeys(t, s.db.Keyspace(keyspacePrefix(1, 0)), map[string]string{"old": "generation"})
	if err := two.closeDB(db2); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openNodeStore(dir, opts, 1); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.close() }()
	if got := keyspacesOf(t, s); !slices.Equal(got, []string{"shard 1 generation 1", "shard 2 generation 0"}) {
		t.Fatalf("after a restart the store holds %v", got)
	}
	db1, _, err = s.replica(1, "").open()
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, db1); !maps.Equal(got, map[string]string{"c": "loaded"}) {
		t.Fatalf("after a restart shard 1 holds %v", got)
	}

	if err := s.dropReplica(1); err != nil {
		t.Fatal(err)
	}
	if got := keyspacesOf(t, s); !slices.Equal(got, []string{"shard 2 generation 0"}) {
		t.Fatalf("after dropping shard 1 the store holds %v", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, generationsFile)); err != nil || len(b) != 0 {
		t.Fatalf("after dropping shard 1 GENERATIONS holds %q (%v)", b, err)
	}
}

// TestNodeStoreMovesALegacyReplicaIn: a replica kept in a directory of its
// own (the layout before the node store) moves into its keyspace at its
// first open, and the directory goes; one whose move was recorded before a
// stop only has its directory removed; a damaged one is set aside, beside
// the store, and the replica starts empty, saying so.
func TestNodeStoreMovesALegacyReplicaIn(t *testing.T) {
	root := t.TempDir()
	s, err := openNodeStore(filepath.Join(root, "state"), storage.Options{NoSync: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.close() }()
	legacy := func(shard int, kvs map[string]string) string {
		t.Helper()
		dir := filepath.Join(root, "shards", fmt.Sprintf("%04d", shard), "state")
		db, err := storage.Open(storage.Options{Dir: filepath.Join(dir, dataName(0))})
		if err != nil {
			t.Fatal(err)
		}
		putKeys(t, db, kvs)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	kept := map[string]string{"job/1": "one", "job/2": "two"}
	dir := legacy(4, kept)
	db, damaged, err := s.replica(4, dir).open()
	if err != nil || damaged != "" {
		t.Fatalf("open: %v, %q", err, damaged)
	}
	if got := keysOf(t, db); !maps.Equal(got, kept) {
		t.Fatalf("shard 4 holds %v after the move, want %v", got, kept)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the legacy directory is still there: %v", err)
	}
	if !s.recorded(4) {
		t.Fatal("the move is not recorded")
	}

	// Recorded, then stopped before the directory went: the directory is
	// removed and nothing is copied again.
	dir = legacy(4, map[string]string{"job/3": "stale"})
	db, _, err = s.replica(4, dir).open()
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, db); !maps.Equal(got, kept) {
		t.Fatalf("shard 4 holds %v after a second open, want %v", got, kept)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the legacy directory is still there: %v", err)
	}

	// A damaged legacy database is set aside and the replica starts empty.
	dir = legacy(5, map[string]string{"job/9": "nine"})
	flipBytes(t, onlySST(t, filepath.Join(dir, dataName(0))))
	db, damaged, err = s.replica(5, dir).open()
	if err != nil {
		t.Fatal(err)
	}
	if damaged == "" || len(keysOf(t, db)) != 0 {
		t.Fatalf("a damaged legacy replica: damaged %q, %d keys", damaged, len(keysOf(t, db)))
	}
	ents, err := os.ReadDir(filepath.Join(root, "state"))
	if err != nil {
		t.Fatal(err)
	}
	var aside bool
	for _, e := range ents {
		aside = aside || strings.HasPrefix(e.Name(), "damaged-shard0005-")
	}
	if !aside || !strings.Contains(damaged, "damaged-shard0005-") {
		t.Fatalf("the damaged database was not set aside beside the store (%v): %s", ents, damaged)
	}
}

// TestDamagedNodeStoreRebuildsEveryReplica: a node store that fails its
// integrity checks at open is moved aside whole, and every replica opened
// from it says so, to rebuild from its group.
func TestDamagedNodeStoreRebuildsEveryReplica(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := openNodeStore(dir, storage.Options{NoSync: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		db, _, err := s.replica(k, "").open()
		if err != nil {
			t.Fatal(err)
		}
		putKeys(t, db, map[string]string{"job": fmt.Sprint(k)})
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	flipBytes(t, onlySST(t, filepath.Join(dir, dataName(0))))
	if s, err = openNodeStore(dir, storage.Options{NoSync: true}, 1); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.close() }()
	for k := range 2 {
		db, damaged, err := s.replica(k, "").open()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(damaged, "moved it to") || len(keysOf(t, db)) != 0 {
			t.Fatalf("replica %d of a damaged store: damaged %q, keys %v", k, damaged, keysOf(t, db))
		}
	}
}

// TestNodeStoreReplicasKeepTheConfiguredBatchLimits: a store's memtables
// grow with the replicas its node holds, and Badger's transaction limits
// with them, but every replica's keyspace keeps the limits of the
// configured options: the replicas of one group, on nodes holding
// different numbers of replicas, must refuse the same entries.
func TestNodeStoreReplicasKeepTheConfiguredBatchLimits(t *testing.T) {
	opts := storage.Options{NoSync: true} // the default memtables: 128 MiB for 8 replicas
	limit := storage.MaxBatchBytes(opts)
	for _, replicas := range []int{1, 8} {
		s, err := openNodeStore(filepath.Join(t.TempDir(), "state"), opts, replicas)
		if err != nil {
			t.Fatal(err)
		}
		db, _, err := s.replica(0, "").open()
		if err != nil {
			t.Fatal(err)
		}
		b := db.NewBatch()
		tx := b.Begin()
		tx.Set([]byte("k"), make([]byte, limit))
		if err := b.Add(tx); !errors.Is(err, storage.ErrTooLarge) {
			t.Errorf("a store for %d replicas took a write past the configured limit of %d bytes: %v", replicas, limit, err)
		}
		b.Discard()
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDamagedStoreMovesALegacyReplicaInAgain: a replica whose move from
// the layout before the store was recorded, but whose directory a stop
// left, moves in again when the store was damaged since (and set aside
// with the copy it held): the directory is then the only copy.
func TestDamagedStoreMovesALegacyReplicaInAgain(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "state")
	legacy := filepath.Join(root, "shards", "0004", "state")
	makeLegacy := func() {
		t.Helper()
		db, err := storage.Open(storage.Options{Dir: filepath.Join(legacy, dataName(0))})
		if err != nil {
			t.Fatal(err)
		}
		putKeys(t, db, map[string]string{"job/1": "one"})
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	makeLegacy()
	s, err := openNodeStore(dir, storage.Options{NoSync: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.replica(4, legacy).open(); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	makeLegacy() // as if the stop came before the directory's removal
	flipBytes(t, onlySST(t, filepath.Join(dir, dataName(0))))
	if s, err = openNodeStore(dir, storage.Options{NoSync: true}, 1); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.close() }()
	db, _, err := s.replica(4, legacy).open()
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, db); !maps.Equal(got, map[string]string{"job/1": "one"}) {
		t.Fatalf("after the damaged store, shard 4 holds %v", got)
	}
}

// TestNodeStoreCollectsItsValueLog: the large values of a replica that
// moved away stay in the store's value log after its keyspace is
// cleared; the store's collection gives their space back as compactions
// count them dropped, while the other replicas go on writing.
func TestNodeStoreCollectsItsValueLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := openNodeStore(dir, storage.Options{NoSync: true, MemTableBytes: 1 << 20, ValueLogFileBytes: 1 << 20, ReserveBytes: -1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.close() }()
	// The test ticks the collection itself, between its writes (see
	// collect on Badger's race).
	ticks, collected := make(chan time.Time), make(chan struct{})
	s.collect(ticks, func(_ int, err error) {
		if err != nil {
			t.Errorf("collecting: %v", err)
		}
		collected <- struct{}{}
	})
	gone, _, err := s.replica(1, "").open()
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := s.replica(2, "").open()
	if err != nil {
		t.Fatal(err)
	}
	vlog := func() int64 {
		live, err := LiveStateDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(live)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".vlog") {
				n += fi.Size()
			}
		}
		return n
	}
	for i := range 60 {
		putKeys(t, gone, map[string]string{fmt.Sprintf("v%03d", i): strings.Repeat("v", 100<<10)})
	}
	full := vlog()
	if err := s.dropReplica(1); err != nil {
		t.Fatal(err)
	}
	for round := range 500 {
		for part := range 4 { // a transaction's worth each
			filler := map[string]string{}
			for i := range 500 {
				filler[fmt.Sprintf("f%d-%d-%03d", round%8, part, i)] = strings.Repeat("f", 200)
			}
			putKeys(t, kept, filler)
		}
		ticks <- time.Now()
		<-collected
		if vlog() < full/2 {
			return
		}
	}
	t.Fatalf("the value log holds %d bytes of %d after the replica moved away", vlog(), full)
}

// FuzzDecodeGenerations: GENERATIONS is read back from the node's disk,
// where damage may have changed it. Any bytes decode or are refused with
// ErrCorrupt, never a panic; what decodes names at most MaxShards shards
// and is exactly what encodeGenerations writes for it.
func FuzzDecodeGenerations(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("1 1\n"))
	f.Add([]byte("0 0\n3 7\n4095 4294967295\n"))
	f.Add([]byte("1 1"))
	f.Add([]byte("1 1\n1 2\n"))
	f.Add([]byte("01 1\n"))
	f.Add([]byte("4096 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		gens, err := decodeGenerations(b)
		if err != nil {
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("decodeGenerations(%q) = %v, want ErrCorrupt", b, err)
			}
			return
		}
		if len(gens) > engine.MaxShards {
			t.Fatalf("decoded %d shards", len(gens))
		}
		if got := encodeGenerations(gens); !bytes.Equal(got, b) {
			t.Fatalf("decodeGenerations(%q) encodes back as %q", b, got)
		}
	})
}

// A node of one group owns its state's database and collects its value
// log on its ticks (every storage.DefaultValueLogInterval) until it
// closes; the collection itself is storage's (TestCollectValueLog*).
func TestNodeOfOneGroupCollectsItsValueLog(t *testing.T) {
	type asked struct {
		interval time.Duration
		ticks    chan time.Time
		stopped  *atomic.Bool
	}
	var mu sync.Mutex
	var calls []asked
	valueLogTicks = func(d time.Duration) (<-chan time.Time, func()) {
		a := asked{interval: d, ticks: make(chan time.Time), stopped: new(atomic.Bool)}
		mu.Lock()
		calls = append(calls, a)
		mu.Unlock()
		return a.ticks, func() { a.stopped.Store(true) }
	}
	defer func() { valueLogTicks = defaultValueLogTicks }()
	c := newTestCluster(t, 1, nil)
	mu.Lock()
	got := slices.Clone(calls)
	mu.Unlock()
	if len(got) != 1 || got[0].interval != storage.DefaultValueLogInterval {
		t.Fatalf("the node asked for the ticks of %d collections (%+v); want one every storage.DefaultValueLogInterval", len(got), got)
	}
	// One tick, taken: the collection runs on it, and Close waits for it.
	// (The node is idle: no write runs beside it; see
	// storage.CollectOnTicks on Badger's race.)
	got[0].ticks <- time.Time{}
	if err := c.nodes["n1"].Close(); err != nil {
		t.Fatal(err)
	}
	if !got[0].stopped.Load() {
		t.Fatal("Close did not stop the collection's ticks")
	}
	select {
	case got[0].ticks <- time.Time{}:
		t.Fatal("a tick was taken after Close")
	default:
	}
}

// A GENERATIONS of any size is read only up to the largest a node writes,
// and past it refused as damaged.
func TestReadGenerationsBoundsTheFile(t *testing.T) {
	dir := t.TempDir()
	largest := map[uint32]uint32{}
	for k := range uint32(engine.MaxShards) {
		largest[k] = math.MaxUint32
	}
	b := encodeGenerations(largest)
	if len(b) > maxGenerationsBytes {
		t.Fatalf("the largest GENERATIONS is %d bytes, past maxGenerationsBytes %d", len(b), maxGenerationsBytes)
	}
	path := filepath.Join(dir, generationsFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if gens, err := readGenerations(dir); err != nil || len(gens) != engine.MaxShards {
		t.Fatalf("the largest GENERATIONS read as %d shards, %v", len(gens), err)
	}
	if err := os.WriteFile(path, bytes.Repeat([]byte("0 1\n"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readGenerations(dir); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("a 4 MiB GENERATIONS read with %v, want ErrCorrupt", err)
	}
}
