package storage

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestReserve(t *testing.T) {
	if got := DefaultReserveBytes(Options{}); got != 192<<20 {
		t.Errorf("DefaultReserveBytes of the defaults = %d, want 192 MiB", got)
	}
	if got := DefaultReserveBytes(Options{MemTableBytes: 4 << 20, ValueLogFileBytes: 4 << 20}); got != 60<<20 {
		t.Errorf("DefaultReserveBytes of 4 MiB memtables and value logs = %d, want 60 MiB", got)
	}
	for _, r := range []int64{-1, 0, 1} {
		if err := (Options{Dir: "d", ReserveBytes: r}).Validate(); err != nil {
			t.Errorf("ReserveBytes %d: %v", r, err)
		}
	}
	if err := (Options{Dir: "d", ReserveBytes: -2}).Validate(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ReserveBytes -2: %v, want ErrInvalidOptions", err)
	}

	var free atomic.Uint64
	free.Store(1 << 30)
	probeErr := errors.New("statfs failed")
	var failProbe atomic.Bool
	opts := Options{Dir: t.TempDir(), ReserveBytes: 100 << 20, FreeBytes: func(string) (uint64, error) {
		if failProbe.Load() {
			return 0, probeErr
		}
		return free.Load(), nil
	}}
	db, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CheckSpace(); err != nil {
		t.Fatalf("CheckSpace with 1 GiB free: %v", err)
	}
	free.Store(100<<20 - 1)
	err = db.CheckSpace()
	var nse *NoSpaceError
	if !errors.Is(err, ErrNoSpace) || !errors.As(err, &nse) || nse.Op != "write" || nse.NeedBytes != 100<<20 || nse.Code() != NoSpaceCode {
		t.Fatalf("CheckSpace under the reserve: %v", err)
	}
	failProbe.Store(true)
	if err := db.CheckSpace(); !errors.Is(err, probeErr) {
		t.Fatalf("CheckSpace with a failing probe: %v, want its error", err)
	}
	failProbe.Store(false)
	free.Store(100 << 20)
	if err := db.CheckSpace(); err != nil {
		t.Fatalf("CheckSpace at the reserve: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Opening needs room for the tables of the replayed logs, not the
	// whole reserve.
	free.Store(openSlackBytes - 1)
	if _, err := Open(opts); !errors.As(err, &nse) || nse.Op != "open" {
		t.Fatalf("Open with no room: %v, want a NoSpaceError", err)
	}
	free.Store(openSlackBytes)
	db, err = Open(opts)
	if err != nil {
		t.Fatalf("Open with room to open, under the reserve: %v", err)
	}
	if err := db.CheckSpace(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("CheckSpace: %v, want ErrNoSpace", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Off, and in memory, nothing is measured.
	for _, o := range []Options{{Dir: t.TempDir(), ReserveBytes: -1, FreeBytes: opts.FreeBytes}, {InMemory: true, FreeBytes: opts.FreeBytes}} {
		failProbe.Store(true)
		db, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CheckSpace(); err != nil {
			t.Errorf("CheckSpace with the reserve off (%+v): %v", o.InMemory, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
