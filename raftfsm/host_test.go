package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
	"github.com/prometheus/client_golang/prometheus"
)

// testHosts is an in-process sharded cluster: hosts on loopback with real
// directories, sharing one manual clock for the commands' Now.
type testHosts struct {
	t      testing.TB
	clock  *clock.Manual
	peers  []PlacementNode
	shards int
	dirs   map[string]string
	mu     sync.Mutex
	hosts  map[string]*Host
	// deliverHook, when set, sees each delivery a node sends to another
	// (deliver_test.go); nil delivers it.
	deliverHook func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool)
	// regs are the hosts' metric registries, by node id: each node records
	// into its own, across restarts.
	regs    map[string]*prometheus.Registry
	metrics map[string]*metrics.Metrics
}

// gather reads node id's metrics.
func (c *testHosts) gather(id string) metricstest.Families {
	c.t.Helper()
	c.mu.Lock()
	reg := c.regs[id]
	c.mu.Unlock()
	fs, err := metricstest.Gather(reg)
	if err != nil {
		c.t.Fatal(err)
	}
	return fs
}

func newTestHosts(t testing.TB, nodes, shards int) *testHosts {
	t.Helper()
	c := &testHosts{t: t, clock: clock.NewManual(time.Unix(1_700_000_000, 0)), shards: shards,
		dirs: map[string]string{}, hosts: map[string]*Host{}, regs: map[string]*prometheus.Registry{}, metrics: map[string]*metrics.Metrics{}}
	root := t.TempDir()
	t.Cleanup(c.closeAll)
	for i := 1; i <= nodes; i++ {
		id := fmt.Sprintf("n%d", i)
		c.peers = append(c.peers, PlacementNode{ID: id, RaftAddr: freeAddr(t), HTTPAddr: "http-" + id})
		c.dirs[id] = filepath.Join(root, id)
	}
	for _, p := range c.peers {
		c.start(p.ID, true)
	}
	return c
}

func (c *testHosts) config(id string, withPeers bool) HostConfig {
	var self PlacementNode
	for _, p := range c.peers {
		if p.ID == id {
			self = p
		}
	}
	cfg := HostConfig{Config: Config{ID: id, Dir: c.dirs[id], RaftAddr: self.RaftAddr, HTTPAddr: self.HTTPAddr,
		Clock: c.clock, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond, FailoverGrace: time.Second,
		Storage: storage.Options{MemTableBytes: 4 << 20, BlockCacheBytes: 4 << 20}}}
	if withPeers {
		cfg.Peers, cfg.Shards = c.peers, c.shards
	}
	c.mu.Lock()
	if c.metrics[id] == nil {
		reg := prometheus.NewRegistry()
		m, err := metrics.NewWithOptions(reg, metrics.Options{Sharded: true})
		if err != nil {
			c.mu.Unlock()
			c.t.Fatal(err)
		}
		c.regs[id], c.metrics[id] = reg, m
	}
	cfg.Metrics = c.metrics[id]
	c.mu.Unlock()
	cfg.DeliverTo = func(ctx context.Context, node, _ string, d *engine.Deliver) (*engine.DeliverResult, error) {
		return c.deliverTo(ctx, id, node, d)
	}
	if testing.Verbose() {
		cfg.LogOutput = os.Stderr
	}
	return cfg
}

func (c *testHosts) start(id string, withPeers bool) *Host {
	c.t.Helper()
	h, err := OpenHost(c.config(id, withPeers))
	if err != nil {
		c.t.Fatalf("open %s: %v", id, err)
	}
	c.mu.Lock()
	c.hosts[id] = h
	c.mu.Unlock()
	return h
}

func (c *testHosts) live() map[string]*Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]*Host, len(c.hosts))
	for id, h := range c.hosts {
		out[id] = h
	}
	return out
}

func (c *testHosts) kill(id string) {
	c.t.Helper()
	c.mu.Lock()
	h := c.hosts[id]
	delete(c.hosts, id)
	c.mu.Unlock()
	if h != nil {
		if err := h.Close(); err != nil {
			c.t.Errorf("closing %s: %v", id, err)
		}
	}
}

func (c *testHosts) closeAll() {
	for id := range c.live() {
		c.kill(id)
	}
}

// await waits until cond holds, looking again at every commit, leader
// change or placement change of any live host's shards (events, not a
// timer); the bound only catches a stuck cluster.
func (c *testHosts) await(what string, cond func() bool) {
	c.t.Helper()
	c.awaitSaying(func() string { return what }, cond)
}

// awaitSaying is await, with what to say on a time-out made then.
func (c *testHosts) awaitSaying(what func() string, cond func() bool) {
	c.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)}}
		for _, h := range c.live() {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.ShardsChanged())},
				reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.LeaderChanged())})
		}
		if cond() {
			return
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			c.t.Fatalf("timed out waiting for %s", what())
		}
	}
}

