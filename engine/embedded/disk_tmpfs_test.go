//go:build linux

package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// A real disk fills: a 128 MiB tmpfs (Linux only), mostly taken by a
// ballast file, under an engine with the default reserve. Badger writes
// through memory maps, so
// before the reserve a full disk killed the process with SIGBUS, and the
// restart crashed again; the scenario therefore runs in a child process
// (this test binary, running TestDiskFullTmpfsChild), and the parent reads
// how it ended. Mounting needs root (CI runs as root); elsewhere the test
// skips, and TestDiskFullRefusesWritesKeepsReads covers the same logic
// through the free-space seam.

const tmpfsDirEnv = "HEDDLE_TMPFS_DIR"

func TestDiskFullOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root); TestDiskFullRefusesWritesKeepsReads covers this through the free-space seam")
	}
	mnt := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=128m"); err != nil {
		t.Skipf("mounting a tmpfs failed (%v): this needs CAP_SYS_ADMIN; TestDiskFullRefusesWritesKeepsReads covers this through the free-space seam", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFullTmpfsChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), tmpfsDirEnv+"="+mnt)
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if bytes.Contains(out, []byte("signal SIGBUS")) {
		t.Fatal("the engine crashed on a full disk with SIGBUS")
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("the engine crashed on a full disk: %v", ws.Signal())
			}
		}
		t.Fatalf("the child failed: %v", err)
	}
	if !bytes.Contains(out, []byte("DONE")) {
		t.Fatal("the child did not finish its scenario")
	}
}

func TestDiskFullTmpfsChild(t *testing.T) {
	mnt := os.Getenv(tmpfsDirEnv)
	if mnt == "" {
		t.Skip("the child of TestDiskFullOnTmpfs")
	}
	cfg := Config{Dir: filepath.Join(mnt, "db"), DisableScheduler: true,
		Limits:  engine.Limits{MaxPayloadBytes: 128 << 10},
		Storage: storage.Options{MemTableBytes: 4 << 20, ValueLogFileBytes: 4 << 20}}
	reserve := uint64(storage.DefaultReserveBytes(cfg.Storage))
	ballast := filepath.Join(mnt, "ballast")
	// fill writes the ballast so that about left bytes stay free.
	fill := func(left uint64) {
		t.Helper()
		if err := os.Remove(ballast); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		free := tmpfsFree(t, mnt)
		if free <= left {
			return
		}
		f, err := os.Create(ballast)
		if err != nil {
			t.Fatal(err)
		}
		chunk := bytes.Repeat([]byte{1}, 1<<20)
		for n := free - left; n > 0; {
			c := min(n, uint64(len(chunk)))
			if _, err := f.Write(chunk[:c]); err != nil {
				t.Fatal(err)
			}
			n -= c
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}

	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fill(reserve + 12<<20)
	t.Logf("reserve %d bytes, %d free before writing", reserve, tmpfsFree(t, mnt))

	// Write from a few goroutines until every one is refused.
	var mu sync.Mutex
	var acked []engine.JobID
	input := bytes.Repeat([]byte("x"), 8<<10) // large enough for the value log
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; i < 100000; i++ {
				r, err := e.Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("w%d-%d", w, i), Type: "T", Queue: "q", Input: input})
				if errors.Is(err, engine.ErrNoSpace) {
					return
				}
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				mu.Lock()
				acked = append(acked, r.Job)
				mu.Unlock()
			}
			t.Error("the disk never filled")
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("FULL: %d starts acknowledged, %d bytes free", len(acked), tmpfsFree(t, mnt))
	for range 20 {
		if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "q", Input: input}); !errors.Is(err, engine.ErrNoSpace) {
			t.Fatalf("a create on the full disk: %v, want ErrNoSpace", err)
		}
	}
	for _, id := range acked {
		if _, err := e.Describe(ctx, engine.Target{Job: id}); err != nil {
			t.Fatalf("reading job %d on the full disk: %v", id, err)
		}
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		r, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "q", Input: input})
		if err != nil {
			t.Fatalf("a create once space returned: %v", err)
		}
		acked = append(acked, r.Job)
	}
	t.Log("RESUMED")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart with almost no space is refused with a clear error.
	fill(1 << 20)
	if _, err := Open(cfg); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("opening with 1 MiB free: %v, want ErrNoSpace", err)
	} else {
		t.Logf("OPEN REFUSED: %v", err)
	}
	// With room to open but under the reserve: reads, no writes.
	fill(16 << 20)
	e, err = Open(cfg)
	if err != nil {
		t.Fatalf("opening with 16 MiB free: %v", err)
	}
	if _, err := e.Describe(ctx, engine.Target{Job: acked[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("a create under the reserve after a restart: %v, want ErrNoSpace", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
		t.Fatalf("a create once space returned: %v", err)
	}
	for _, id := range acked {
		if _, err := e.Describe(ctx, engine.Target{Job: id}); err != nil {
			t.Fatalf("acknowledged job %d after the restarts: %v", id, err)
		}
	}
	err = e.View(ctx, func(r *storage.Reader) error { return errors.Join(machine.Verify(r, 10)...) })
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("DONE: %d acknowledged starts all read back", len(acked))
}

func tmpfsFree(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Bsize)
}
