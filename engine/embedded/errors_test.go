package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// wantMarked fails unless err matches both the storage error and the
// contract's sentinel it stands for.
func wantMarked(t *testing.T, where string, err, stored, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) || !errors.Is(err, stored) {
		t.Errorf("%s: %v, want an error matching both %v and %v", where, err, sentinel, stored)
	}
}

// TestLocalLogMarksNoSpace: a write the local log's commit refuses for a
// full disk answers with engine.ErrNoSpace, and still with storage's
// *NoSpaceError.
func TestLocalLogMarksNoSpace(t *testing.T) {
	var full atomic.Bool
	e, err := Open(Config{Dir: t.TempDir(), DisableScheduler: true, Storage: storage.Options{
		ReserveBytes: 1 << 20,
		FreeBytes: func(string) (uint64, error) {
			if full.Load() {
				return 0, nil
			}
			return 1 << 40, nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	full.Store(true)
	_, err = e.Create(bg, engine.CreateJob{Type: "t", Queue: "q"})
	wantMarked(t, "a create on a full disk", err, storage.ErrNoSpace, engine.ErrNoSpace)
	var nse *storage.NoSpaceError
	if !errors.As(err, &nse) {
		t.Errorf("%v lost its NoSpaceError", err)
	}
}

// TestEngineMarksCorruptRecords: a read of a corrupt record through the
// Engine answers with engine.ErrCorrupt, naming the key.
func TestEngineMarksCorruptRecords(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	j, err := e.Create(bg, engine.CreateJob{Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	b := e.DB().NewBatch()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(j.Job)), []byte{byte(storage.KindJob), 1, 0xc1})
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = e.Describe(bg, engine.Target{Job: j.Job})
	wantMarked(t, "describe of a corrupt job", err, storage.ErrCorrupt, engine.ErrCorrupt)
	_, err = e.Signal(bg, engine.Signal{Target: engine.Target{Job: j.Job}, Name: "s"})
	wantMarked(t, "a signal to a corrupt job", err, storage.ErrCorrupt, engine.ErrCorrupt)
}

// failingViewer is a store whose reads fail in the database itself.
type failingViewer struct{}

func (failingViewer) View(func(r *storage.Reader) error) error {
	return fmt.Errorf("%w: reading the state: disk on fire", storage.ErrRead)
}

// noLog is a log that applies nothing (the test only reads).
type noLog struct{}

func (noLog) Propose(context.Context, engine.Command) (engine.Result, error) {
	return nil, engine.ErrClosed
}

// TestEngineMarksFailedReads: a read the store itself fails (not one the
// machine's queries met) answers with engine.ErrStorageRead, from the
// Engine's reads and its ready checks alike.
func TestEngineMarksFailedReads(t *testing.T) {
	e, err := New(Backend{Log: noLog{}, Store: failingViewer{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Describe(bg, engine.Target{Job: 1})
	wantMarked(t, "describe over a failing store", err, storage.ErrRead, engine.ErrStorageRead)
	_, err = e.MayHaveReady("q")
	wantMarked(t, "a ready check over a failing store", err, storage.ErrRead, engine.ErrStorageRead)
	wantMarked(t, "readiness over a failing store", e.Ready(bg), storage.ErrRead, engine.ErrStorageRead)
}