// leaders returns each shard's leader as its replicas see it ("" while
// they do not agree or know none).
func (c *testHosts) leaders() []string {
	out := make([]string, c.shards)
	for k := range out {
		var seen string
		agree := true
		for id, h := range c.live() {
			n := h.Shard(k)
			if n == nil {
				continue
			}
			if n.IsLeader() {
				seen = id
			}
			if lid, _ := n.Leader(); lid == "" || (seen != "" && lid != seen) {
				agree = false
			}
		}
		if agree {
			out[k] = seen
		}
	}
	return out
}

// awaitDesiredLeaders waits until every shard is led by its desired leader.
func (c *testHosts) awaitDesiredLeaders() {
	c.t.Helper()
	c.await("every shard led by its desired leader", func() bool {
		for _, h := range c.live() {
			p := h.Placement()
			got := c.leaders()
			for k, g := range p.Groups {
				if got[k] != g.Leader {
					return false
				}
			}
			return true
		}
		return false
	})
}

// awaitPlacement waits until every live host applied placement version v.
func (c *testHosts) awaitPlacement(v uint64) {
	c.t.Helper()
	c.await(fmt.Sprintf("placement version %d everywhere", v), func() bool {
		for _, h := range c.live() {
			if h.PlacementVersion() < v {
				return false
			}
		}
		return true
	})
}

// keyOn returns a workflow id that routes to shard k.
func keyOn(prefix string, k, count int) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s%d", prefix, i); engine.ShardOfKey(id, count) == k {
			return id
		}
	}
}

// TestHostsSpreadShardLeadersAndApplyEach: a 3-node cluster of 4 shards
// places its leaders as the placement says (n1 shards 0 and 3, n2 shard
// 1, n3 shard 2), each shard's leader applies its own runs, whose ids
// carry the shard, every replica holds them, and Verify passes on each
// replica of each shard.
func TestHostsSpreadShardLeadersAndApplyEach(t *testing.T) {
	c := newTestHosts(t, 3, 4)
	c.awaitDesiredLeaders()
	p := c.live()["n1"].Placement()
	if want := []string{"n1", "n2", "n3", "n1"}; !reflect.DeepEqual(c.leaders(), want) {
		t.Fatalf("leaders %v, want %v", c.leaders(), want)
	}
	for k := range 4 {
		leader := c.live()[p.Groups[k].Leader].Shard(k)
		before := leader.ProposedCommands()
		res, err := leader.Engine().Create(context.Background(), engine.CreateJob{WorkflowID: keyOn("wf-", k, 4), Type: "t", Queue: "q"})
		if err != nil {
			t.Fatalf("shard %d: %v", k, err)
		}
		if engine.ShardOfJob(res.Job) != k {
			t.Fatalf("shard %d gave job id %d, of shard %d", k, res.Job, engine.ShardOfJob(res.Job))
		}
		if leader.ProposedCommands() == before {
			t.Fatalf("shard %d's leader proposed nothing", k)
		}
		// The other shards' leaders proposed nothing for it: a follower of
		// shard k refuses the write.
		for id, h := range c.live() {
			if id == p.Groups[k].Leader {
				continue
			}
			_, err := h.Shard(k).Engine().Create(context.Background(), engine.CreateJob{WorkflowID: keyOn("x-", k, 4), Type: "t", Queue: "q"})
			if !errors.Is(err, engine.ErrNotLeader) {
				t.Fatalf("shard %d's replica on %s: %v, want not-leader", k, id, err)
			}
		}
	}
	// A run whose workflow id routes to another shard is refused there.
	_, err := c.live()["n1"].Shard(0).Engine().Create(context.Background(), engine.CreateJob{WorkflowID: keyOn("wf-", 1, 4), Type: "t", Queue: "q"})
	if !errors.Is(err, engine.ErrCrossShard) {
		t.Fatalf("a run of shard 1 created on shard 0: %v, want ErrCrossShard", err)
	}
	c.verifyShards()
}

