package raftfsm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func createJobs(t *testing.T, c *testCluster, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := c.do(func(e *embedded.Engine) error {
			// No request id on purpose: a CreateJob applied twice would make
			// a second job, so the state hashes catch double application.
			_, err := e.Create(context.Background(), engine.CreateJob{Type: "t", Queue: "q", Input: []byte(fmt.Sprintf("input-%d", i))})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestartedNodeDoesNotApplyTwice restarts a follower, then the whole
// cluster: Raft replays its log into state machines that already hold it,
// and the applied index makes them skip it.
func TestRestartedNodeDoesNotApplyTwice(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	createJobs(t, c, 0, 30)
	follower := ""
	for id, n := range c.live() {
		if !n.IsLeader() {
			follower = id
		}
	}
	c.waitConverged()
	c.kill(follower)
	createJobs(t, c, 30, 40)
	c.start(follower, false)
	h1 := c.assertSameState()

	for id := range c.dirs {
		c.kill(id)
	}
	for id := range c.dirs {
		c.start(id, false)
	}
	h2 := c.assertSameState()
	// The Raft configuration and node entries are unchanged by restarts,
	// and no command was applied again, so the keyspace is identical.
	if h1 != h2 {
		t.Fatalf("state after a full restart %s differs from before %s", h2[:12], h1[:12])
	}
	c.verifyAll()
	if n := countJobs(t, c.leader().fsm); n != 40 {
		t.Fatalf("%d jobs stored, want 40", n)
	}
}

// TestWipedFollowerRejoinsFromSnapshot wipes a follower's directory while
// the leader snapshots and compacts its log: the follower can only catch up
// by installing the snapshot, and ends with the same state as the others.
// Then the snapshot plus the rest of the log is compared with a replay of
// the whole log into a fresh state machine.
func TestWipedFollowerRejoinsFromSnapshot(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.TrailingLogs = 5 })
	createJobs(t, c, 0, 50)
	l := c.leader()
	var wiped, keeper string
	for id := range c.live() {
		if id != l.ID() {
			if wiped == "" {
				wiped = id
			} else {
				keeper = id
			}
		}
	}
	c.waitConverged()
	c.kill(wiped)
	if err := os.RemoveAll(c.dirs[wiped]); err != nil {
		t.Fatal(err)
	}
	createJobs(t, c, 50, 80)
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	first, _ := l.store.FirstIndex()
	if first <= 2 {
		t.Fatalf("leader log starts at %d after the snapshot; it was not compacted", first)
	}
	createJobs(t, c, 80, 90)

	n := c.start(wiped, false)
	want := c.assertSameState()
	if n.fsm.state.generation() == 0 {
		t.Fatalf("the wiped follower caught up without installing a snapshot")
	}
	c.verifyAll()

	// Full replay: the keeper never snapshotted, so its log is whole.
	k := c.live()[keeper]
	if kf, _ := k.store.FirstIndex(); kf != 1 {
		t.Skipf("keeper's log starts at %d; no whole log to replay", kf)
	}
	last, _ := k.store.LastIndex()
	var logs []*raft.Log
	for i := uint64(1); i <= last; i++ {
		var e raft.Log
		if err := k.store.GetLog(i, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == raft.LogCommand || e.Type == raft.LogConfiguration {
			logs = append(logs, &e)
		}
	}
	m, _ := machine.NewMachine(engine.Limits{})
	state, err := newStateDir(filepath.Join(t.TempDir(), "replay"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFSM(state, m)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.close(); err != nil {
			t.Error(err)
		}
	}()
	for i := 0; i < len(logs); i += 7 { // several batches of entries
		f.ApplyBatch(logs[i:min(i+7, len(logs))])
	}
	// Entries after the last one the cluster applied may exist (the
	// barrier); compare at the same applied index.
	if got := hashState(t, f); got != want {
		t.Fatalf("full replay of %d entries gives state %s, snapshot plus log gives %s", len(logs), got[:12], want[:12])
	}
}
