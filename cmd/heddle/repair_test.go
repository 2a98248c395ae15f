package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// crashedDevDir returns the directory of a "heddle dev" engine that
// acknowledged n starts, as a crash leaves it (copied while open).
func crashedDevDir(t *testing.T, n int) string {
	t.Helper()
	src := t.TempDir()
	// Small logs keep the copy small.
	e, err := embedded.Open(embedded.Config{Dir: src, DisableScheduler: true, Limits: engine.Limits{MaxPayloadBytes: 64 << 10},
		Storage: storage.Options{MemTableBytes: 2 << 20, ValueLogFileBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: fmt.Sprintf("wf-%d", i), Type: "T", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if ent.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, ent.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// flipWAL inverts four bytes a third of the way into the data of the
// directory's write-ahead log.
func flipWAL(t *testing.T, dir string) {
	t.Helper()
	mems, err := filepath.Glob(filepath.Join(dir, "*.mem"))
	if err != nil || len(mems) != 1 {
		t.Fatalf("write-ahead logs %v, %v", mems, err)
	}
	b, err := os.ReadFile(mems[0])
	if err != nil {
		t.Fatal(err)
	}
	end := len(bytes.TrimRight(b, "\x00"))
	for i := end / 3; i < end/3+4; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(mems[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func runRepair(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"repair"}, args...), &stdout, &stderr)
	return code, stdout.String() + stderr.String()
}

// The operator's path: heddle dev refuses the damaged directory, repair
// says what it would drop and changes nothing, repair --yes truncates, and
// the directory opens with the acknowledged starts before the damage.
func TestRepairCommand(t *testing.T) {
	dir := crashedDevDir(t, 300)
	if code, out := runRepair(t, "--dir", dir); code != 0 || !strings.Contains(out, "no damage found") {
		t.Fatalf("repair of a sound directory: exit %d\n%s", code, out)
	}
	flipWAL(t, dir)
	if _, err := embedded.Open(embedded.Config{Dir: dir}); !errors.Is(err, storage.ErrDamaged) {
		t.Fatalf("opening the damaged directory: %v, want ErrDamaged", err)
	}
	before := dirDigest(t, dir)
	code, out := runRepair(t, "--dir", dir)
	t.Logf("heddle repair --dir:\n%s", out)
	if code != 1 || !strings.Contains(out, "00001.mem") || !strings.Contains(out, "committed transactions") ||
		!strings.Contains(out, "nothing was changed") || !strings.Contains(out, "--yes") {
		t.Fatalf("repair without --yes: exit %d\n%s", code, out)
	}
	if dirDigest(t, dir) != before {
		t.Fatal("repair without --yes changed the directory")
	}
	code, out = runRepair(t, "--dir", dir, "--yes")
	t.Logf("heddle repair --dir --yes:\n%s", out)
	if code != 0 || !strings.Contains(out, "no damage remains") {
		t.Fatalf("repair --yes: exit %d\n%s", code, out)
	}
	e, err := embedded.Open(embedded.Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatalf("opening the repaired directory: %v", err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := e.Describe(context.Background(), engine.Target{WorkflowID: "wf-0"}); err != nil {
		t.Fatalf("the first start after the repair: %v", err)
	}
	err = e.View(context.Background(), func(r *storage.Reader) error { return errors.Join(machine.Verify(r, 5)...) })
	if err != nil {
		t.Fatalf("the repaired store does not verify: %v", err)
	}
}

func TestRepairCommandRefuses(t *testing.T) {
	if code, out := runRepair(t); code != 2 || !strings.Contains(out, "--dir is required") {
		t.Errorf("repair without --dir: exit %d\n%s", code, out)
	}
	if code, out := runRepair(t, "--dir", filepath.Join(t.TempDir(), "nope")); code != 1 || !strings.Contains(out, "no such file") {
		t.Errorf("repair of a missing directory: exit %d\n%s", code, out)
	}
	// A table damaged: nothing a repair can do, and it says what to do.
	dir := t.TempDir()
	e, err := embedded.Open(embedded.Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("tables %v, %v", ssts, err)
	}
	if err := os.Truncate(ssts[0], 100); err != nil {
		t.Fatal(err)
	}
	code, out := runRepair(t, "--dir", dir, "--yes")
	if code != 1 || !strings.Contains(out, "cannot repair") || !strings.Contains(out, "backup") {
		t.Errorf("repair of a damaged table: exit %d\n%s", code, out)
	}
}

// A server node's directory is understood: repair checks its live state.
func TestRepairFindsANodeState(t *testing.T) {
	node := t.TempDir()
	state := filepath.Join(node, "state", "data-000000")
	for _, d := range []string{filepath.Join(node, "raft"), state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, out := runRepair(t, "--dir", node)
	if code != 0 || !strings.Contains(out, "server node") || !strings.Contains(out, state) {
		t.Errorf("repair of a node directory: exit %d\n%s", code, out)
	}
}

// dirDigest hashes every file's name and bytes.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fmt.Fprintf(h, "%s\n", e.Name()) // a hash takes every write
		_, err = io.Copy(h, f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
