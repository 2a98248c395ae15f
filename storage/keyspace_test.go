package storage

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// keyspaceSeedEnv replays one run of TestKeyspacesMatchAReferenceModel.
const keyspaceSeedEnv = "HEDDLE_KEYSPACE_SEED"

// TestKeyspacesMatchAReferenceModel drives three keyspaces of one database
// (two neighbours, and one whose prefix ends in 0xff bytes, where a
// prefix's end key is longest) with random writes and deletes, each
// checked against a map of its own: Get, Scan from a start, ScanValues and
// ScanReverse below a bound, read inside a batch (over its pending writes)
// and after it commits. No keyspace sees another's keys, and the whole
// database sees each one's keys under its prefix. The seed is printed.
func TestKeyspacesMatchAReferenceModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv(keyspaceSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", keyspaceSeedEnv, err)
		}
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, keyspaceSeedEnv, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	db := openMem(t)
	prefixes := [][]byte{{'s', 0, 1}, {'s', 0, 2}, {'s', 0xff, 0xff}}
	spaces := make([]*DB, len(prefixes))
	models := make([]map[string]string, len(prefixes))
	for i, p := range prefixes {
		spaces[i] = db.Keyspace(p)
		models[i] = map[string]string{}
	}
	// Keys outside every keyspace, at the edges a walk meets: just below
	// the first, and the very key where the last one's range ends (where
	// a walk back from its end starts).
	outside := map[string]string{"s\x00\x00": "below", "t": "the end of the last"}
	putAll(t, db, outside)
	// Keys of a few bytes from a small alphabet, 0xff included, so that
	// prefixes, bounds and neighbours collide often.
	alphabet := []byte{0, 1, 'a', 0xfe, 0xff}
	randKey := func(maxLen int) []byte {
		k := make([]byte, 1+rng.IntN(maxLen))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}

	check := func(step int, i int, r *Reader, model map[string]string) {
		t.Helper()
		prefix := randKey(2)
		prefix = prefix[:rng.IntN(len(prefix)+1)]
		start := append(bytes.Clone(prefix), randKey(2)...)
		if rng.IntN(3) == 0 {
			start = nil
		}
		var want []string
		for _, k := range slices.Sorted(maps.Keys(model)) {
			if bytes.HasPrefix([]byte(k), prefix) && (start == nil || k >= string(start)) {
				want = append(want, k)
			}
		}
		var got []string
		if err := r.Scan(prefix, start, true, func(k, v []byte) (bool, error) {
			if model[string(k)] != string(v) {
				t.Errorf("step %d, keyspace %d: Scan gave %x=%q, the model holds %q", step, i, k, v, model[string(k)])
			}
			got = append(got, string(k))
			return true, nil
		}); err != nil {
			t.Fatalf("step %d: Scan: %v", step, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d, keyspace %d: Scan(%x, %x) = %x, want %x", step, i, prefix, start, got, want)
		}
		got = got[:0]
		if err := r.ScanValues(prefix, start, func(k, v []byte) (bool, error) {
			if model[string(k)] != string(v) {
				t.Errorf("step %d, keyspace %d: ScanValues gave %x=%q, the model holds %q", step, i, k, v, model[string(k)])
			}
			got = append(got, string(k))
			return true, nil
		}); err != nil {
			t.Fatalf("step %d: ScanValues: %v", step, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d, keyspace %d: ScanValues(%x, %x) = %x, want %x", step, i, prefix, start, got, want)
		}
		before := append(bytes.Clone(prefix), randKey(2)...)
		if rng.IntN(3) == 0 {
			before = nil
		}
		want = want[:0]
		for _, k := range slices.Backward(slices.Sorted(maps.Keys(model))) {
			if bytes.HasPrefix([]byte(k), prefix) && (before == nil || k < string(before)) {
				want = append(want, k)
			}
		}
		got = got[:0]
		if err := r.ScanReverse(prefix, before, func(k []byte) (bool, error) {
			got = append(got, string(k))
			return true, nil
		}); err != nil {
			t.Fatalf("step %d: ScanReverse: %v", step, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d, keyspace %d: ScanReverse(%x, %x) = %x, want %x", step, i, prefix, before, got, want)
		}
		k := randKey(3)
		v, err := r.Get(k)
		mv, ok := model[string(k)]
		switch {
		case ok && (err != nil || string(v) != mv):
			t.Fatalf("step %d, keyspace %d: Get(%x) = %q, %v; want %q", step, i, k, v, err, mv)
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("step %d, keyspace %d: Get(%x) = %q, %v; want ErrNotFound", step, i, k, v, err)
		}
	}

	for step := range 300 {
		i := rng.IntN(len(spaces))
		next := maps.Clone(models[i])
		b := spaces[i].NewBatch()
		for range 1 + rng.IntN(3) {
			tx := b.Begin()
			for range 1 + rng.IntN(4) {
				k := randKey(3)
				if rng.IntN(3) == 0 {
					tx.Delete(k)
					delete(next, string(k))
				} else {
					v := strconv.Itoa(step) + "-" + strconv.Itoa(rng.IntN(100))
					tx.Set(k, []byte(v))
					next[string(k)] = v
				}
			}
			if err := b.Add(tx); err != nil {
				t.Fatalf("step %d: Add: %v", step, err)
			}
		}
		// Inside the batch its writes show over what is stored.
		check(step, i, b.Begin().r, next)
		if err := b.Commit(); err != nil {
			t.Fatalf("step %d: Commit: %v", step, err)
		}
		models[i] = next
		for j, ks := range spaces {
			if err := ks.View(func(r *Reader) error { check(step, j, r, models[j]); return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The whole database holds every keyspace's keys under its prefix, and
	// nothing else.
	whole := maps.Clone(outside)
	for i, p := range prefixes {
		for k, v := range models[i] {
			whole[string(p)+k] = v
		}
	}
	if got := dump(t, db); !maps.Equal(got, whole) {
		t.Fatalf("the whole database holds %d keys, the keyspaces %d", len(got), len(whole))
	}
}

// TestKeyspaceSnapshotAndClear: a keyspace's snapshot holds its keys
// without the prefix, loads into another keyspace or a database of its
// own, and is refused by a keyspace that is not empty; Clear empties one
// keyspace and leaves its neighbours whole.
func TestKeyspaceSnapshotAndClear(t *testing.T) {
	db := openMem(t)
	a, b, c := db.Keyspace([]byte("s\x00\x01")), db.Keyspace([]byte("s\x00\x02")), db.Keyspace([]byte("s\x00\x03"))
	putAll(t, a, map[string]string{"j1": "one", "j2": "two", string(KeyAppliedIndex): string(U64(42))})
	putAll(t, b, map[string]string{"j1": "other"})

	var buf bytes.Buffer
	info, err := a.WriteSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if info.Keys != 3 || info.AppliedIndex != 42 {
		t.Fatalf("snapshot of a: %+v, want 3 keys at index 42", info)
	}
	if _, err := c.LoadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, c), dump(t, a); !maps.Equal(got, want) {
		t.Fatalf("c after loading a's snapshot: %q, want %q", got, want)
	}
	own := openMem(t)
	if _, err := own.LoadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, own), dump(t, a); !maps.Equal(got, want) {
		t.Fatalf("a database of its own after loading a's snapshot: %q, want %q", got, want)
	}
	if _, err := b.LoadSnapshot(bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("a keyspace holding keys took a snapshot")
	}

	if err := a.Clear(); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, a); len(got) != 0 {
		t.Fatalf("a after Clear: %q", got)
	}
	if got := dump(t, b); !maps.Equal(got, map[string]string{"j1": "other"}) {
		t.Fatalf("b after a's Clear: %q", got)
	}
	if got := dump(t, c); len(got) != 3 {
		t.Fatalf("c after a's Clear: %q", got)
	}
	if err := db.Clear(); err == nil {
		t.Fatal("Clear of a whole database did not refuse")
	}
	// Closing a keyspace leaves the database open.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, c); len(got) != 3 {
		t.Fatalf("c after closing it: %q", got)
	}
}

// TestKeyspaceRefusesAnEmptyKey: in a keyspace an empty key would be the
// prefix alone, which a snapshot cannot carry (a zero length ends its
// records); it is refused there as Badger refuses it in a whole database.
func TestKeyspaceRefusesAnEmptyKey(t *testing.T) {
	db := openMem(t)
	for name, d := range map[string]*DB{"a whole database": db, "a keyspace": db.Keyspace([]byte("s\x00\x01"))} {
		b := d.NewBatch()
		tx := b.Begin()
		tx.Set(nil, []byte("v"))
		if err := b.Add(tx); !errors.Is(err, badger.ErrEmptyKey) {
			t.Errorf("%s: Add of an empty key = %v, want ErrEmptyKey", name, err)
		}
		b.Discard()
		if err := d.View(func(r *Reader) error { _, err := r.Get(nil); return err }); !errors.Is(err, badger.ErrEmptyKey) {
			t.Errorf("%s: Get of an empty key = %v, want ErrEmptyKey", name, err)
		}
	}
}

// TestWithBatchLimits: a database takes the batch limits of the options
// given, as a database opened with them would have, where they are lower
// than its own; a keyspace of a store with larger memtables so refuses
// what a replica with the configured options refuses.
func TestWithBatchLimits(t *testing.T) {
	big, err := Open(Options{InMemory: true, MemTableBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = big.Close() }()
	small := openMem(t) // 1 MiB memtables
	limited := big.Keyspace([]byte("s\x00\x01")).WithBatchLimits(small.Options())
	if limited.maxBytes != small.maxBytes || limited.maxCount != small.maxCount || limited.maxValue != small.maxValue {
		t.Fatalf("limits %d bytes, %d keys, %d a value; a database of those options has %d, %d, %d",
			limited.maxBytes, limited.maxCount, limited.maxValue, small.maxBytes, small.maxCount, small.maxValue)
	}
	tx := func(db *DB) error {
		b := db.NewBatch()
		defer b.Discard()
		t := b.Begin()
		t.Set([]byte("k"), make([]byte, small.maxBytes))
		return b.Add(t)
	}
	if err := tx(big); err != nil {
		t.Fatalf("the large store refused a write within its limits: %v", err)
	}
	if err := tx(limited); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("the limited keyspace took what the configured options refuse: %v", err)
	}
	if again := limited.WithBatchLimits(Options{InMemory: true, MemTableBytes: 64 << 20}); again.maxBytes != limited.maxBytes {
		t.Fatalf("larger options raised the limits: %d, was %d", again.maxBytes, limited.maxBytes)
	}
}