// verifyShards waits until every replica of every shard has applied its
// leader's index, then runs VerifyShard on each and checks they hold the
// same state.
func (c *testHosts) verifyShards() {
	c.t.Helper()
	for k := range c.shards {
		var leader *Node
		// A barrier entry commits everything before it on the followers
		// too: hashicorp/raft's pipelined replication tells a follower
		// the leader's commit index only with a later entry. A barrier
		// refused while the leadership moves (the balancer handing it to
		// the desired leader) is asked again of the next leader.
		c.await(fmt.Sprintf("a leader of shard %d with its barriers done", k), func() bool {
			for _, h := range c.live() {
				if n := h.Shard(k); n != nil && n.IsLeader() && barrierWithin(n, time.Second) == nil &&
					n.raft.Barrier(10*time.Second).Error() == nil {
					leader = n
					return true
				}
			}
			return false
		})
		target := leader.fsm.Applied()
		// The barrier may itself have gone to a follower in the batch
		// before the leader knew the entries under it committed, and a
		// heartbeat does not carry the commit index: while a replica is
		// behind, another barrier (one at a time) tells it. A replica that
		// applies, or a barrier that ends, wakes the wait.
		var behind []string
		var barrier atomic.Bool
		c.awaitSaying(func() string {
			return fmt.Sprintf("every replica of shard %d applied %d (behind: %v)", k, target, behind)
		}, func() bool {
			behind = behind[:0]
			for id, h := range c.live() {
				if n := h.Shard(k); n != nil && n.fsm.Applied() < target {
					behind = append(behind, fmt.Sprintf("%s at %d, %s, leader %q", id, n.fsm.Applied(), n.raft.State(), h.ShardMap().Leaders[k]))
				}
			}
			if len(behind) > 0 && barrier.CompareAndSwap(false, true) {
				go func() {
					_ = leader.raft.Barrier(10 * time.Second).Error()
					barrier.Store(false)
					for _, h := range c.live() {
						h.changed() // look again, and send another if need be
					}
				}()
			}
			return len(behind) == 0
		})
		for id, h := range c.live() {
			n := h.Shard(k)
			if n == nil {
				continue
			}
			err := n.fsm.View(func(r *storage.Reader) error {
				for _, err := range machine.VerifyShard(r, 5, engine.ShardLayout{Index: k, Count: c.shards}) {
					c.t.Errorf("shard %d on %s: %v", k, id, err)
				}
				return nil
			})
			if err != nil {
				c.t.Fatal(err)
			}
		}
		// A leader elected meanwhile writes its address: the replicas agree
		// once they applied the same entries.
		c.await(fmt.Sprintf("the replicas of shard %d holding one state", k), func() bool {
			states := map[string]bool{}
			for _, h := range c.live() {
				if n := h.Shard(k); n != nil {
					states[hashState(c.t, n.fsm)] = true
				}
			}
			return len(states) == 1
		})
	}
}

// barrierWithin is n's read barrier, given up after d: a barrier started
// just as the leadership moves waits for a term that has ended.
func barrierWithin(n *Node, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return n.readBarrier(ctx)
}

// TestHostRestartsFromItsDirectory: a node restarted without its peers
// reads its placement from its directory, rejoins every group, and takes
// back the leadership the placement gives it.
func TestHostRestartsFromItsDirectory(t *testing.T) {
	c := newTestHosts(t, 3, 4)
	c.awaitDesiredLeaders()
	c.kill("n2")
	c.await("shard 1 led by another node", func() bool { return c.leaders()[1] != "" })
	c.start("n2", false)
	c.awaitDesiredLeaders()
	if v := c.live()["n2"].PlacementVersion(); v != 1 {
		t.Fatalf("placement version %d after a restart, want 1", v)
	}
}

// TestHostSetShardLeader: an admin's change of a shard's desired leader
// goes through the metadata group, and the shard's leadership follows.
func TestHostSetShardLeader(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	var metaLeader *Host
	c.await("a metadata leader", func() bool {
		for _, h := range c.live() {
			if id, _ := h.metaLeader(); id == h.ID() {
				metaLeader = h
				return true
			}
		}
		return false
	})
	for _, h := range c.live() {
		if h == metaLeader {
			continue
		}
		if _, err := h.SetShardLeader(context.Background(), 0, "n3"); !errors.Is(err, engine.ErrNotLeader) {
			t.Fatalf("a follower of the metadata group set a leader: %v", err)
		}
		break
	}
	if _, err := metaLeader.SetShardLeader(context.Background(), 0, "nobody"); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a leader holding no replica: %v", err)
	}
	v, err := metaLeader.SetShardLeader(context.Background(), 0, "n3")
	if err != nil || v != 2 {
		t.Fatalf("SetShardLeader: version %d, %v", v, err)
	}
	c.await("shard 0 led by n3", func() bool { return c.leaders()[0] == "n3" })
	if v, err := metaLeader.RebalanceLeaders(context.Background()); err != nil || v != 3 {
		t.Fatalf("RebalanceLeaders: version %d, %v", v, err)
	}
	c.awaitPlacement(3)
	c.awaitDesiredLeaders()
	if got := c.leaders()[0]; got != "n1" {
		t.Fatalf("shard 0 led by %s after the rebalance, want n1", got)
	}
}

