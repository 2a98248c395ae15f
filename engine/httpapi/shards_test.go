package httpapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/loopback"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/storage"
)

// shardedCluster is an in-process sharded cluster: raftfsm hosts, each
// serving the HTTP API through a ShardRouter, as "heddle server --shards"
// runs them. Each node counts the requests it forwarded.
type shardedCluster struct {
	t      *testing.T
	shards int
	peers  []raftfsm.PlacementNode
	dirs   map[string]string
	lns    map[string]net.Listener // the HTTP listeners, kept across restarts

	mu        sync.Mutex
	hosts     map[string]*raftfsm.Host
	stops     map[string]func()
	forwarded map[string]*atomic.Int64
}

func newShardedCluster(t *testing.T, nodes, shards int) *shardedCluster {
	t.Helper()
	c := &shardedCluster{t: t, shards: shards, dirs: map[string]string{}, lns: map[string]net.Listener{},
		hosts: map[string]*raftfsm.Host{}, stops: map[string]func(){}, forwarded: map[string]*atomic.Int64{}}
	root := t.TempDir()
	t.Cleanup(c.closeAll)
	for i := 1; i <= nodes; i++ {
		id := fmt.Sprintf("n%d", i)
		raftAddr, err := loopback.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		httpAddr, err := loopback.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		c.peers = append(c.peers, raftfsm.PlacementNode{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr})
		c.dirs[id] = filepath.Join(root, id)
		c.forwarded[id] = new(atomic.Int64)
	}
	for _, p := range c.peers {
		c.start(p.ID)
	}
	return c
}

// start opens node id (from its directory once it has one) and serves its
// API.
func (c *shardedCluster) start(id string) {
	c.t.Helper()
	var self raftfsm.PlacementNode
	for _, p := range c.peers {
		if p.ID == id {
			self = p
		}
	}
	h, err := raftfsm.OpenHost(raftfsm.HostConfig{Config: raftfsm.Config{ID: id, Dir: c.dirs[id], RaftAddr: self.RaftAddr,
		HTTPAddr: self.HTTPAddr, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond, FailoverGrace: time.Second,
		Storage: storage.Options{MemTableBytes: 4 << 20, BlockCacheBytes: 4 << 20}},
		Peers: c.peers, Shards: c.shards,
		// Deliveries to another node go over its HTTP API, as heddle
		// server sends them.
		DeliverTo: func(ctx context.Context, _, httpAddr string, d *engine.Deliver) (*engine.DeliverResult, error) {
			return httpapi.NodeSender{}.Deliver(ctx, httpAddr, d)
		}})
	if err != nil {
		c.t.Fatalf("open %s: %v", id, err)
	}
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: httpapi.NewShardRouter(h), Cluster: h})
	if err != nil {
		c.t.Fatal(err)
	}
	fwd := c.forwarded[id]
	srv := api.HTTPServerFor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r)
		if w.Header().Get("X-Heddle-Forwarded-By") != "" {
			fwd.Add(1)
		}
	}))
	ln, err := net.Listen("tcp", self.HTTPAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	c.mu.Lock()
	c.hosts[id] = h
	c.stops[id] = func() {
		api.Close()
		_ = srv.Close()
		if err := h.Close(); err != nil {
			c.t.Errorf("closing %s: %v", id, err)
		}
	}
	c.mu.Unlock()
}

func (c *shardedCluster) live() map[string]*raftfsm.Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*raftfsm.Host{}
	for id, h := range c.hosts {
		out[id] = h
	}
	return out
}

