package raftfsm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// diskFull holds, per node, whether its disk reports (almost) no free space.
type diskFull struct {
	mu   sync.Mutex
	full map[string]bool
}

func (d *diskFull) set(id string, full bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full[id] = full
}

// tune gives every node a free-space measure this test controls: plenty,
// or nothing while the node is marked full.
func (d *diskFull) tune(cfg *Config) {
	id := cfg.ID
	cfg.Storage.FreeBytes = func(string) (uint64, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.full[id] {
			return 0, nil
		}
		return 1 << 40, nil
	}
}

// TestLeaderUnderReserveRefusesWrites: the leader refuses proposals with
// ErrNoSpace while its disk is under the reserve, stores nothing of them,
// serves reads, and takes writes again once space is back.
func TestLeaderUnderReserveRefusesWrites(t *testing.T) {
	d := &diskFull{full: map[string]bool{}}
	c := newTestCluster(t, 3, d.tune)
	ctx := context.Background()
	l := c.leader()
	j, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	before := c.assertSameState()

	d.set(l.ID(), true)
	if _, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"}); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("create on a leader under the reserve = %v, want ErrNoSpace", err)
	}
	if got, err := l.Engine().Describe(ctx, engine.Target{Job: j.Job}); err != nil || got.ID != j.Job {
		t.Fatalf("read on a leader under the reserve = %+v, %v", got, err)
	}
	if after := c.assertSameState(); after != before {
		t.Fatalf("a refused write changed the state")
	}

	d.set(l.ID(), false)
	if _, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
		t.Fatalf("create once space is back: %v", err)
	}
	c.assertSameState()
	c.verifyAll()
}

// TestFollowerUnderReserveRefusesEntriesAndCatchesUp: a follower whose disk
// is under the reserve refuses the leader's log entries instead of
// applying them into a full disk (which would stop it). The cluster keeps
// writing on the other two nodes, the follower reports itself not ready
// and saying why, and once space is back it catches up to the same state.
func TestFollowerUnderReserveRefusesEntriesAndCatchesUp(t *testing.T) {
	d := &diskFull{full: map[string]bool{}}
	c := newTestCluster(t, 3, d.tune)
	ctx := context.Background()
	l := c.leader()
	var f *Node
	for _, n := range c.live() {
		if n != l {
			f = n
			break
		}
	}
	c.waitConverged()
	frozen := f.fsm.Applied()

	d.set(f.ID(), true)
	for i := 0; i < 20; i++ {
		if _, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
			t.Fatalf("create %d with one follower full: %v", i, err)
		}
	}
	if err := l.raft.Barrier(0).Error(); err != nil {
		t.Fatal(err)
	}
	c.eventually("the full follower reports itself not ready", func() bool {
		err := f.Ready(ctx)
		return errors.Is(err, ErrNotReady) && strings.Contains(err.Error(), "under the reserve")
	})
	if got := f.fsm.Applied(); got != frozen {
		t.Fatalf("the full follower applied up to %d, want it held at %d", got, frozen)
	}
	if l.fsm.Applied() <= frozen {
		t.Fatalf("the leader applied %d, want past %d", l.fsm.Applied(), frozen)
	}

	d.set(f.ID(), false)
	c.assertSameState()
	c.verifyAll()
	c.eventually("the follower ready again", func() bool { return f.Ready(ctx) == nil })
}

// TestFollowerUnderReserveRefusesASnapshot: a full follower falls behind a
// leader that compacts its log, so catching up needs the leader's
// snapshot. While the follower is under the reserve it refuses that too
// and keeps its state; once space is back it installs the snapshot and
// ends with the state of the others.
func TestFollowerUnderReserveRefusesASnapshot(t *testing.T) {
	d := &diskFull{full: map[string]bool{}}
	c := newTestCluster(t, 3, func(cfg *Config) { d.tune(cfg); cfg.TrailingLogs = 5 })
	ctx := context.Background()
	createJobs(t, c, 0, 10)
	c.waitConverged()
	l := c.leader()
	var f *Node
	for _, n := range c.live() {
		if n != l {
			f = n
			break
		}
	}
	frozen := f.fsm.Applied()
	d.set(f.ID(), true)
	createJobs(t, c, 10, 60)
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if first, _ := l.store.FirstIndex(); first <= frozen+1 {
		t.Fatalf("leader log starts at %d, not past the follower's %d: it was not compacted", first, frozen)
	}
	c.eventually("the full follower refuses the leader's snapshot", func() bool {
		return f.logGuard.snapshotsRefused.Load() > 0
	})
	if err := f.Ready(ctx); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "under the reserve") {
		t.Fatalf("Ready on the full follower = %v, want ErrNotReady saying its disk is under the reserve", err)
	}
	if got, gen := f.fsm.Applied(), f.fsm.state.generation(); got != frozen || gen != 0 {
		t.Fatalf("the full follower applied %d (generation %d), want it held at %d with no snapshot installed", got, gen, frozen)
	}

	d.set(f.ID(), false)
	c.assertSameState()
	if f.fsm.state.generation() == 0 {
		t.Fatalf("the follower caught up without installing the snapshot")
	}
	c.verifyAll()
}
