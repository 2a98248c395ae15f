package raftfsm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// hostsSource is a BackupSource over an in-process cluster: each shard's
// calls go to its leader among the live hosts.
type hostsSource struct{ c *testHosts }

func (s hostsSource) leader(k int) *Host {
	id, _ := s.c.shardLeader(k)
	return s.c.live()[id]
}

func (s hostsSource) ShardMap(context.Context) (engine.ShardMap, error) {
	for _, h := range s.c.live() {
		return h.ShardMap(), nil
	}
	return engine.ShardMap{}, errors.New("no host")
}

func (s hostsSource) HoldDeliveries(ctx context.Context, k int, token, owner string, ttl time.Duration) error {
	return s.leader(k).HoldDeliveries(ctx, k, token, owner, ttl)
}

func (s hostsSource) ReleaseDeliveries(ctx context.Context, k int, token string) error {
	return s.leader(k).ReleaseDeliveries(ctx, k, token)
}

func (s hostsSource) CopyShard(ctx context.Context, k int, token string, w io.Writer) (uint64, error) {
	cp, err := s.leader(k).OpenShardCopy(ctx, k, token)
	if err != nil {
		return 0, err
	}
	defer cp.Close()
	if _, err := cp.Stream(w); err != nil {
		return 0, err
	}
	return cp.AppliedIndex, nil
}

// hookedSource calls its hooks around a hostsSource's calls.
type hookedSource struct {
	hostsSource
	afterHold func(k int)
	afterCopy func(k int)
}

func (s hookedSource) HoldDeliveries(ctx context.Context, k int, token, owner string, ttl time.Duration) error {
	err := s.hostsSource.HoldDeliveries(ctx, k, token, owner, ttl)
	if err == nil && s.afterHold != nil {
		s.afterHold(k)
	}
	return err
}

func (s hookedSource) CopyShard(ctx context.Context, k int, token string, w io.Writer) (uint64, error) {
	idx, err := s.hostsSource.CopyShard(ctx, k, token, w)
	if err == nil && s.afterCopy != nil {
		s.afterCopy(k)
	}
	return idx, err
}

// newRestoredHosts starts a new in-process cluster of nodes whose
// directories RestoreNode made from the backup in from.
func newRestoredHosts(t *testing.T, from string, nodes, shards int) *testHosts {
	t.Helper()
	c := &testHosts{t: t, clock: clock.NewManual(time.Unix(1_700_000_000, 0)), shards: shards,
		dirs: map[string]string{}, hosts: map[string]*Host{}, regs: map[string]*prometheus.Registry{}, metrics: map[string]*metrics.Metrics{}}
	root := t.TempDir()
	t.Cleanup(c.closeAll)
	for i := 1; i <= nodes; i++ {
		id := fmt.Sprintf("r%d", i)
		c.peers = append(c.peers, PlacementNode{ID: id, RaftAddr: freeAddr(t), HTTPAddr: "http-" + id})
		c.dirs[id] = filepath.Join(root, id)
	}
	for _, p := range c.peers {
		if _, err := RestoreNode(RestoreConfig{From: from, Dir: c.dirs[p.ID], ID: p.ID, Peers: c.peers,
			Storage: storage.Options{MemTableBytes: 4 << 20, BlockCacheBytes: 4 << 20}}); err != nil {
			t.Fatalf("restore %s: %v", p.ID, err)
		}
	}
	for _, p := range c.peers {
		c.start(p.ID, true)
	}
	return c
}

// outboxOf returns the outbox entries of shard k at its leader.
func (c *testHosts) outboxOf(ctx context.Context, k int) []*engine.OutboxEntry {
	c.t.Helper()
	_, eng := c.shardLeader(k)
	var es []*engine.OutboxEntry
	if err := eng.View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
		var err error
		es, err = machine.PendingEntries(r, 0)
		return err
	}); err != nil {
		c.t.Fatal(err)
	}
	return es
}

// runsOf counts the runs of workflow id wf on shard k's leader.
func (c *testHosts) runsOf(ctx context.Context, k int, wf string) int {
	c.t.Helper()
	_, eng := c.shardLeader(k)
	runs := 0
	if err := eng.View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
		return r.Scan(storage.RunsPrefix(wf), nil, false, func([]byte, []byte) (bool, error) { runs++; return true, nil })
	}); err != nil {
		c.t.Fatal(err)
	}
	return runs
}

