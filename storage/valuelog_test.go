package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// valueLogBytes returns the bytes of dir's value-log files.
func valueLogBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".vlog") {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			size += fi.Size()
		}
	}
	return size
}

// TestCollectValueLogGivesBackAClearedKeyspace: the large values of a
// keyspace that was cleared (a replica's state a snapshot replaced, or
// that moved away) stay in Badger's value log until it is collected;
// once compactions have dropped them, CollectValueLog gives their space
// back, and the other keyspace's values stay readable.
func TestCollectValueLogGivesBackAClearedKeyspace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(Options{Dir: dir, NoSync: true, MemTableBytes: 1 << 20, ValueLogFileBytes: 1 << 20, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	gone, kept := db.Keyspace([]byte("s\x00\x01")), db.Keyspace([]byte("s\x00\x02"))
	large := map[string]string{}
	for i := range 60 {
		large[fmt.Sprintf("v%03d", i)] = strings.Repeat(fmt.Sprint(i%10), 100<<10)
	}
	putAll(t, gone, large)
	putAll(t, kept, map[string]string{"k": strings.Repeat("k", 100<<10)})
	full := valueLogBytes(t, dir)
	if err := gone.Clear(); err != nil {
		t.Fatal(err)
	}
	// Small writes fill and flush memtables, and the flushed tables are
	// compacted, which drops the cleared values and counts them.
	for round := range 200 {
		filler := map[string]string{}
		for i := range 2000 {
			filler[fmt.Sprintf("f%03d-%04d", round%8, i)] = strings.Repeat("f", 200)
		}
		putAll(t, kept, filler)
		if _, err := db.CollectValueLog(); err != nil {
			t.Fatal(err)
		}
		if valueLogBytes(t, dir) < full/2 {
			t.Logf("round %d: the value log went from %d to %d bytes", round, full, valueLogBytes(t, dir))
			if got := dump(t, kept); got["k"] != strings.Repeat("k", 100<<10) {
				t.Fatal("the kept keyspace lost its value")
			}
			return
		}
	}
	t.Fatalf("the value log still holds %d bytes of %d after the keyspace was cleared", valueLogBytes(t, dir), full)
}

// CollectOnTicks collects once a tick, hands after each outcome, and its
// stop waits for a collection under way and may be called twice.
func TestCollectOnTicks(t *testing.T) {
	ticks := make(chan time.Time)
	inside, release := make(chan struct{}), make(chan struct{})
	calls := 0
	collect := func() (int, error) {
		calls++
		if calls == 2 {
			inside <- struct{}{}
			<-release
			return 0, errors.New("disk on fire")
		}
		return calls, nil
	}
	var got []string
	stop := CollectOnTicks(ticks, collect, func(n int, err error) { got = append(got, fmt.Sprint(n, err)) })
	ticks <- time.Time{}
	ticks <- time.Time{}
	<-inside // the second collection is under way
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned while a collection was under way")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-stopped
	stop()
	if want := []string{"1 <nil>", "0 disk on fire"}; !slices.Equal(got, want) {
		t.Fatalf("after got %q, want %q", got, want)
	}
	select {
	case ticks <- time.Time{}:
		t.Fatal("a tick was taken after stop")
	default:
	}
}