// TestHostRefusesOverlongNodeNames: an admin command naming a node id or
// address longer than a placement holds is refused as invalid, naming the
// field, before it is proposed; it was written to the metadata log and
// then refused there as a malformed entry (an internal error).
func TestHostRefusesOverlongNodeNames(t *testing.T) {
	c := newTestHosts(t, 1, 2)
	meta := c.metaLeader()
	ctx := context.Background()
	id, addr := strings.Repeat("n", maxNodeIDBytes+1), strings.Repeat("a", maxAddrBytes+1)
	for _, tc := range []struct {
		field string
		do    func() (uint64, error)
	}{
		{"ShardLeaderRequest.node", func() (uint64, error) { return meta.SetShardLeader(ctx, 0, id) }},
		{"MoveReplicaRequest.from", func() (uint64, error) { return meta.MoveReplica(ctx, 0, id, "n1") }},
		{"MoveReplicaRequest.to", func() (uint64, error) { return meta.MoveReplica(ctx, 0, "n1", id+id+id) }},
		{"ClusterMember.id", func() (uint64, error) { return meta.AddNode(ctx, PlacementNode{ID: id, RaftAddr: "r"}) }},
		{"ClusterMember.raft_addr", func() (uint64, error) {
			return meta.AddNode(ctx, PlacementNode{ID: "n9", RaftAddr: addr + addr + addr})
		}},
		{"ClusterMember.http_addr", func() (uint64, error) {
			return meta.AddNode(ctx, PlacementNode{ID: "n9", RaftAddr: "r", HTTPAddr: addr})
		}},
		{"RemoveNode.id", func() (uint64, error) { return meta.RemoveNode(ctx, id+id) }},
	} {
		before := meta.meta.raft.LastIndex()
		_, err := tc.do()
		var ee *EntryError
		if !errors.Is(err, engine.ErrInvalidCommand) || errors.As(err, &ee) || !strings.Contains(fmt.Sprint(err), tc.field+" is ") {
			t.Errorf("%s too long: %v; want ErrInvalidCommand naming it, before the log", tc.field, err)
		}
		if after := meta.meta.raft.LastIndex(); after != before {
			t.Errorf("%s too long: the metadata log went from %d to %d", tc.field, before, after)
		}
	}
}

// TestHostRefusesAnotherLayout: a node's directory fixes its cluster's
// layout; a restart asking for another shard count, or from a directory of
// a cluster of one group, is refused.
func TestHostRefusesAnotherLayout(t *testing.T) {
	c := newTestHosts(t, 1, 2)
	c.kill("n1")
	cfg := c.config("n1", true)
	cfg.Shards = 3
	if _, err := OpenHost(cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("another shard count: %v", err)
	}
	one := t.TempDir()
	if err := os.MkdirAll(filepath.Join(one, "raft"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = c.config("n1", true)
	cfg.Dir = one
	if _, err := OpenHost(cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("a one-group directory: %v", err)
	}
}

// TestHostKeepsOneNodeLog: a sharded node keeps the Raft logs of its
// metadata group and of every shard in one node log, each group in its own
// buckets, and no raft.db per group; a directory of the earlier layout
// (a raft.db per group) is refused, naming the file.
func TestHostKeepsOneNodeLog(t *testing.T) {
	c := newTestHosts(t, 1, 2)
	c.awaitDesiredLeaders()
	dir := c.dirs["n1"]
	h := c.live()["n1"]
	for g := uint32(0); g <= 2; g++ {
		last, err := h.log.group(g).LastIndex()
		if err != nil || last == 0 {
			t.Fatalf("group %d's log in the node log: last index %d, %v", g, last, err)
		}
	}
	c.kill("n1")
	if _, err := os.Stat(filepath.Join(dir, nodeLogDir, nodeLogSegments)); err != nil {
		t.Fatalf("the node log: %v", err)
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "*", "*", "raft", "raft.db")); len(old) > 0 {
		t.Fatalf("per-group logs beside the node log: %v", old)
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "meta", "raft", "raft.db")); len(old) > 0 {
		t.Fatalf("a per-group log beside the node log: %v", old)
	}
	c.start("n1", false)
	c.awaitDesiredLeaders()
	c.kill("n1")

	for _, old := range []string{filepath.Join("meta", "raft", "raft.db"), filepath.Join("shards", "0001", "raft", "raft.db")} {
		phase1 := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(phase1, old)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(phase1, old), []byte("bolt"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := c.config("n1", true)
		cfg.Dir = phase1
		_, err := OpenHost(cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), filepath.Join(phase1, old)) || !strings.Contains(err.Error(), "layout changed") {
			t.Fatalf("a directory with %s: %v", old, err)
		}
	}
}
