package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Disk full, through the free-space seam (storage.Options.FreeBytes), so it
// runs the same everywhere: below the reserve every write is refused with
// ErrNoSpace and stores nothing, reads go on, and once space returns writes
// do too; nothing acknowledged is lost across a reopen. (disk_tmpfs_test.go
// fills a real file system.)
func TestDiskFullRefusesWritesKeepsReads(t *testing.T) {
	const reserve = 64 << 20
	var free atomic.Uint64
	free.Store(1 << 40)
	dir := t.TempDir()
	cfg := Config{Dir: dir, DisableScheduler: true, Storage: storage.Options{
		ReserveBytes: reserve,
		FreeBytes:    func(string) (uint64, error) { return free.Load(), nil },
	}}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var acked []engine.JobID
	create := func(i int) error {
		r, err := e.Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("wf-%d", i), Type: "T", Queue: "q", Input: []byte("in")})
		if err == nil {
			acked = append(acked, r.Job)
		}
		return err
	}
	for i := range 20 {
		if err := create(i); err != nil {
			t.Fatal(err)
		}
	}

	free.Store(reserve - 1)
	for i := 20; i < 30; i++ {
		err := create(i)
		var nse *storage.NoSpaceError
		if !errors.Is(err, engine.ErrNoSpace) || !errors.As(err, &nse) {
			t.Fatalf("create under the reserve: %v, want ErrNoSpace", err)
		}
		if nse.Code() != storage.NoSpaceCode || nse.FreeBytes != reserve-1 || nse.NeedBytes != reserve || nse.Op != "write" {
			t.Fatalf("NoSpaceError %+v", nse)
		}
	}
	// Reads go on, and the refused starts stored nothing.
	for _, id := range acked {
		if _, err := e.Describe(ctx, engine.Target{Job: id}); err != nil {
			t.Fatalf("read of job %d while the disk is full: %v", id, err)
		}
	}
	if _, err := e.Describe(ctx, engine.Target{WorkflowID: "wf-25"}); !errors.Is(err, engine.ErrUnknownJob) {
		t.Fatalf("a refused start: %v, want ErrUnknownJob", err)
	}
	// A command that writes nothing is still answered.
	if jobs, err := e.Claim(ctx, engine.Claim{Queue: "empty", Owner: "w", Max: 1, LeaseMS: 1000}); err != nil || len(jobs) != 0 {
		t.Fatalf("an empty claim while the disk is full: %v %v", jobs, err)
	}

	free.Store(reserve)
	for i := 30; i < 40; i++ {
		if err := create(i); err != nil {
			t.Fatalf("create once space returned: %v", err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, id := range acked {
		if _, err := e.Describe(ctx, engine.Target{Job: id}); err != nil {
			t.Fatalf("acknowledged job %d after reopening: %v", id, err)
		}
	}
	if len(acked) != 30 {
		t.Fatalf("%d starts acknowledged, want 30", len(acked))
	}
	err = e.View(ctx, func(r *storage.Reader) error {
		if errs := machine.Verify(r, 10); len(errs) > 0 {
			return errors.Join(errs...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
