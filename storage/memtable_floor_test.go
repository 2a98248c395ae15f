package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenReplaysLargerMemtables: a database whose memtables were written
// larger than the options it is opened with now (a sharded node whose
// store was sized for more replicas; MemTableBytes lowered after a crash;
// a tool opening it with the defaults) opens, and replays them whole:
// Badger would replay them into the smaller memtables, overflow them and
// exit the process. Its batches keep the limits of the options given.
func TestOpenReplaysLargerMemtables(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	big, err := Open(Options{Dir: dir, NoSync: true, MemTableBytes: 8 << 20, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 2500 { // 5 MB, over a 1 MiB memtable, under an 8 MiB one
		want[fmt.Sprintf("k%04d", i)] = string(make([]byte, 2<<10)) + fmt.Sprint(i) // under the value threshold: in the memtable
	}
	putAll(t, big, want)
	// What a crash leaves: the memtable only in its log.
	crashed := filepath.Join(t.TempDir(), "crashed")
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := big.Close(); err != nil {
		t.Fatal(err)
	}

	small := Options{Dir: crashed, NoSync: true, MemTableBytes: 1 << 20, ReserveBytes: -1}
	db, err := Open(small)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	got := dump(t, db)
	if len(got) != len(want) {
		t.Fatalf("reopened with smaller memtables: %d keys, want %d", len(got), len(want))
	}
	ref, err := Open(Options{InMemory: true, MemTableBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ref.Close() }()
	if db.maxBytes != ref.maxBytes || db.maxCount != ref.maxCount {
		t.Fatalf("batch limits %d bytes, %d keys; the options given have %d, %d", db.maxBytes, db.maxCount, ref.maxBytes, ref.maxCount)
	}
}
