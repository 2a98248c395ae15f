package raftfsm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// applyRecovering runs ApplyBatch and returns the StateFailure it panicked
// with, or nil when it returned.
func applyRecovering(t *testing.T, f *FSM, logs ...*raft.Log) (sf *StateFailure) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		var ok bool
		if sf, ok = r.(*StateFailure); !ok {
			panic(r) // not ours: let the test fail with the original panic
		}
	}()
	f.ApplyBatch(logs)
	return nil
}

// checkStopped checks that the node stopped at entry index with cause.
func checkStopped(t *testing.T, sf *StateFailure, index uint64, cause error) {
	t.Helper()
	if sf == nil {
		t.Fatal("ApplyBatch returned: the failure was dropped, the node went on")
	}
	if sf.Index != index || !errors.Is(sf, ErrStateFailed) || !errors.Is(sf, cause) || sf.Code() != StateFailureCode {
		t.Fatalf("panicked with %v (index %d), want a StateFailure at index %d caused by %v", sf, sf.Index, index, cause)
	}
	t.Logf("the node stopped with: %v", sf)
}

// diskApplier applies like the engine, but first runs hook, which may fail
// the command as a broken disk would, and afterwards after, which may break
// the disk (close the database).
type diskApplier struct {
	m     *machine.Machine
	hook  func() error
	after func()
}

var errDisk = errors.New("input/output error")

func (a *diskApplier) ApplyNoting(tx *storage.Tx, cmd engine.Command, n *machine.Notes) (engine.Result, error) {
	if a.hook != nil {
		if err := a.hook(); err != nil {
			return nil, err
		}
	}
	res, err := a.m.ApplyNoting(tx, cmd, n)
	if a.after != nil {
		a.after()
	}
	return res, err
}

func newDiskApplier(t *testing.T) *diskApplier {
	t.Helper()
	m, err := machine.NewMachine(engine.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return &diskApplier{m: m}
}

// A commit that the database refuses stops the node at the last entry of
// the batch, and the applied index does not move past what was committed.
func TestCommitFailureStopsNode(t *testing.T) {
	a := newDiskApplier(t)
	f := openTestFSM(t, storage.Options{NoSync: true}, a)
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(1, 1)...)})
	// The disk dies while the batch's last command is applied: its
	// transaction has read all it needs, and Badger refuses it at commit.
	a.after = func() {
		a.after = nil
		if err := f.db.Close(); err != nil {
			t.Error(err)
		}
	}
	sf := applyRecovering(t, f, commandsEntry(t, 2, creates(1, 1)...))
	checkStopped(t, sf, 2, sf.Err) // Badger's own error; what matters is where it stopped
	if sf.Op != "committing applied log entries" {
		t.Fatalf("op %q, want the commit", sf.Op)
	}
	if f.Applied() != 1 {
		t.Fatalf("applied = %d after a failed commit, want 1", f.Applied())
	}
}

// A database that fails every read stops the node at the first entry of a
// batch, before it applies anything.
func TestClosedDatabaseStopsNode(t *testing.T) {
	f := openTestFSM(t, storage.Options{NoSync: true}, newDiskApplier(t))
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(1, 1)...)})
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	sf := applyRecovering(t, f, commandsEntry(t, 2, creates(1, 1)...), commandsEntry(t, 3, creates(1, 1)...))
	checkStopped(t, sf, 2, storage.ErrRead)
	if f.Applied() != 1 {
		t.Fatalf("applied = %d, want 1", f.Applied())
	}
}

// A command this node could not judge, because its database failed to read,
// stops the node instead of being answered as the command's error: its
// peers read fine and applied it. A command the engine refuses is the
// entry's outcome on every node and does not stop anything.
func TestReadFailureStopsNode(t *testing.T) {
	a := newDiskApplier(t)
	f := openTestFSM(t, storage.Options{NoSync: true}, a)
	t.Cleanup(func() {
		if err := f.close(); err != nil {
			t.Error(err)
		}
	})
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(1, 1)...)})
	refused := &engine.Cancel{Header: engine.Header{NowMS: 1000}, Target: engine.Target{Job: 99}}
	if sf := applyRecovering(t, f, commandsEntry(t, 2, refused)); sf != nil {
		t.Fatalf("a refused command stopped the node: %v", sf)
	}
	if f.Applied() != 2 {
		t.Fatalf("applied = %d, want 2", f.Applied())
	}
	a.hook = func() error {
		return fmt.Errorf("engine: loading job: %w: reading key %q: %w", storage.ErrRead, "j1", errDisk)
	}
	sf := applyRecovering(t, f, commandsEntry(t, 3, creates(1, 1)...))
	checkStopped(t, sf, 3, errDisk)
	if !errors.Is(sf, storage.ErrRead) {
		t.Fatalf("%v does not match storage.ErrRead", sf)
	}
	if f.Applied() != 2 || storedApplied(t, f) != 2 || countJobs(t, f) != 1 {
		t.Fatalf("after the failure: applied %d, stored %d, %d jobs; want 2, 2, 1", f.Applied(), storedApplied(t, f), countJobs(t, f))
	}
}

// A split entry's progress record that does not decode stops the node:
// guessing would apply the entry's commands twice or not at all.
func TestCorruptEntryProgressStopsNode(t *testing.T) {
	f := newTestFSM(t, storage.Options{NoSync: true})
	b := f.db.NewBatch()
	tx := b.Begin()
	tx.Set(keyEntryPart, []byte{1, 2, 3})
	storage.SetAppliedIndex(tx, 1)
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	sf := applyRecovering(t, f, commandsEntry(t, 2, creates(2, 1)...))
	checkStopped(t, sf, 2, storage.ErrCorrupt)
	if countJobs(t, f) != 0 || storedApplied(t, f) != 1 {
		t.Fatalf("the stopped entry wrote: %d jobs, applied index %d", countJobs(t, f), storedApplied(t, f))
	}
}