// kill stops node id: its API and every group it runs.
func (c *shardedCluster) kill(id string) {
	c.mu.Lock()
	stop := c.stops[id]
	delete(c.hosts, id)
	delete(c.stops, id)
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (c *shardedCluster) closeAll() {
	for id := range c.live() {
		c.kill(id)
	}
}

func (c *shardedCluster) httpOf(id string) string {
	for _, p := range c.peers {
		if p.ID == id {
			return p.HTTPAddr
		}
	}
	return ""
}

// client returns a Client of the nodes named (all when none).
func (c *shardedCluster) client(ids ...string) *httpapi.Client {
	c.t.Helper()
	if len(ids) == 0 {
		for _, p := range c.peers {
			ids = append(ids, p.ID)
		}
	}
	var addrs []string
	for _, id := range ids {
		addrs = append(addrs, c.httpOf(id))
	}
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs, RetryTimeout: 30 * time.Second, PollWait: 2 * time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// await waits until cond holds, looking again at every commit, leader
// change or placement change of a live node (events, not a timer); the
// bound only catches a stuck cluster.
func (c *shardedCluster) await(what string, cond func() bool) {
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
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// leaderOf returns the node leading shard k, as a live replica that leads
// it says, or "".
func (c *shardedCluster) leaderOf(k int) string {
	for id, h := range c.live() {
		if h.LeadsShard(k) {
			return id
		}
	}
	return ""
}

// awaitLeaders waits until each shard is led by the node want names.
func (c *shardedCluster) awaitLeaders(want func(k int) string) {
	c.t.Helper()
	c.await("the shards' leaders", func() bool {
		for k := range c.shards {
			if got := c.leaderOf(k); got == "" || got != want(k) {
				return false
			}
		}
		return c.ready()
	})
}

// ready reports whether every live node is ready (a metadata leader known,
// every shard caught up).
func (c *shardedCluster) ready() bool {
	for _, h := range c.live() {
		if h.Ready(context.Background()) != nil {
			return false
		}
	}
	return true
}

func (c *shardedCluster) desired(k int) string {
	for _, h := range c.live() {
		return h.Placement().Groups[k].Leader
	}
	return ""
}

// verify waits until every replica of every shard applied its leader's
// index, then runs VerifyShard on each.
func (c *shardedCluster) verify() {
	c.t.Helper()
	for k := range c.shards {
		var leader *raftfsm.Node
		c.await(fmt.Sprintf("shard %d's leader", k), func() bool {
			id := c.leaderOf(k)
			if id == "" {
				return false
			}
			leader = c.live()[id].Shard(k)
			return true
		})
		// A barrier entry commits everything before it on the followers
		// too: hashicorp/raft's pipelined replication tells a follower the
		// leader's commit index only with a later entry.
		if err := leader.Raft().Barrier(10 * time.Second).Error(); err != nil {
			c.t.Fatalf("barrier of shard %d: %v", k, err)
		}
		target := leader.FSM().Applied()
		c.await(fmt.Sprintf("every replica of shard %d applied %d", k, target), func() bool {
			for _, h := range c.live() {
				if n := h.Shard(k); n != nil && n.FSM().Applied() < target {
					// The barrier may have gone to this follower before
					// the leader knew the entries under it committed:
					// another one, sent after, tells it, and its apply
					// wakes the wait.
					_ = leader.Raft().Barrier(10 * time.Second).Error()
					return false
				}
			}
			return true
		})
		for id, h := range c.live() {
			n := h.Shard(k)
			if n == nil {
				continue
			}
			err := n.FSM().View(func(r *storage.Reader) error {
				for _, err := range machine.VerifyShard(r, 5, engine.ShardLayout{Index: k, Count: c.shards}) {
					c.t.Errorf("shard %d on %s: %v", k, id, err)
				}
				return nil
			})
			if err != nil {
				c.t.Fatal(err)
			}
		}
	}
}

// wfOn returns a workflow id of shard k.
func wfOn(prefix string, k, count int) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s%d", prefix, i); engine.ShardOfKey(id, count) == k {
			return id
		}
	}
}

