package raftfsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// createOnEveryShard creates n runs on each shard of c, at its leader.
func createOnEveryShard(t *testing.T, c *testHosts, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for k := range c.shards {
		for i := range n {
			id := keyOn(fmt.Sprintf("%s%d-", prefix, i), k, c.shards)
			c.await(fmt.Sprintf("creating %s", id), func() bool {
				for _, h := range c.live() {
					if s := h.Shard(k); s != nil && s.IsLeader() {
						_, err := s.Engine().Create(context.Background(), engine.CreateJob{WorkflowID: id, Type: "t", Queue: "q", Input: []byte("payload " + id)})
						return err == nil
					}
				}
				return false
			})
			ids = append(ids, id)
		}
	}
	return ids
}

// assertHolds fails unless every replica node id holds describes each of
// ids from its own state.
func assertHolds(t *testing.T, c *testHosts, id string, ids []string) {
	t.Helper()
	h := c.live()[id]
	for _, wf := range ids {
		k := engine.ShardOfKey(wf, c.shards)
		s := h.Shard(k)
		if s == nil {
			continue
		}
		j, err := s.Engine().Describe(engine.WithStaleRead(context.Background()), engine.Target{WorkflowID: wf})
		if err != nil || j.WorkflowID != wf {
			t.Fatalf("%s's replica of shard %d: %s: %v", id, k, wf, err)
		}
	}
}

// TestDamagedNodeStoreRebuildsFromTheCluster: a sharded node whose state
// store fails its integrity checks at start moves it aside whole, and
// every replica it holds rebuilds from its group, ending with its peers'
// state.
func TestDamagedNodeStoreRebuildsFromTheCluster(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	ids := createOnEveryShard(t, c, "wf-", 20)
	c.verifyShards()
	c.kill("n3")
	store, err := LiveStateDir(filepath.Join(c.dirs["n3"], "state"))
	if err != nil {
		t.Fatal(err)
	}
	flipBytes(t, onlySST(t, store))
	ids = append(ids, createOnEveryShard(t, c, "after-", 5)...)
	c.start("n3", false)
	c.verifyShards()
	assertHolds(t, c, "n3", ids)
	ents, err := os.ReadDir(filepath.Join(c.dirs["n3"], "state"))
	if err != nil {
		t.Fatal(err)
	}
	var aside bool
	for _, e := range ents {
		aside = aside || strings.HasPrefix(e.Name(), "damaged-")
	}
	if !aside {
		t.Fatalf("the damaged store was not kept aside: %v", ents)
	}
}

// TestNodeOfTheLayoutBeforeTheStoreMovesIn: a sharded node whose replicas
// each kept their state in a directory of their own (shards/NNNN/state)
// moves them into its store at its first start and goes on with its
// peers: every run is there, and the directories are gone.
func TestNodeOfTheLayoutBeforeTheStoreMovesIn(t *testing.T) {
	const sentinel = "mtest/moved"
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	ids := createOnEveryShard(t, c, "wf-", 20)
	c.verifyShards()
	c.kill("n3")

	// Rewrite n3's directory in the layout before the store: each
	// replica's keys in shards/NNNN/state/data-000000, no store.
	dir := c.dirs["n3"]
	nd, err := ReadNodeDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := storage.Open(storage.Options{Dir: nd.Store})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range nd.Shards() {
		st := nd.States[k]
		legacy, err := storage.Open(storage.Options{Dir: filepath.Join(dir, "shards", fmt.Sprintf("%04d", k), "state", dataName(0))})
		if err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		go func() { _, err := whole.Keyspace(st.Keyspace).WriteSnapshot(pw); pw.CloseWithError(err) }()
		if _, err := legacy.LoadSnapshot(pr); err != nil {
			t.Fatal(err)
		}
		// A key no Raft entry writes: found after the start, it came
		// from this directory, not from a replay of the group's log.
		putKeys(t, legacy, map[string]string{sentinel: "moved"})
		if err := legacy.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := whole.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "state")); err != nil {
		t.Fatal(err)
	}
	if nd, err := ReadNodeDir(dir); err != nil || nd.Store != "" || len(nd.States) != 2 || nd.States[0].Keyspace != nil {
		t.Fatalf("the rewritten directory reads as %+v (%v), want the layout before the store", nd, err)
	}

	h := c.start("n3", false)
	for k := range 2 {
		err := h.Shard(k).fsm.View(func(r *storage.Reader) error {
			_, err := r.Get([]byte(sentinel))
			return err
		})
		if err != nil {
			t.Fatalf("n3's replica of shard %d lacks what its directory held: %v", k, err)
		}
	}
	// The sentinel goes again, so that the replicas' states compare equal.
	c.kill("n3")
	if nd, err = ReadNodeDir(dir); err != nil || nd.Store == "" {
		t.Fatalf("after the move the directory reads as %+v (%v), want a store", nd, err)
	}
	if whole, err = storage.Open(storage.Options{Dir: nd.Store}); err != nil {
		t.Fatal(err)
	}
	for _, k := range nd.Shards() {
		b := whole.Keyspace(nd.States[k].Keyspace).NewBatch()
		tx := b.Begin()
		tx.Delete([]byte(sentinel))
		if err := b.Add(tx); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := whole.Close(); err != nil {
		t.Fatal(err)
	}
	c.start("n3", false)
	ids = append(ids, createOnEveryShard(t, c, "after-", 5)...)
	c.verifyShards()
	assertHolds(t, c, "n3", ids)
	for k := range 2 {
		if _, err := os.Stat(filepath.Join(dir, "shards", fmt.Sprintf("%04d", k), "state")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("shard %d's directory of the layout before is still there: %v", k, err)
		}
	}
}

// TestNodeDropsTheStateOfShardsItDoesNotHold: state in a node's store of
// a shard its placement does not put on it (a removal whose deletes a
// crash took back after the replica's directory went) is dropped at its
// next start.
func TestNodeDropsTheStateOfShardsItDoesNotHold(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders()
	p := c.live()["n1"].Placement()
	var id string
	var k int
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		for s := range 2 {
			if !p.Groups[s].holds(n) {
				id, k = n, s
			}
		}
	}
	if id == "" {
		t.Fatalf("every node holds every shard: %+v", p.Groups)
	}
	c.kill(id)
	nd, err := ReadNodeDir(c.dirs[id])
	if err != nil {
		t.Fatal(err)
	}
	whole, err := storage.Open(storage.Options{Dir: nd.Store})
	if err != nil {
		t.Fatal(err)
	}
	putKeys(t, whole.Keyspace(keyspacePrefix(uint32(k), 0)), map[string]string{"left": "behind"})
	if err := whole.Close(); err != nil {
		t.Fatal(err)
	}
	c.start(id, false)
	c.kill(id)
	if whole, err = storage.Open(storage.Options{Dir: nd.Store}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = whole.Close() }()
	if got := keysOf(t, whole.Keyspace(binary.BigEndian.AppendUint32([]byte{keyspaceTag}, uint32(k)))); len(got) != 0 {
		t.Fatalf("%s still holds state of shard %d, which it does not hold: %v", id, k, got)
	}
}
