package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// An engine on disk gives back the space of deleted large values: it
// collects its value log on its ticks (here the test's, each collection
// run to its end between the test's writes; see storage.CollectOnTicks on
// Badger's race). Without the
// collection the value-log files keep every deleted value.
func TestEngineCollectsItsValueLog(t *testing.T) {
	ticks, asked := make(chan time.Time), make(chan time.Duration, 1)
	stopped := false
	valueLogTicks = func(d time.Duration) (<-chan time.Time, func()) {
		asked <- d
		return ticks, func() { stopped = true }
	}
	collected := make(chan error)
	valueLogCollected = func(_ int, err error) { collected <- err }
	defer func() { valueLogTicks, valueLogCollected = defaultValueLogTicks, nil }()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := Open(Config{Dir: dir, DisableScheduler: true, Limits: engine.Limits{MaxPayloadBytes: 32 << 10},
		Storage: storage.Options{NoSync: true, MemTableBytes: 1 << 20, ValueLogFileBytes: 1 << 20, ReserveBytes: -1}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-asked:
		if d != storage.DefaultValueLogInterval {
			t.Fatalf("the engine collects every %v, want storage.DefaultValueLogInterval", d)
		}
	default:
		t.Fatal("the engine on disk does not collect its value log")
	}
	put := func(db *storage.DB, kvs map[string]string) {
		b := db.NewBatch()
		for k, v := range kvs {
			tx := b.Begin()
			tx.Set([]byte(k), []byte(v))
			err := b.Add(tx)
			if errors.Is(err, storage.ErrBatchFull) {
				if err := b.Commit(); err != nil {
					t.Fatal(err)
				}
				b = db.NewBatch()
				err = b.Add(tx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	vlog := func() int64 {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, ent := range ents {
			if fi, err := ent.Info(); err == nil && strings.HasSuffix(ent.Name(), ".vlog") {
				n += fi.Size()
			}
		}
		return n
	}
	large := e.DB().Keyspace([]byte("test-large/"))
	filler := e.DB().Keyspace([]byte("test-filler/"))
	for i := range 60 {
		put(large, map[string]string{fmt.Sprintf("v%03d", i): strings.Repeat(fmt.Sprint(i%10), 100<<10)})
	}
	full := vlog()
	if err := large.Clear(); err != nil {
		t.Fatal(err)
	}
	shrunk := false
	for round := 0; round < 200 && !shrunk; round++ {
		kvs := map[string]string{}
		for i := range 2000 {
			kvs[fmt.Sprintf("f%03d-%04d", round%8, i)] = strings.Repeat("f", 200)
		}
		put(filler, kvs)
		// The collection runs between writes, never beside them (see
		// storage.CollectOnTicks on Badger's race): the next write waits
		// for it to end.
		ticks <- time.Time{}
		if err := <-collected; err != nil {
			t.Fatal(err)
		}
		shrunk = vlog() < full/2
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !shrunk {
		t.Fatalf("the value log still holds %d bytes of %d after its values were deleted", vlog(), full)
	}
	if !stopped {
		t.Fatal("Close did not stop the collection's ticks")
	}
}

// An engine with the collection turned off, or in memory, asks for no
// ticks.
func TestEngineValueLogCollectionOff(t *testing.T) {
	valueLogTicks = func(time.Duration) (<-chan time.Time, func()) {
		t.Fatal("the engine collects its value log")
		return nil, nil
	}
	defer func() { valueLogTicks = defaultValueLogTicks }()
	for _, cfg := range []Config{{Dir: t.TempDir(), ValueLogInterval: -1}, {InMemory: true}} {
		e, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
