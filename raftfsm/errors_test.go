package raftfsm

import (
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// TestNodeMarksStorageErrors: over a Raft node too, a corrupt record's
// error, met by a read or by a proposal's application, matches
// engine.ErrCorrupt as well as storage's error, and names its key. (A full
// disk's ErrNoSpace: TestLeaderUnderReserveRefusesWrites.)
func TestNodeMarksStorageErrors(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	ctx := context.Background()
	n := c.leader()
	j, err := n.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	// Damage the job's record on the node's disk, as a bad sector would.
	n.fsm.mu.RLock()
	b := n.fsm.db.NewBatch()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(j.Job)), []byte{byte(storage.KindJob), 1, 0xc1})
	err = b.Add(tx)
	if err == nil {
		err = b.Commit()
	}
	n.fsm.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	check := func(where string, err error) {
		t.Helper()
		var ce *storage.CorruptError
		if !errors.Is(err, engine.ErrCorrupt) || !errors.Is(err, storage.ErrCorrupt) || !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a corrupt record matching engine.ErrCorrupt", where, err)
		}
	}
	_, err = n.Engine().Describe(ctx, engine.Target{Job: j.Job})
	check("describe", err)
	_, err = n.Engine().Signal(ctx, engine.Signal{Target: engine.Target{Job: j.Job}, Name: "s"})
	check("a signal through the log", err)
}

// A not-leader error after a committed membership change is an unknown
// outcome, not a refusal: the change was made.
func TestAfterChange(t *testing.T) {
	if err := afterChange(nil); err != nil {
		t.Fatalf("afterChange(nil) = %v", err)
	}
	nl := &engine.NotLeaderError{LeaderID: "n2"}
	if err := afterChange(nl); !errors.Is(err, engine.ErrUnknownOutcome) || errors.Is(err, engine.ErrNotLeader) {
		t.Fatalf("afterChange(not leader) = %v, want ErrUnknownOutcome and not ErrNotLeader", err)
	}
	other := errors.New("disk on fire")
	if err := afterChange(other); err != other {
		t.Fatalf("afterChange(other) = %v, want it unchanged", err)
	}
}