// startChildren creates n parents on shard 1 and has each start a child
// on shard 0 (the creates wait in the background for the deliveries); it
// returns the parents' job ids and the children's workflow ids.
func startChildren(t *testing.T, c *testHosts, ctx context.Context, n int) ([]engine.JobID, []string) {
	t.Helper()
	_, eng1 := c.shardLeader(1)
	var parents []engine.JobID
	var kids []string
	for i := range n {
		p, err := eng1.Create(ctx, engine.CreateJob{WorkflowID: keyOn(fmt.Sprintf("parent%d-", i), 1, 2), Type: "parent", Queue: "parents"})
		if err != nil {
			t.Fatal(err)
		}
		parents = append(parents, p.Job)
	}
	claimed, err := eng1.Claim(ctx, engine.Claim{Queue: "parents", Owner: "pw", LeaseMS: 600_000, Max: n})
	if err != nil || len(claimed) != n {
		t.Fatalf("claim the parents: %v %v", claimed, err)
	}
	for i, cl := range claimed {
		kid := keyOn(fmt.Sprintf("child%d-", i), 0, 2)
		kids = append(kids, kid)
		create := engine.CreateJob{Header: engine.Header{RequestID: "start-" + kid}, WorkflowID: kid, Type: "child", Queue: "kids",
			ParentID: cl.Job, ParentStep: "s1", ParentLease: &engine.LeaseRef{Job: cl.Job, Attempt: cl.Attempt, Token: cl.LeaseToken}}
		go func() { _, _ = eng1.Create(ctx, create) }() // answers once delivered, or when ctx ends
	}
	// The parents' order is the claim's: the effects are checked by job.
	parents = parents[:0]
	for _, cl := range claimed {
		parents = append(parents, cl.Job)
	}
	return parents, kids
}

