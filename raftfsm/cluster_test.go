package raftfsm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/loopback"
	"github.com/heddlewf/heddle/storage"
)

// testCluster is an in-process cluster on loopback TCP with real
// directories. Nodes share one manual clock for the commands' Now (so
// leases expire only when a test advances it); Raft keeps its own timers.
type testCluster struct {
	t     testing.TB
	clock *clock.Manual
	mu    sync.Mutex        // guards nodes: tests kill nodes while workers use them
	nodes map[string]*Node  // the live nodes; read through live()
	addrs map[string]string // id -> Raft address, stable across restarts
	dirs  map[string]string
	tune  func(*Config)
}

// freeAddr reserves a loopback port so a node keeps its Raft address
// across restarts (the cluster configuration records it). The port comes
// from below the ephemeral range, where no outgoing connection can take it
// between the reservation and the node's bind.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := loopback.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func newTestCluster(t testing.TB, size int, tune func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, clock: clock.NewManual(time.Unix(1_700_000_000, 0)), nodes: map[string]*Node{},
		addrs: map[string]string{}, dirs: map[string]string{}, tune: tune}
	root := t.TempDir() // registered first, so removed after closeAll ran
	t.Cleanup(c.closeAll)
	for i := 1; i <= size; i++ {
		id := fmt.Sprintf("n%d", i)
		c.addrs[id] = freeAddr(t)
		c.dirs[id] = filepath.Join(root, id)
	}
	c.start("n1", true)
	c.waitLeaderIs("n1")
	for i := 2; i <= size; i++ {
		id := fmt.Sprintf("n%d", i)
		c.start(id, false)
		c.join(id)
	}
	c.waitConverged()
	return c
}

// join adds id to the cluster through whichever node leads. Join is
// idempotent, so it is retried while leadership moves: on a loaded machine
// the short test timeouts can depose a leader between two joins.
func (c *testCluster) join(id string) {
	c.t.Helper()
	var last error
	c.eventually("joining "+id, func() bool {
		last = c.leader().Join(context.Background(), id, c.addrs[id], "http-"+id)
		switch {
		case last == nil:
			return true
		case errors.Is(last, engine.ErrNotLeader), errors.Is(last, engine.ErrUnknownOutcome):
			return false
		}
		c.t.Fatalf("join %s: %v", id, last)
		return false
	})
}

func (c *testCluster) config(id string, bootstrap bool) Config {
	cfg := Config{ID: id, Dir: c.dirs[id], RaftAddr: c.addrs[id], HTTPAddr: "http-" + id, Bootstrap: bootstrap,
		Clock: c.clock, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond, FailoverGrace: time.Second,
		Storage: storage.Options{MemTableBytes: 4 << 20, BlockCacheBytes: 4 << 20}}
	if testing.Verbose() {
		cfg.LogOutput = os.Stderr
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	return cfg
}

func (c *testCluster) start(id string, bootstrap bool) *Node {
	c.t.Helper()
	n, err := Open(c.config(id, bootstrap))
	if err != nil {
		c.t.Fatalf("open %s: %v", id, err)
	}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// live returns the running nodes.
func (c *testCluster) live() map[string]*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]*Node, len(c.nodes))
	for id, n := range c.nodes {
		out[id] = n
	}
	return out
}

// kill stops a node; in-process this is Close (the SIGKILL version of
// this test is the chaos suite's).
func (c *testCluster) kill(id string) {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n != nil {
		if err := n.Close(); err != nil {
			c.t.Errorf("closing %s: %v", id, err)
		}
	}
}

func (c *testCluster) closeAll() {
	for id := range c.live() {
		c.kill(id)
	}
}

// eventually retries cond until it holds, failing after a generous bound
// (a liveness bound for a stuck cluster, not a speed assertion).
func (c *testCluster) eventually(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *testCluster) leader() *Node {
	c.t.Helper()
	var l *Node
	c.eventually("a leader with its barrier done", func() bool {
		for _, n := range c.live() {
			if n.IsLeader() && n.readBarrier(context.Background()) == nil {
				l = n
				return true
			}
		}
		return false
	})
	return l
}

func (c *testCluster) waitLeaderIs(id string) {
	c.t.Helper()
	c.eventually("leader "+id, func() bool { return c.live()[id].IsLeader() })
}

// waitConverged waits until every live node has applied the leader's
// last index.
func (c *testCluster) waitConverged() {
	c.t.Helper()
	l := c.leader()
	// A barrier entry commits everything before it; then every node must
	// reach the leader's applied index.
	if err := l.raft.Barrier(10 * time.Second).Error(); err != nil {
		c.t.Fatalf("barrier: %v", err)
	}
	target := l.fsm.Applied()
	c.eventually("all nodes applied", func() bool {
		for _, n := range c.live() {
			if n.fsm.Applied() < target {
				return false
			}
		}
		return true
	})
}

// hashState hashes every key and value of a node's state.
func hashState(t testing.TB, v embedded.Viewer) string {
	t.Helper()
	h := sha256.New()
	err := v.View(func(r *storage.Reader) error {
		return r.Scan(nil, nil, true, func(k, val []byte) (bool, error) {
			_, _ = fmt.Fprintf(h, "%d:%x=%d:%x;", len(k), k, len(val), val) // a hash takes every write
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// assertSameState checks that every live node holds the same keyspace.
func (c *testCluster) assertSameState() string {
	c.t.Helper()
	c.waitConverged()
	var first, firstID string
	for id, n := range c.live() {
		h := hashState(c.t, n.fsm)
		if first == "" {
			first, firstID = h, id
		} else if h != first {
			c.t.Fatalf("state of %s (%s) differs from %s (%s)", id, h[:12], firstID, first[:12])
		}
	}
	return first
}

// verifyAll runs machine.Verify on every live node.
func (c *testCluster) verifyAll() {
	c.t.Helper()
	for id, n := range c.live() {
		err := n.fsm.View(func(r *storage.Reader) error {
			for _, err := range machine.Verify(r, 5) {
				c.t.Errorf("%s: %v", id, err)
			}
			return nil
		})
		if err != nil {
			c.t.Fatalf("%s: %v", id, err)
		}
	}
}
