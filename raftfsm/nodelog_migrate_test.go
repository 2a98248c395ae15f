package raftfsm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/heddlewf/heddle/engine"
)

// toRaftBolt rewrites the node log of a stopped node of one group as the
// raft-boltdb store earlier versions kept in its place (raft/raft.db),
// and removes the node log: the directory an earlier version left. It
// returns the log's first and last index and the current term.
func toRaftBolt(t *testing.T, dir string) (first, last, term uint64) {
	t.Helper()
	raftDir := filepath.Join(dir, "raft")
	l, err := openNodeLogWith(raftDir, nodeLogOpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := l.group(0)
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(raftDir, raftBoltFile)})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range raftStableKeys {
		v, err := g.Get([]byte(k))
		if errors.Is(err, errStableKeyNotFound) {
			continue // a node that never voted
		}
		if err != nil {
			t.Fatalf("stable key %s: %v", k, err)
		}
		if err := store.Set([]byte(k), v); err != nil {
			t.Fatal(err)
		}
	}
	if term, err = g.GetUint64([]byte("CurrentTerm")); err != nil {
		t.Fatal(err)
	}
	if first, err = g.FirstIndex(); err != nil {
		t.Fatal(err)
	}
	if last, err = g.LastIndex(); err != nil {
		t.Fatal(err)
	}
	for i := first; i <= last; i++ {
		var e raft.Log
		if err := g.GetLog(i, &e); err != nil {
			t.Fatal(err)
		}
		if err := store.StoreLog(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(store.Close(), l.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(raftDir, nodeLogSegments)); err != nil {
		t.Fatal(err)
	}
	return first, last, term
}

// TestOneGroupNodeMovesItsRaftBoltLog: a cluster of one group whose nodes
// kept their Raft logs in raft-boltdb (earlier versions) starts on this
// version: each node moves its log, term and vote into a node log of its
// own and removes the old file; the logs, the terms and the state are the
// same after, and the cluster takes writes and converges.
func TestOneGroupNodeMovesItsRaftBoltLog(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	for i := range 30 {
		if _, err := c.leader().Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q", WorkflowID: "w" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	before := c.assertSameState()
	type logOf struct{ first, last, term uint64 }
	was := map[string]logOf{}
	for _, id := range []string{"n1", "n2", "n3"} {
		c.kill(id)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		f, l, term := toRaftBolt(t, c.dirs[id])
		if l == 0 || term == 0 {
			t.Fatalf("%s's log before the move: last index %d, term %d", id, l, term)
		}
		was[id] = logOf{f, l, term}
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		n := c.start(id, false)
		raftDir := filepath.Join(c.dirs[id], "raft")
		if fileExists(filepath.Join(raftDir, raftBoltFile)) || !fileExists(filepath.Join(raftDir, nodeLogSegments)) {
			t.Fatalf("%s: raft.db is left, or the node log was not made", id)
		}
		first, err1 := n.store.FirstIndex()
		last, err2 := n.store.LastIndex()
		term, err3 := n.store.GetUint64([]byte("CurrentTerm"))
		if err := errors.Join(err1, err2, err3); err != nil || first != was[id].first || last < was[id].last || term < was[id].term {
			t.Fatalf("%s after the move: first %d, last %d, term %d (%v); before: %+v", id, first, last, term, err, was[id])
		}
	}
	if got := c.assertSameState(); got != before {
		t.Fatalf("the state changed across the move: %s, was %s", got[:12], before[:12])
	}
	if _, err := c.leader().Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q", WorkflowID: "after"}); err != nil {
		t.Fatal(err)
	}
	c.assertSameState()
	c.verifyAll()
}