// TestShardedClusterRoutesFromAnyNode: on a 3-node cluster of 4 shards,
// whose leaders the placement spreads, a start sent to any node lands on
// the shard of its workflow id, in a run whose id carries that shard, and
// is applied by that shard's leader; reads by id and by workflow id work
// from every node; a child on another shard than its parent's is refused
// with cross_shard, and one beside its parent works; a list pages over
// every shard.
func TestShardedClusterRoutesFromAnyNode(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	var runs []engine.JobID
	for k := range shards {
		for _, at := range []string{"n1", "n2", "n3"} {
			wf := wfOn(fmt.Sprintf("via-%s-", at), k, shards)
			cl := c.client(at)
			res, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: "t", Queue: "q"})
			if err != nil {
				t.Fatalf("start %s through %s: %v", wf, at, err)
			}
			if engine.ShardOfJob(res.Job) != k {
				t.Fatalf("%s landed in job %d, of shard %d, not %d", wf, res.Job, engine.ShardOfJob(res.Job), k)
			}
			runs = append(runs, res.Job)
			leader := c.live()[c.leaderOf(k)].Shard(k)
			if _, err := leader.Engine().Describe(ctx, engine.Target{Job: res.Job}); err != nil {
				t.Fatalf("shard %d's leader does not hold %s: %v", k, wf, err)
			}
			for _, reader := range []string{"n1", "n2", "n3"} {
				j, err := c.client(reader).Describe(ctx, engine.Target{WorkflowID: wf})
				if err != nil || j.ID != res.Job {
					t.Fatalf("describe %s through %s: %+v, %v", wf, reader, j, err)
				}
				h, err := c.client(reader).History(ctx, res.Job, 0, 10)
				if err != nil || len(h.Events) == 0 {
					t.Fatalf("history of %d through %s: %v", res.Job, reader, err)
				}
			}
		}
	}
	// Requests sent to a node that does not lead the shard were forwarded.
	if c.forwarded["n2"].Load() == 0 {
		t.Fatal("n2 forwarded nothing, though it leads one shard of four")
	}

	// A run without a workflow id is named after its job, which routes back.
	res, err := c.client("n3").Create(ctx, engine.CreateJob{Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := c.client("n1").Describe(ctx, engine.Target{WorkflowID: res.WorkflowID}); err != nil || j.ID != res.Job {
		t.Fatalf("describe %s: %+v, %v", res.WorkflowID, j, err)
	}
	runs = append(runs, res.Job)

	// A child on another shard than its parent's is created there through
	// the parent shard's outbox (phase 1 refused it); beside it, it works
	// as it always did.
	cl := c.client()
	parentWF := "order-{" + wfOn("p", 2, shards) + "}"
	parent, err := cl.Create(ctx, engine.CreateJob{WorkflowID: parentWF, Type: "p", Queue: "parents"})
	if err != nil {
		t.Fatal(err)
	}
	runs = append(runs, parent.Job)
	claimed, err := cl.ClaimWait(ctx, engine.Claim{Queue: "parents", Owner: "w", Max: 1, LeaseMS: 60_000})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claiming the parent: %v, %v", claimed, err)
	}
	lease := claimed[0].Lease()
	remote, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("child-", 1, shards), Type: "c", Queue: "q",
		ParentID: parent.Job, ParentStep: "a1", ParentLease: &lease})
	if err != nil || engine.ShardOfJob(remote.Job) != 1 || remote.Delivery != nil {
		t.Fatalf("a child on shard 1 of a parent on shard 2: %+v, %v", remote, err)
	}
	runs = append(runs, remote.Job)
	// Its entry was acknowledged before the create answered: the leader of
	// the parent's shard (n3) holds nothing pending; a follower's replica
	// may still show the entry, marked stale, until it applies the
	// acknowledgement.
	if rep, err := c.client("n3").DeliveryBacklog(ctx); err != nil || len(rep.Unread) != 0 {
		t.Fatalf("the deliveries pending after the create: %+v, %v", rep, err)
	} else {
		for _, b := range rep.Backlog {
			if !b.Stale {
				t.Fatalf("the leader of shard %d still holds %d entries for shard %d after the create answered", b.Source, b.Pending, b.Target)
			}
		}
	}
	child, err := cl.Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("%s/%d/a2", parentWF, parent.Job), Type: "c", Queue: "q",
		ParentID: parent.Job, ParentStep: "a2", ParentLease: &lease})
	if err != nil || engine.ShardOfJob(child.Job) != 2 {
		t.Fatalf("a child beside its parent: %+v, %v", child, err)
	}
	runs = append(runs, child.Job)

	// With the After cursor the list pages through every shard in id
	// order, shard 0 first.
	slices.Sort(runs)
	var listed []engine.JobID
	for after := runs[0]; after != 0; {
		page, err := c.client("n2").List(ctx, engine.ListQuery{After: after, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			listed = append(listed, j.ID)
		}
		after = page.Next
	}
	if !slices.Equal(listed, runs[1:]) {
		t.Fatalf("listed after %d: %v, want %v", runs[0], listed, runs[1:])
	}

	// By page tokens the shards' runs are merged in the query's order:
	// newest first by default (start time, then id), oldest first, and by
	// closing time; a token back returns the page before; the count is
	// every shard's.
	byID := map[engine.JobID]*engine.Job{}
	for _, id := range runs {
		j, err := c.client("n1").Describe(ctx, engine.Target{Job: id})
		if err != nil {
			t.Fatal(err)
		}
		byID[id] = j
	}
	for _, order := range []engine.ListOrder{engine.ListOrderDefault, engine.ListStartAsc, engine.ListCloseDesc} {
		want := slices.Clone(runs)
		cmpOrder := order
		if cmpOrder == engine.ListOrderDefault {
			cmpOrder = engine.ListStartDesc
		}
		slices.SortFunc(want, func(a, b engine.JobID) int { return refOrder(cmpOrder, byID[a], byID[b]) })
		listed = nil
		var pages []*engine.ListPage
		var token string
		for range len(runs) + 1 {
			page, err := c.client("n3").List(ctx, engine.ListQuery{PageToken: token, Limit: 2, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, page)
			for _, j := range page.Jobs {
				listed = append(listed, j.ID)
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		if !slices.Equal(listed, want) {
			t.Fatalf("listed in order %v by tokens %v, want %v", order, listed, want)
		}
		if pages[1].PrevPageToken == "" {
			t.Fatalf("order %v: the second page (%+v) has no way back", order, pages[1])
		}
		back, err := c.client("n1").List(ctx, engine.ListQuery{PageToken: pages[1].PrevPageToken, Limit: 2, Order: order})
		if err != nil || !slices.Equal(jobIDs(back.Jobs), jobIDs(pages[0].Jobs)) {
			t.Fatalf("order %v: back from the second page: %+v, %v; want the first page %v", order, back, err, jobIDs(pages[0].Jobs))
		}
	}
	for _, bad := range []string{"9.", "x.", "0~", "01.", strings.Repeat("0", 200)} {
		if _, err := c.client("n1").List(ctx, engine.ListQuery{PageToken: bad}); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("page token %q: %v, want ErrInvalidCommand", bad, err)
		}
	}
	n, err := c.client("n2").Count(ctx, engine.ListQuery{})
	if err != nil || n.Count != uint64(len(runs)) {
		t.Fatalf("count: %+v, %v; want %d", n, err, len(runs))
	}
	one, err := c.client("n1").List(ctx, engine.ListQuery{WorkflowID: parentWF})
	if err != nil || len(one.Jobs) != 1 || one.Jobs[0].ID != parent.Job {
		t.Fatalf("the runs of %s: %+v, %v", parentWF, one, err)
	}
	c.verify()
}

// TestClientRoutesByTheShardMap: a client that knows one node learns the
// shard map from the placement header and sends each command to its
// shard's leader, so no node forwards anything; when a shard's leader
// moves, the next command sent by the stale map is forwarded, the client
// fetches the map again, and the one after goes straight to the new
// leader.
func TestClientRoutesByTheShardMap(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	cl := c.client("n1")
	if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: "first", Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	forwards := func() int64 {
		var n int64
		for _, f := range c.forwarded {
			n += f.Load()
		}
		return n
	}
	before := forwards()
	for k := range shards {
		for i := range 3 {
			if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn(fmt.Sprintf("r%d-", i), k, shards), Type: "t", Queue: "q"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := forwards() - before; n != 0 {
		t.Fatalf("%d commands routed by the map were forwarded", n)
	}

	// Shard 1 moves from n2 to n3: the map is stale.
	if _, err := c.client("n3").SetShardLeader(ctx, 1, "n3"); err != nil {
		t.Fatal(err)
	}
	c.awaitLeaders(func(k int) string {
		if k == 1 {
			return "n3"
		}
		return c.desired(k)
	})
	before = forwards()
	if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("moved-a", 1, shards), Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if n := forwards() - before; n != 1 {
		t.Fatalf("the command sent by the stale map was forwarded %d times, want once", n)
	}
	before = forwards()
	if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("moved-b", 1, shards), Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if n := forwards() - before; n != 0 {
		t.Fatalf("after fetching the map again, a command was forwarded %d times", n)
	}
}

// TestClientRoutesAfterAReplicaMoved: a client's map names n1 as shard 0's
// leader; shard 0's replica then moves off n1 to n4 (through the HTTP API,
// with the runs created before it readable after it). The next command the
// stale map sends to n1, which holds no replica of shard 0 any more, is
// answered correctly through one forward, the client fetches the map
// again, and the command after goes straight to n4.
func TestClientRoutesAfterAReplicaMoved(t *testing.T) {
	const shards = 2
	c := newShardedCluster(t, 4, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	cl := c.client("n2")
	forwards := func() int64 {
		var n int64
		for _, f := range c.forwarded {
			n += f.Load()
		}
		return n
	}
	first, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("before-", 0, shards), Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	before := forwards()
	if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("routed-", 0, shards), Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if n := forwards() - before; n != 0 {
		t.Fatalf("a command routed by a fresh map was forwarded %d times", n)
	}

	if _, err := c.client("n3").MoveReplica(ctx, 0, "n1", "n4"); err != nil {
		t.Fatal(err)
	}
	_, err = c.client("n3").MoveReplica(ctx, 0, "n1", "n4")
	if err != nil {
		t.Fatalf("the same move asked again: %v", err)
	}
	if _, err := c.client("n3").MoveReplica(ctx, 0, "n2", "n9"); !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), "n9") {
		t.Fatalf("a move to a node that does not exist: %v, want an invalid command naming it", err)
	}
	c.await("shard 0's replica moved to n4 and led there", func() bool {
		for _, h := range c.live() {
			if g := h.Placement().Groups[0]; g.Move != nil || g.Moves != 1 {
				return false
			}
		}
		return c.leaderOf(0) == "n4" && c.live()["n1"].Shard(0) == nil && c.ready()
	})
	before = forwards()
	res, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("stale-", 0, shards), Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if engine.ShardOfJob(res.Job) != 0 {
		t.Fatalf("the run got id %d, of shard %d", res.Job, engine.ShardOfJob(res.Job))
	}
	if n := forwards() - before; n != 1 {
		t.Fatalf("the command sent by the stale map was forwarded %d times, want once", n)
	}
	before = forwards()
	if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("fresh-", 0, shards), Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	j, err := cl.Describe(ctx, engine.Target{Job: first.Job})
	if err != nil || j.ID != first.Job {
		t.Fatalf("the run created before the move: %+v, %v", j, err)
	}
	if n := forwards() - before; n != 0 {
		t.Fatalf("after fetching the map again, commands were forwarded %d times", n)
	}
	c.verify()
}

// TestShardedClusterSurvivesANodeWithSeveralLeaders: n1 leads shards 0 and
// 3; it is killed while runs on every shard are claimed and open. The
// other nodes take over its shards, a worker polling every node finishes
// every run (the leases of the runs claimed before the kill ran out and
// were reclaimed), and every shard's replicas pass VerifyShard.
func TestShardedClusterSurvivesANodeWithSeveralLeaders(t *testing.T) {
	const shards, runsPerShard = 4, 3
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := c.client()
	want := map[engine.JobID]bool{}
	for k := range shards {
		for i := range runsPerShard {
			res, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn(fmt.Sprintf("run%d-", i), k, shards), Type: "t", Queue: "q"})
			if err != nil {
				t.Fatal(err)
			}
			want[res.Job] = true
		}
	}
	// Half of the runs are claimed, with short leases, before the kill.
	held, err := cl.Claim(ctx, engine.Claim{Queue: "q", Owner: "doomed", Max: len(want) / 2, LeaseMS: 1000})
	if err != nil || len(held) == 0 {
		t.Fatalf("claim before the kill: %d, %v", len(held), err)
	}
	c.kill("n1")
	c.awaitLeaders(func(k int) string {
		if l := c.leaderOf(k); l != "" && l != "n1" {
			return l
		}
		return "a live node"
	})
	done := map[engine.JobID]bool{}
	for len(done) < len(want) {
		jobs, err := cl.ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "survivor", Max: 4, LeaseMS: 30_000})
		if err != nil {
			t.Fatalf("claim after the kill (%d of %d done): %v", len(done), len(want), err)
		}
		for _, j := range jobs {
			if _, err := cl.Complete(ctx, engine.Complete{LeaseRef: j.Lease()}); err != nil {
				t.Fatalf("complete %d: %v", j.Job, err)
			}
			if done[j.Job] {
				t.Fatalf("job %d completed twice", j.Job)
			}
			done[j.Job] = true
		}
	}
	for id := range want {
		j, err := cl.Describe(ctx, engine.Target{Job: id})
		if err != nil || j.Status != engine.StatusCompleted {
			t.Fatalf("run %d: %+v, %v", id, j, err)
		}
	}
	c.verify()
}

