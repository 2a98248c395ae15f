package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	// The list pages through every shard, in id order.
	slices.Sort(runs)
	var listed []engine.JobID
	var after engine.JobID
	for {
		q := engine.ListQuery{After: after, Limit: 4}
		if after == 0 {
			q.Order = engine.ListStartAsc // the first page; After sets the order of the next
		}
		page, err := c.client("n2").List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			listed = append(listed, j.ID)
		}
		if page.Next == 0 {
			break
		}
		after = page.Next
	}
	if !slices.Equal(listed, runs) {
		t.Fatalf("listed %v, want %v", listed, runs)
	}

	// Newest first (the default order), by page tokens: shard by shard,
	// each shard's runs newest first; a token back returns the page before
	// within a shard; the count is every shard's.
	var want []engine.JobID
	for k := range shards {
		var of []engine.JobID
		for _, id := range runs {
			if engine.ShardOfJob(id) == k {
				of = append(of, id)
			}
		}
		slices.Reverse(of)
		want = append(want, of...)
	}
	listed = nil
	var pages []*engine.ListPage
	var token string
	for range len(runs) + shards + 1 {
		page, err := c.client("n3").List(ctx, engine.ListQuery{PageToken: token, Limit: 2})
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
		t.Fatalf("listed newest first by tokens %v, want %v", listed, want)
	}
	if pages[1].PrevPageToken == "" || engine.ShardOfJob(pages[1].Jobs[0].ID) != engine.ShardOfJob(pages[0].Jobs[1].ID) {
		t.Fatalf("the second page (%+v) has no way back within the shard of the first", pages[1])
	}
	back, err := c.client("n1").List(ctx, engine.ListQuery{PageToken: pages[1].PrevPageToken, Limit: 2})
	if err != nil || len(back.Jobs) != 2 || back.Jobs[0].ID != pages[0].Jobs[0].ID || back.Jobs[1].ID != pages[0].Jobs[1].ID {
		t.Fatalf("back from the second page: %+v, %v; want the first page %v", back, err, listed[:2])
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
