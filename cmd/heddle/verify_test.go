package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/storage"
)

// plantKey writes key into the database at path behind the engine's
// back, as damage a bug could leave.
func plantKey(t *testing.T, st raftfsm.ReplicaState, key []byte) {
	t.Helper()
	db, err := storage.Open(storage.Options{Dir: st.Dir})
	if err != nil {
		t.Fatal(err)
	}
	// A replica's key is stored under its keyspace's prefix.
	full := append(append([]byte(nil), st.Keyspace...), key...)
	if err := db.Badger().Update(func(txn *badger.Txn) error { return txn.Set(full, []byte{}) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// hashTree returns the SHA-256 of every file under dir, by path.
func hashTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVerifyCommandUncleanDatabase: a database whose process was killed
// (here, a copy of the files of one still open) opens read-only only after
// a recovery that writes: verify checks a temporary copy instead, finds
// no problem, and leaves every file as it was.
func TestVerifyCommandUncleanDatabase(t *testing.T) {
	dir := t.TempDir()
	e, err := embedded.Open(embedded.Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, wf := range []string{"a", "b"} {
		if _, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: wf, Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	unclean := t.TempDir()
	if err := os.CopyFS(unclean, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(unclean, "LOCK")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	before := hashTree(t, unclean)
	out, errOut, code := runCmd(t, "verify", "--dir", unclean)
	if code != 0 || !strings.Contains(out, "no problems found") {
		t.Fatalf("verify of a database not closed cleanly: exit %d\n%s%s", code, out, errOut)
	}
	if after := hashTree(t, unclean); !maps.Equal(before, after) {
		t.Fatalf("verify changed the files it checked: %d files before, %d after", len(before), len(after))
	}
}

// TestVerifyCommandEmbedded: "heddle verify" passes an embedded engine's
// database with runs in it, and fails, naming the run, once the index by
// status holds an entry for a run that does not exist.
func TestVerifyCommandEmbedded(t *testing.T) {
	dir := t.TempDir()
	e, err := embedded.Open(embedded.Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, wf := range []string{"a", "b", "c"} {
		if _, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: wf, Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd(t, "verify", "--dir", dir)
	if code != 0 || !strings.Contains(out, "no problems found") {
		t.Fatalf("verify of a sound database: exit %d\n%s%s", code, out, errOut)
	}

	plantKey(t, raftfsm.ReplicaState{Dir: dir}, storage.StatusKey(byte(engine.StatusRunning), 987654))
	out, errOut, code = runCmd(t, "verify", "--dir", dir, "-o", "json")
	if code != 1 {
		t.Fatalf("verify of a database with a stray index entry: exit %d, want 1\n%s%s", code, out, errOut)
	}
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("verify -o json: %v\n%s", err, out)
	}
	if rep.Problems == 0 || len(rep.Databases) != 1 || !strings.Contains(strings.Join(rep.Databases[0].Problems, "\n"), "987654") {
		t.Fatalf("verify found %+v; want a problem naming run 987654", rep)
	}
}

// TestVerifyCommandShardedCluster: a sharded cluster of three nodes runs
// parents whose children live on other shards, and is stopped. "heddle
// verify" over the directory of its nodes checks every replica and the
// links between shards, and passes; once one replica of a shard holds a
// key its other replicas do not, at the same applied index, it fails,
// naming that replica, and so it does for a node's directory alone.
func TestVerifyCommandShardedCluster(t *testing.T) {
	const shards = 2
	c := newShardedTestCluster(t, shards)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: strings.Split(c.addrs(), ",")})
	if err != nil {
		t.Fatal(err)
	}
	cl := client.New(svc)
	w := worker.New(cl, "verify", worker.Options{})
	w.RegisterWorkflow(CrossShardParent)
	w.RegisterWorkflow(Greet)
	w.RegisterActivity(LookupTitle)
	w.RegisterActivity(ComposeGreeting)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: keyOnShard("parent-", i%shards, shards), TaskQueue: "verify"},
			CrossShardParent, keyOnShard("child-", (i+1)%shards, shards))
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatalf("parent %d: %v", i, err)
		}
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// Let every replica apply what its leader committed, then stop them. A
	// follower learns the leader's commit index only with a later entry,
	// and the last entries may write nothing (a claim that found no work),
	// so that their apply wakes no waiter: each round of this loop sends
	// a barrier entry and looks again once the leader applied it.
	for k := range shards {
		var leader *raftfsm.Node
		for _, n := range c.live() {
			if r := n.host.Shard(k); r != nil && r.IsLeader() {
				leader = r
			}
		}
		if leader == nil {
			t.Fatalf("shard %d has no leader", k)
		}
		target := leader.FSM().Applied()
		for round := 0; ; round++ {
			behind := ""
			for _, n := range c.live() {
				if r := n.host.Shard(k); r != nil && r.FSM().Applied() < target {
					behind = n.host.ID()
				}
			}
			if behind == "" {
				break
			}
			if round == 1000 {
				t.Fatalf("%s's replica of shard %d never applied index %d", behind, k, target)
			}
			if err := leader.Raft().Barrier(10 * time.Second).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range c.nodes {
		c.kill(i)
	}

	before := hashTree(t, c.root)
	out, errOut, code := runCmd(t, "verify", "--dir", c.root)
	t.Logf("heddle verify --dir <cluster>:\n%s", out)
	if after := hashTree(t, c.root); !maps.Equal(before, after) {
		t.Fatalf("verify changed the files it checked: %d files before, %d after", len(before), len(after))
	}
	if code != 0 || !strings.Contains(out, "across shards: 0 problems") || !strings.Contains(out, "no problems found") {
		t.Fatalf("verify of a sound cluster: exit %d\n%s%s", code, out, errOut)
	}
	replicas := 0
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 6 && strings.HasPrefix(f[0], "n") {
			replicas++
		}
	}
	if n := replicas; n != 3*shards {
		t.Fatalf("verify listed %d replicas, want %d\n%s", n, 3*shards, out)
	}

	n2, err := raftfsm.ReadNodeDir(filepath.Join(c.root, "n2"))
	if err != nil {
		t.Fatal(err)
	}
	plantKey(t, n2.States[1], storage.StatusKey(byte(engine.StatusRunning), 987654))
	out, errOut, code = runCmd(t, "verify", "--dir", c.root)
	if code != 1 || !strings.Contains(out, "n2 shard 1: holds other keys or values than the replica of n1") || !strings.Contains(out, "987654") {
		t.Fatalf("verify of a cluster with a replica that differs: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCmd(t, "verify", "--dir", filepath.Join(c.root, "n2"))
	if code != 1 || !strings.Contains(out, "987654") {
		t.Fatalf("verify of node n2's directory: exit %d\n%s%s", code, out, errOut)
	}
	shard1 := filepath.Join(c.root, "n2", "shards", "0001")
	if out, errOut, code = runCmd(t, "verify", "--dir", shard1); code != 1 || !strings.Contains(out, "987654") {
		t.Fatalf("verify of n2's replica of shard 1: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = runCmd(t, "verify", "--dir", filepath.Join(c.root, "n2", "shards", "0000")); code != 0 {
		t.Fatalf("verify of n2's replica of shard 0: exit %d\n%s%s", code, out, errOut)
	}
	// A repair acts on one database: a sharded node's is its store, which
	// holds every replica's state, and a shard's directory, which holds
	// none, is refused, naming the node's.
	store := filepath.Join(c.root, "n2", "state", "data-000000")
	if out, errOut, code = runCmd(t, "repair", "--dir", filepath.Join(c.root, "n2")); code != 0 || !strings.Contains(out, store+": no damage found") {
		t.Fatalf("repair of a sharded node's directory: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = runCmd(t, "repair", "--dir", shard1); code == 0 || !strings.Contains(errOut, "name the node's directory ("+filepath.Join(c.root, "n2")+")") {
		t.Fatalf("repair of a shard's directory: exit %d, %s", code, errOut)
	}
	if _, errOut, code = runCmd(t, "verify", "--dir", t.TempDir()); code != verifyExitUnchecked || !strings.Contains(errOut, "holds no heddle data") {
		t.Fatalf("verify of an empty directory: exit %d, %s; want %d", code, errOut, verifyExitUnchecked)
	}
	shardsDir := filepath.Join(c.root, "n2", "shards")
	if _, errOut, code = runCmd(t, "verify", "--dir", shardsDir); code != verifyExitUnchecked || !strings.Contains(errOut, "name the node's directory") {
		t.Fatalf("verify of a node's shards directory: exit %d, %s; want %d", code, errOut, verifyExitUnchecked)
	}
}