// TestNewClientsFirstLongPollSeesEveryShard: a worker's first request to a
// sharded cluster is often its long poll. Sent to one node as to a cluster
// of one group, it would wait there, blind to the shards the other nodes
// lead, until its wait ran out; the client asks first whether the cluster
// is sharded and polls every node.
func TestNewClientsFirstLongPollSeesEveryShard(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	// Shard 1 is led by n2; the new client prefers n1.
	if _, err := c.client("n2").Create(ctx, engine.CreateJob{WorkflowID: wfOn("far", 1, shards), Type: "t", Queue: "first-poll"}); err != nil {
		t.Fatal(err)
	}
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{c.httpOf("n1"), c.httpOf("n2"), c.httpOf("n3")}, PollWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pollCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	jobs, err := cl.ClaimWait(pollCtx, engine.Claim{Queue: "first-poll", Owner: "w", Max: 1, LeaseMS: 10_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("a new client's first long poll: %v, %v; want the job of shard 1", jobs, err)
	}
}

// TestRecallClaim: POST /v1/jobs/claim?recall=1 answers what the claims
// under a request id took on the node's shards, claiming nothing: the Go
// client asks it of the nodes whose long polls it cut, and gives back what
// such a poll took anyway (docs/sharding.md, "Claims").
func TestRecallClaim(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	for i := range 2 {
		if _, err := c.client("n2").Create(ctx, engine.CreateJob{WorkflowID: wfOn(fmt.Sprintf("recall-%d-", i), 1, shards), Type: "t", Queue: "recall"}); err != nil {
			t.Fatal(err)
		}
	}
	post := func(node, query, body string) (int, engine.ClaimResult) {
		t.Helper()
		resp, err := http.Post("http://"+c.httpOf(node)+"/v1/jobs/claim"+query, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := resp.Body.Close(); err != nil {
				t.Error(err)
			}
		}()
		var r engine.ClaimResult
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, r
	}
	claim := `{"queue":"recall","owner":"w","max":1,"lease_ms":60000,"request_id":"cut-poll-1"}`
	if code, r := post("n2", "?recall=1", claim); code != http.StatusOK || len(r.Jobs) != 0 {
		t.Fatalf("recall before any claim: %d, %+v; want nothing", code, r)
	}
	code, took := post("n2", "", claim)
	if code != http.StatusOK || len(took.Jobs) != 1 {
		t.Fatalf("claim on n2: %d, %+v", code, took)
	}
	code, r := post("n2", "?recall=1", claim)
	if code != http.StatusOK || len(r.Jobs) != 1 || r.Jobs[0].Job != took.Jobs[0].Job || r.Jobs[0].Lease() != took.Jobs[0].Lease() {
		t.Fatalf("recall on n2: %d, %+v; want the job the claim took, %+v", code, r, took)
	}
	// The recall claimed nothing: the other job is still there to claim.
	code, next := post("n2", "", `{"queue":"recall","owner":"w","max":5,"lease_ms":60000}`)
	if code != http.StatusOK || len(next.Jobs) != 1 || next.Jobs[0].Job == took.Jobs[0].Job {
		t.Fatalf("the claim after the recall: %d, %+v; want the other job", code, next)
	}
	if code, _ := post("n2", "?recall=1", `{"queue":"recall","owner":"w","max":1,"lease_ms":60000}`); code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		t.Fatalf("recall without a request id: %d, want it refused", code)
	}
}