// TestBackupRestoreCrossShardInFlight: parents on shard 1 start children on
// shard 0; one child's delivery is applied on shard 0 and never
// acknowledged, the others' do not arrive, so the backup starts with
// every entry pending. Once every shard is held, deliveries would flow
// again; the backup copies shard 0 (the target) before shard 1 (the
// source), the order in which a delivery between the copies would lose a
// child, and a Deliver and an AckDelivery proposed after the copy of shard
// 0, as a deliverer's late retry would, are refused. A new cluster
// restored from the backup then creates every child exactly once, the
// parents get their results once, and VerifyShard and VerifyAcrossShards
// are clean; the original cluster, its holds released, delivers too.
func TestBackupRestoreCrossShardInFlight(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var blocked atomic.Bool
	blocked.Store(true)
	var once sync.Once
	applied := make(chan struct{})
	c.mu.Lock()
	c.deliverHook = func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool) {
		if !blocked.Load() {
			return nil, nil, false
		}
		first := false
		once.Do(func() { first = true })
		if first {
			// Applied on the target; the answer is lost.
			if _, err := c.applyDeliver(ctx, to, d); err != nil {
				t.Errorf("the first delivery: %v", err)
			}
			close(applied)
		}
		return nil, errors.New("connection reset by peer"), true
	}
	c.mu.Unlock()

	const n = 3
	parents, kids := startChildren(t, c, ctx, n)
	<-applied
	c.await("every child's entry pending on shard 1", func() bool { return len(c.outboxOf(ctx, 1)) == n })

	var refused atomic.Int32
	src := hookedSource{hostsSource: hostsSource{c}, afterHold: func(k int) {
		if k == c.shards-1 {
			blocked.Store(false) // every shard held: deliveries would flow now
		}
	}, afterCopy: func(k int) {
		if k != 0 {
			return
		}
		// A deliverer's proposals that were on their way before the hold
		// meet it where they would take effect.
		es := c.outboxOf(ctx, 1)
		if len(es) != n {
			t.Errorf("shard 1 has %d entries pending after shard 0's copy, want %d: deliveries went on during the backup", len(es), n)
			return
		}
		e := es[len(es)-1]
		_, eng0 := c.shardLeader(0)
		_, err := eng0.Propose(ctx, &engine.Deliver{DeliveryRef: e.DeliveryRef, Command: e.Command, AckedBelow: e.Seq})
		if errors.Is(err, ErrDeliveriesHeld) && strings.Contains(err.Error(), "raftfsm: Deliver refused: shard 0's deliveries are held") {
			refused.Add(1)
		} else {
			t.Errorf("a Deliver on held shard 0 answered %v, want ErrDeliveriesHeld naming the Deliver and the shard", err)
		}
		_, eng1 := c.shardLeader(1)
		_, err = eng1.Propose(ctx, &engine.AckDelivery{DeliveryRef: es[0].DeliveryRef, Answer: engine.DeliverResult{Kind: es[0].Kind}})
		if errors.Is(err, ErrDeliveriesHeld) {
			refused.Add(1)
		} else {
			t.Errorf("an AckDelivery on held shard 1 answered %v, want ErrDeliveriesHeld", err)
		}
	}}
	dir := filepath.Join(t.TempDir(), "backup")
	m, err := Backup(ctx, src, dir, BackupOptions{Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if refused.Load() != 2 || m.Shards != 2 || len(m.Files) != 2 {
		t.Fatalf("refused %d proposals during the backup (want 2); manifest %+v", refused.Load(), m)
	}
	if _, err := ReadBackup(dir); err != nil {
		t.Fatal(err)
	}

	// The original cluster: released, it delivers every child once.
	for k := range c.shards {
		for id, h := range c.live() {
			if held, err := h.DeliveryHold(k); err != nil || (held != nil && h.LeadsShard(k)) {
				t.Fatalf("node %s: shard %d still held after the backup: %+v %v", id, k, held, err)
			}
		}
	}
	c.await("the original cluster's children delivered", func() bool { return c.nothingPending(ctx) })
	for _, kid := range kids {
		if runs := c.runsOf(ctx, 0, kid); runs != 1 {
			t.Fatalf("original cluster: child %s has %d runs, want 1", kid, runs)
		}
	}

	// The restored cluster delivers the entries pending in the backup.
	r := newRestoredHosts(t, dir, 3, 2)
	r.await("the restored cluster's children delivered", func() bool { return r.nothingPending(ctx) })
	for _, kid := range kids {
		if runs := r.runsOf(ctx, 0, kid); runs != 1 {
			t.Fatalf("restored cluster: child %s has %d runs, want exactly 1", kid, runs)
		}
	}
	for k := range r.shards {
		for id, h := range r.live() {
			if held, err := h.DeliveryHold(k); err != nil || held != nil {
				t.Fatalf("restored node %s: shard %d holds %+v %v, want no hold", id, k, held, err)
			}
		}
	}
	// The children complete; each parent records its child's result once.
	_, eng0 := r.shardLeader(0)
	done := 0
	for done < n {
		got, err := eng0.Claim(ctx, engine.Claim{Queue: "kids", Owner: "kw", LeaseMS: 600_000, Max: n})
		if errors.Is(err, engine.ErrNotLeader) {
			_, eng0 = r.shardLeader(0)
			continue
		}
		if err != nil || len(got) == 0 {
			t.Fatalf("claim the restored children: %v %v", got, err)
		}
		for _, k := range got {
			complete := engine.Complete{LeaseRef: engine.LeaseRef{Job: k.Job, Attempt: k.Attempt, Token: k.LeaseToken},
				Result: []byte(`"` + k.WorkflowID + `"`)}
			_, err := eng0.Complete(ctx, complete)
			for tries := 0; errors.Is(err, engine.ErrNotLeader) && tries < 1000; tries++ {
				// The restored cluster's leaders move to their places
				// meanwhile (the balancer): the lease is replicated, and
				// the new leader completes it.
				_, eng0 = r.shardLeader(0)
				_, err = eng0.Complete(ctx, complete)
			}
			if err != nil {
				t.Fatal(err)
			}
			done++
		}
	}
	r.await("every parent's effect recorded", func() bool {
		if !r.nothingPending(ctx) {
			return false
		}
		_, e1 := r.shardLeaderNow(1)
		if e1 == nil {
			return false
		}
		for _, p := range parents {
			if eff, err := e1.Effect(engine.WithStaleRead(ctx), p, "s1"); err != nil || eff == nil {
				return false
			}
		}
		return true
	})
	_, eng1 := r.shardLeader(1)
	for _, p := range parents {
		hist, err := eng1.History(ctx, p, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		recorded := 0
		for _, ev := range hist.Events {
			if ev.Type == engine.EventEffectRecorded && ev.Step == "s1" {
				recorded++
			}
		}
		if recorded != 1 {
			t.Fatalf("restored parent %d records the effect of s1 %d times, want once", p, recorded)
		}
	}
	r.verifyShards()
	r.verifyAcross()
}

// TestBackupHoldStopsDeliveries: while every shard is held, a pending
// entry's deliverer proposes nothing (it finds its source held), a Deliver
// proposed anyway is refused by the target's state machine, and another
// backup's hold is refused; past the hold's expiry each shard's leader
// releases it and the child is delivered.
func TestBackupHoldStopsDeliveries(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sent atomic.Int32
	c.mu.Lock()
	c.deliverHook = func(string, string, *engine.Deliver) (*engine.DeliverResult, error, bool) {
		sent.Add(1)
		return nil, nil, false
	}
	c.mu.Unlock()
	src := hostsSource{c}
	for k := range c.shards {
		if err := src.HoldDeliveries(ctx, k, "b1", "test", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	err := src.HoldDeliveries(ctx, 0, "b2", "another", time.Minute)
	var he *HeldError
	if !errors.As(err, &he) || he.Token != "b1" || he.Owner != "test" || !strings.Contains(err.Error(), HeldCode) {
		t.Fatalf("a second backup's hold answered %v, want a HeldError naming b1", err)
	}
	if err := src.ReleaseDeliveries(ctx, 0, "b2"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("releasing a hold not taken answered %v, want ErrNotHeld", err)
	}

	srcID, _ := c.shardLeader(1)
	before, skipped := c.live()[srcID].delivery.heldSkipped()
	_, kids := startChildren(t, c, ctx, 1)
	select {
	case <-skipped:
	case <-time.After(30 * time.Second):
		t.Fatal("the source's deliverer never looked at its held entry")
	}
	if after, _ := c.live()[srcID].delivery.heldSkipped(); after <= before {
		t.Fatalf("held skips %d, then %d", before, after)
	}
	if sent.Load() != 0 {
		t.Fatalf("%d deliveries sent while held, want 0", sent.Load())
	}
	es := c.outboxOf(ctx, 1)
	if len(es) != 1 {
		t.Fatalf("shard 1 has %d entries pending, want 1", len(es))
	}
	_, eng0 := c.shardLeader(0)
	if _, err := eng0.Propose(ctx, &engine.Deliver{DeliveryRef: es[0].DeliveryRef, Command: es[0].Command, AckedBelow: es[0].Seq}); !errors.Is(err, ErrDeliveriesHeld) {
		t.Fatalf("a Deliver on a held shard answered %v, want ErrDeliveriesHeld", err)
	}
	if runs := c.runsOf(ctx, 0, kids[0]); runs != 0 {
		t.Fatalf("the child has %d runs while held, want 0", runs)
	}
	// A copy under a token that holds nothing is refused.
	if _, err := src.CopyShard(ctx, 0, "b2", io.Discard); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a copy under another token answered %v, want ErrNotHeld", err)
	}

	// Past the expiry the leaders release the holds through the log.
	c.clock.Advance(2 * time.Minute)
	c.await("the child delivered after the holds expired", func() bool { return c.nothingPending(ctx) })
	if runs := c.runsOf(ctx, 0, kids[0]); runs != 1 {
		t.Fatalf("the child has %d runs, want 1", runs)
	}
	for k := range c.shards {
		id, _ := c.shardLeader(k)
		if held, err := c.live()[id].DeliveryHold(k); err != nil || held != nil {
			t.Fatalf("shard %d holds %+v %v after the expiry", k, held, err)
		}
	}
	if _, err := src.CopyShard(ctx, 0, "b1", io.Discard); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a copy under an expired hold answered %v, want ErrNotHeld", err)
	}
	c.verifyAcross()
}

// TestBackupRefusesDamagedFiles: a backup whose shard file is truncated or
// changed, or whose manifest is missing or damaged, is refused by
// ReadBackup and RestoreNode with an error naming the file.
func TestBackupRefusesDamagedFiles(t *testing.T) {
	c := newTestHosts(t, 1, 2)
	ctx := context.Background()
	_, eng := c.shardLeader(0)
	if _, err := eng.Create(ctx, engine.CreateJob{WorkflowID: keyOn("wf-", 0, 2), Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "good")
	if _, err := Backup(ctx, hostsSource{c}, good, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(ctx, hostsSource{c}, good, BackupOptions{}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a backup into a directory that is not empty answered %v", err)
	}
	copyDir := func(t *testing.T) string {
		dst := filepath.Join(t.TempDir(), "b")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(good)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(good, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dst
	}
	cases := []struct {
		name, file string
		damage     func(path string) error
		want       string
	}{
		{"truncated", shardFileName(1), func(p string) error {
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, st.Size()/2)
		}, "truncated"},
		{"changed", shardFileName(0), func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0xff
			return os.WriteFile(p, b, 0o600)
		}, "checksum"},
		{"no manifest", ManifestFile, os.Remove, "did not finish"},
		{"damaged manifest", ManifestFile, func(p string) error { return os.WriteFile(p, []byte(`{"format": 1, "shards": `), 0o600) }, "not a manifest"},
		{"missing shard", shardFileName(1), os.Remove, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t)
			path := filepath.Join(dir, tc.file)
			if err := tc.damage(path); err != nil {
				t.Fatal(err)
			}
			_, err := ReadBackup(dir)
			var be *BackupError
			if !errors.As(err, &be) || be.File != path || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBackup) {
				t.Fatalf("ReadBackup answered %v, want a BackupError naming %s and saying %q", err, path, tc.want)
			}
			node := filepath.Join(t.TempDir(), "n1")
			_, err = RestoreNode(RestoreConfig{From: dir, Dir: node, ID: "n1", Peers: []PlacementNode{{ID: "n1", RaftAddr: "127.0.0.1:1"}}})
			if !errors.As(err, &be) || be.File != path {
				t.Fatalf("RestoreNode answered %v, want a BackupError naming %s", err, path)
			}
			if _, err := os.Stat(filepath.Join(node, placementFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused restore left a node directory with a placement: %v", err)
			}
		})
	}
	// The good backup restores.
	node := filepath.Join(t.TempDir(), "n1")
	if _, err := RestoreNode(RestoreConfig{From: good, Dir: node, ID: "n1", Peers: []PlacementNode{{ID: "n1", RaftAddr: "127.0.0.1:1"}}}); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeManifestBounds: a manifest over the size bound, with a path
// for a file name, or with files that do not match its shard count, is
// refused.
func TestDecodeManifestBounds(t *testing.T) {
	good := BackupManifest{Format: BackupFormat, Token: "t", Shards: 1, Files: []BackupShard{{Shard: 0, File: shardFileName(0), Bytes: 10,
		SHA256: strings.Repeat("ab", 32), AppliedIndex: 3}}}
	b, _ := json.Marshal(good)
	if _, err := DecodeManifest(b); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(m *BackupManifest){
		"path":    func(m *BackupManifest) { m.Files[0].File = "../../etc/passwd" },
		"count":   func(m *BackupManifest) { m.Shards = 2 },
		"format":  func(m *BackupManifest) { m.Format = 2 },
		"sum":     func(m *BackupManifest) { m.Files[0].SHA256 = "zz" },
		"index":   func(m *BackupManifest) { m.Files[0].AppliedIndex = 0 },
		"notoken": func(m *BackupManifest) { m.Token = "" },
	} {
		m := good
		m.Files = append([]BackupShard(nil), good.Files...)
		mutate(&m)
		b, _ := json.Marshal(m)
		if _, err := DecodeManifest(b); err == nil {
			t.Errorf("%s: accepted %s", name, b)
		}
	}
	if _, err := DecodeManifest(bytes.Repeat([]byte(" "), maxManifestBytes+1)); err == nil {
		t.Error("accepted a manifest over the bound")
	}
}

// FuzzDecodeManifest: the decoder never panics, and what it accepts names
// only the files the format gives the shards.
func FuzzDecodeManifest(f *testing.F) {
	good, _ := json.Marshal(BackupManifest{Format: BackupFormat, Token: "t", Shards: 1, Files: []BackupShard{{Shard: 0, File: shardFileName(0),
		Bytes: 10, SHA256: strings.Repeat("ab", 32), AppliedIndex: 3}}})
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format":1,"shards":4096,"files":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			return
		}
		for k, s := range m.Files {
			if s.File != shardFileName(k) {
				t.Fatalf("accepted file %q for shard %d", s.File, k)
			}
		}
	})
}