func jobIDs(jobs []*engine.Job) []engine.JobID {
	out := make([]engine.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// refOrder is the order a merged list must have, written out: by start
// time and then id; in a closing-time order the ended runs first, by
// closing time and then id, then the open ones by start time and id;
// descending orders reverse each key but keep the open runs last.
func refOrder(order engine.ListOrder, a, b *engine.Job) int {
	desc := order == engine.ListStartDesc || order == engine.ListCloseDesc
	keys := func(j *engine.Job) (group int, at int64) {
		if order == engine.ListCloseDesc || order == engine.ListCloseAsc {
			if j.Status.Terminal() {
				return 0, j.ClosedMS
			}
			return 1, j.CreatedMS
		}
		return 0, j.CreatedMS
	}
	ga, ta := keys(a)
	gb, tb := keys(b)
	if ga != gb {
		return ga - gb
	}
	c := cmp.Or(cmp.Compare(ta, tb), cmp.Compare(a.ID, b.ID))
	if desc {
		return -c
	}
	return c
}

// TestShardedTaskQueueView: on a 3-node cluster of 4 shards, a task
// queue's backlog is the sum of every shard's, whichever node is asked;
// a worker's long poll, which reaches every node, shows as one poller
// seen by all three; the queue list names the queue with its backlog; a
// claim lowers the backlog and counts in the dispatch rate; and a queued
// run's reason is given. (Before, a sharded node served no task queue
// route.)
func TestShardedTaskQueueView(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	cl := c.client()
	var created []engine.JobID
	for k := range shards {
		for i := range 2 {
			res, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn(fmt.Sprintf("tq-%d-", i), k, shards), Type: "T", Queue: "tq"})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, res.Job)
		}
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		d, err := c.client(n).DescribeTaskQueue(ctx, "tq")
		if err != nil {
			t.Fatalf("describe from %s: %v", n, err)
		}
		if d.Stats.BacklogCount != 2*shards {
			t.Fatalf("describe from %s: backlog %d, want %d (every shard's)", n, d.Stats.BacklogCount, 2*shards)
		}
	}
	l, err := c.client("n2").ListTaskQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(l.Queues, func(d engine.TaskQueueDescription) bool { return d.Name == "tq" }); i < 0 || l.Queues[i].Stats.BacklogCount != 2*shards {
		t.Fatalf("the list %+v does not name tq with its backlog %d", l.Queues, 2*shards)
	}

	// A worker long-polls another queue; every node records its poll.
	pollCtx, stopPoll := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cl.ClaimWait(pollCtx, engine.Claim{Queue: "idle-q", Owner: "poller-1", Max: 1, LeaseMS: 30_000})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := c.client("n3").DescribeTaskQueue(ctx, "idle-q")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Pollers) == 1 && d.Pollers[0].Identity == "poller-1" && d.Pollers[0].Polling && len(d.Pollers[0].Nodes) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the poller never showed as polling on all three nodes: %+v", d.Pollers)
		}
		time.Sleep(10 * time.Millisecond) // a poll's record is no event a test can wait on
	}
	stopPoll()
	<-done

	claimed, err := cl.Claim(ctx, engine.Claim{Queue: "tq", Owner: "w", Max: 3, LeaseMS: 20_000})
	if err != nil || len(claimed) == 0 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	// What the claim's polls of other nodes took is given back (the
	// client's fan-out), so the backlog settles at what this claim holds.
	want := int64(2*shards - len(claimed))
	var d *engine.TaskQueueDescription
	c.await(fmt.Sprintf("a backlog of %d after claiming %d", want, len(claimed)), func() bool {
		d, err = c.client("n1").DescribeTaskQueue(ctx, "tq")
		return err == nil && d.Stats.BacklogCount == want
	})
	if d.Stats.DispatchRate <= 0 {
		t.Fatalf("after claiming %d: dispatch rate %v, want above 0", len(claimed), d.Stats.DispatchRate)
	}
	// The backlog above may be read at replicas that have not applied a
	// claim of a cut poll, which the client then gives back; a claim its
	// node applied after the client's recall is left to its lease (20 s
	// here, docs/sharding.md, "Claims"). Any job this claim did not take
	// is queued again by then.
	var why *engine.QueuedReason
	var queued engine.JobID
	c.await("a job this claim did not take queued", func() bool {
		for _, id := range created {
			if slices.ContainsFunc(claimed, func(j engine.ClaimedJob) bool { return j.Job == id }) {
				continue
			}
			if why, err = c.client("n2").QueuedReason(ctx, engine.Target{Job: id}); err == nil && why.Queued {
				queued = id
				return true
			}
		}
		return false
	})
	if why.Queue != "tq" || why.Code == "" {
		t.Fatalf("queued reason of %d: %+v", queued, why)
	}
	c.verify()
}

// TestShardedBatch: on a 3-node cluster of 4 shards, a batch that
// terminates the runs a query finds, started through any node, acts on the
// runs of every shard once; it is described and listed as one batch whose
// parts' counts add up. (Before, a sharded node served no batch route.)
func TestShardedBatch(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	cl := c.client()
	var runs []engine.JobID
	for k := range shards {
		for i := range 3 {
			res, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn(fmt.Sprintf("b-%d-", i), k, shards), Type: "Doomed", Queue: "bq"})
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, res.Job)
		}
	}
	keep, err := cl.Create(ctx, engine.CreateJob{WorkflowID: "keeper", Type: "Kept", Queue: "bq"})
	if err != nil {
		t.Fatal(err)
	}
	started, err := c.client("n2").StartBatch(ctx, engine.StartBatch{ID: "doom", BatchSpec: engine.BatchSpec{
		Operation: engine.BatchTerminate, Query: `WorkflowType = "Doomed"`, Reason: "test", RunsPerSecond: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if started.Batch.ID != "doom" || started.Batch.Total != uint64(len(runs)) {
		t.Fatalf("started %+v, want batch doom over %d runs", started.Batch, len(runs))
	}
	var b *engine.Batch
	c.await("the batch completed on every shard", func() bool {
		b, err = c.client("n3").DescribeBatch(ctx, "doom")
		return err == nil && b.State == engine.BatchCompleted
	})
	if b.Total != uint64(len(runs)) || b.Done != uint64(len(runs)) || b.Failed != 0 {
		t.Fatalf("batch %+v: want %d runs, all done", b, len(runs))
	}
	for _, id := range runs {
		j, err := cl.Describe(ctx, engine.Target{Job: id})
		if err != nil || j.Status != engine.StatusTerminated {
			t.Fatalf("run %d: %+v, %v; want terminated", id, j, err)
		}
	}
	if j, err := cl.Describe(ctx, engine.Target{Job: keep.Job}); err != nil || j.Status.Terminal() {
		t.Fatalf("the run the query does not match: %+v, %v; want it open", j, err)
	}
	page, err := c.client("n1").ListBatches(ctx, engine.BatchListQuery{})
	if err != nil || len(page.Batches) != 1 || page.Batches[0].ID != "doom" || page.Batches[0].Done != uint64(len(runs)) {
		t.Fatalf("list: %+v, %v; want batch doom once, its parts joined", page, err)
	}
	c.verify()
}

// TestShardedBatchListRefusesANegativeLimit: a sharded cluster refuses
// GET /v1/batches?limit=-1 as a cluster of one group does, instead of
// reading it as the default.
func TestShardedBatchListRefusesANegativeLimit(t *testing.T) {
	c := newShardedCluster(t, 1, 2)
	c.awaitLeaders(c.desired)
	for _, limit := range []string{"-1", "1001"} {
		resp, err := http.Get("http://" + c.httpOf("n1") + "/v1/batches?limit=" + limit)
		if err != nil {
			t.Fatal(err)
		}
		var eb httpapi.ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&eb)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || !strings.Contains(eb.Message, "batch list limit "+limit) {
			t.Errorf("GET /v1/batches?limit=%s: %d %+v (%v); want 400 naming the limit", limit, resp.StatusCode, eb, err)
		}
	}
}

// TestDeliverToAShardOutOfRange: a delivery naming a target shard the
// cluster does not have is refused as invalid, naming Deliver.Target, as
// one naming such a source is; it was answered 404 unknown_job, of no job.
func TestDeliverToAShardOutOfRange(t *testing.T) {
	c := newShardedCluster(t, 1, 2)
	c.awaitLeaders(c.desired)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := &engine.Deliver{DeliveryRef: engine.DeliveryRef{Source: 0, Target: 5, Seq: 1}, Command: []byte{1}}
	_, err := (httpapi.NodeSender{}).Deliver(ctx, c.httpOf("n1"), d)
	if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(fmt.Sprint(err), "Deliver.Target") {
		t.Fatalf("a delivery to shard 5 of 2: %v; want ErrInvalidCommand naming Deliver.Target", err)
	}
}

// GET /v1/schedules of a sharded cluster with no schedule answers an empty
// list, [], as a cluster of one group and every other list do, not null.
func TestShardedEmptyScheduleListIsAnEmptyArray(t *testing.T) {
	c := newShardedCluster(t, 3, 2)
	c.awaitLeaders(c.desired)
	resp, err := http.Get("http://" + c.httpOf("n1") + "/v1/schedules")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"schedules":[]`) {
		t.Fatalf("GET /v1/schedules: %d %s; want 200 with \"schedules\":[]", resp.StatusCode, body)
	}
}

// TestShardedBatchOfSomeShards: a batch whose start reached some shards
// only (one that failed part-way, or one an administrator started on one
// shard with ?shard=k) is described and stopped by the parts it has, as it
// is listed; describing or stopping it answered 404 unknown_batch while the
// list showed it running. A batch no shard knows is still unknown.
func TestShardedBatchOfSomeShards(t *testing.T) {
	const shards = 2
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	cl := c.client()
	for i := range 10 {
		if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn(fmt.Sprintf("slow-%d-", i), 0, shards), Type: "Slow", Queue: "bq"}); err != nil {
			t.Fatal(err)
		}
	}
	// One run a second over ten runs: the part runs for seconds.
	body := `{"batch_id":"one-shard","operation":"terminate","query":"WorkflowType = \"Slow\"","reason":"test","rps":1}`
	resp, err := http.Post("http://"+c.httpOf(c.leaderOf(0))+"/v1/batches?shard=0", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("starting the batch on shard 0: %d", resp.StatusCode)
	}
	b, err := c.client("n3").DescribeBatch(ctx, "one-shard")
	if err != nil || b.ID != "one-shard" || b.Total != 10 {
		t.Fatalf("describe: %+v, %v; want the batch of shard 0's part, over 10 runs", b, err)
	}
	stopped, err := c.client("n2").StopBatch(ctx, engine.StopBatch{ID: "one-shard", Reason: "enough"})
	if err != nil || stopped.Batch.ID != "one-shard" {
		t.Fatalf("stop: %+v, %v; want shard 0's part stopped", stopped, err)
	}
	c.await("the stopped part ended", func() bool {
		b, err = c.client("n1").DescribeBatch(ctx, "one-shard")
		return err == nil && b.State == engine.BatchTerminated
	})
	if _, err := cl.DescribeBatch(ctx, "no-such-batch"); !errors.Is(err, engine.ErrUnknownBatch) {
		t.Fatalf("describing a batch no shard knows: %v; want ErrUnknownBatch", err)
	}
	if _, err := cl.StopBatch(ctx, engine.StopBatch{ID: "no-such-batch"}); !errors.Is(err, engine.ErrUnknownBatch) {
		t.Fatalf("stopping a batch no shard knows: %v; want ErrUnknownBatch", err)
	}
}
