package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	lb "github.com/heddlewf/heddle/internal/loopback"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// shardedTestCluster is a sharded cluster of three nodes started in this
// process through startNode, as "heddle server --shards --peers" does.
// nodes[i] is nil while node i is down.
type shardedTestCluster struct {
	t      *testing.T
	root   string
	shards int
	peers  []raftfsm.PlacementNode
	nodes  []*clusterNode
}

// startShardedTestCluster starts three nodes of a cluster of shards shards
// and returns them with their HTTP addresses, comma-separated.
func startShardedTestCluster(t *testing.T, shards int) ([]*clusterNode, string) {
	c := newShardedTestCluster(t, shards)
	return c.nodes, c.addrs()
}

func newShardedTestCluster(t *testing.T, shards int) *shardedTestCluster {
	t.Helper()
	c := &shardedTestCluster{t: t, root: t.TempDir(), shards: shards}
	for i := 1; i <= 3; i++ {
		raftAddr, err := lb.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		httpAddr, err := lb.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		c.peers = append(c.peers, raftfsm.PlacementNode{ID: fmt.Sprintf("n%d", i), RaftAddr: raftAddr, HTTPAddr: httpAddr})
	}
	c.nodes = make([]*clusterNode, len(c.peers))
	t.Cleanup(func() {
		for i := len(c.nodes) - 1; i >= 0; i-- {
			c.kill(i)
		}
	})
	for i := range c.peers {
		c.start(i, true)
	}
	return c
}

// start starts node i: a new node with the cluster's peers and shards, or,
// without them, a restart from its directory alone (as "heddle server
// --id --dir" restarts a node of a sharded cluster).
func (c *shardedTestCluster) start(i int, withPeers bool) {
	c.t.Helper()
	p := c.peers[i]
	o := nodeOptions{id: p.ID, dir: filepath.Join(c.root, p.ID), httpAddr: p.HTTPAddr, raftAddr: p.RaftAddr, grace: time.Second}
	if withPeers {
		o.shards, o.peers = c.shards, c.peers
	}
	n, err := startNode(context.Background(), o)
	if err != nil {
		c.t.Fatalf("start %s: %v", p.ID, err)
	}
	c.nodes[i] = n
}

// kill stops node i, as far as the other nodes can tell a crash: its Raft
// groups stop answering without handing any leadership over.
func (c *shardedTestCluster) kill(i int) {
	c.t.Helper()
	if n := c.nodes[i]; n != nil {
		c.nodes[i] = nil
		if err := n.close(); err != nil {
			c.t.Errorf("close %s: %v", c.peers[i].ID, err)
		}
	}
}

// live returns the nodes that run.
func (c *shardedTestCluster) live() []*clusterNode {
	var out []*clusterNode
	for _, n := range c.nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// addrs returns the HTTP addresses of the nodes that run, comma-separated.
func (c *shardedTestCluster) addrs() string {
	var out []string
	for _, n := range c.live() {
		out = append(out, n.api.addr())
	}
	return strings.Join(out, ",")
}

// awaitHosts waits until cond holds, looking again at every commit, leader
// change or placement change of the nodes (events, not a timer).
func awaitHosts(t *testing.T, nodes []*clusterNode, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)}}
		for _, n := range nodes {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.host.ShardsChanged())},
				reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.host.LeaderChanged())})
		}
		if cond() {
			return
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// shardLeaders returns each shard's leader by the nodes that lead ("" for
// a shard nobody leads now).
func shardLeaders(nodes []*clusterNode, shards int) []string {
	out := make([]string, shards)
	for _, n := range nodes {
		for k := range shards {
			if n.host.LeadsShard(k) {
				out[k] = n.host.ID()
			}
		}
	}
	return out
}

// CrossShardParent starts a child whose workflow id it is given.
func CrossShardParent(ctx workflow.Context, childID string) (string, error) {
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: childID})
	var got string
	err := workflow.ExecuteChildWorkflow(ctx, Greet, "child").Get(ctx, &got)
	return got, err
}

// TestShardedClusterCommands: "cluster status" shows every shard of a
// cluster of four with its leader, the leader the placement wants, its
// replicas and their lag; workflows started through any node run on a
// remote worker whatever their shard; "cluster shard-leader" moves a
// shard's leadership and "cluster rebalance" moves it back; and a child
// workflow whose id hashes to another shard than its parent's fails with
// a CrossShard error the workflow sees, while one beside its parent runs.
func TestShardedClusterCommands(t *testing.T) {
	const shards = 4
	nodes, addrs := startShardedTestCluster(t, shards)
	want := []string{"n1", "n2", "n3", "n1"}
	awaitHosts(t, nodes, "the spread leaders", func() bool {
		if !reflect.DeepEqual(shardLeaders(nodes, shards), want) {
			return false
		}
		for _, n := range nodes {
			if n.host.Ready(context.Background()) != nil {
				return false
			}
		}
		return true
	})
	out, errOut, code := runCmd(t, "cluster", "status", "--addr", addrs, "-o", "json")
	if code != 0 {
		t.Fatalf("cluster status: exit %d: %s", code, errOut)
	}
	var views []clusterView
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.Status == nil || !v.Ready || v.Status.ShardCount != shards || len(v.Status.Shards) != shards {
			t.Fatalf("%s: %+v, ready %v; want %d shards, ready", v.Addr, v.Status, v.Ready, shards)
		}
	}
	out, _, _ = runCmd(t, "cluster", "status", "--addr", addrs)
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 8 && f[0] != "SHARD" && len(f[0]) == 1 {
			rows[f[0]] = f
		}
	}
	for k, l := range want {
		f := rows[fmt.Sprint(k)]
		if f == nil || f[1] != l || f[2] != l || !strings.HasPrefix(f[5], l+":") {
			t.Fatalf("cluster status does not show shard %d led by %s as desired, with its replicas and their lag:\n%s", k, l, out)
		}
	}

	// One address shows the whole cluster: the members it lists are asked
	// too, and together they show every shard; --named-only asks it alone.
	first := strings.Split(addrs, ",")[0]
	out, errOut, code = runCmd(t, "cluster", "status", "--addr", first, "-o", "json")
	if code != 0 {
		t.Fatalf("cluster status --addr %s: exit %d: %s", first, code, errOut)
	}
	views = nil
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i, v := range views {
		if v.Status == nil || v.Discovered != (i > 0) {
			t.Fatalf("cluster status --addr %s: view %d is %+v; want the named member first, then the discovered ones", first, i, v)
		}
		ids[v.Status.ID] = true
	}
	if len(views) != len(nodes) || len(ids) != len(nodes) {
		t.Fatalf("cluster status --addr %s showed members %v; want all %d", first, ids, len(nodes))
	}
	out, _, _ = runCmd(t, "cluster", "status", "--addr", first)
	for k := range shards {
		if !regexp.MustCompile(`(?m)^` + fmt.Sprint(k) + `\s+n\d`).MatchString(out) {
			t.Fatalf("cluster status --addr %s does not show shard %d:\n%s", first, k, out)
		}
	}
	out, errOut, code = runCmd(t, "cluster", "status", "--addr", first, "--named-only", "-o", "json")
	views = nil
	if err := json.Unmarshal([]byte(out), &views); code != 0 || err != nil || len(views) != 1 {
		t.Fatalf("cluster status --named-only: exit %d (%s), %d views (%v); want the named member alone", code, errOut, len(views), err)
	}

	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: strings.Split(addrs, ",")})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(client.New(svc), "greetings", worker.Options{})
	w.RegisterWorkflow(Greet)
	w.RegisterWorkflow(CrossShardParent)
	w.RegisterActivity(LookupTitle)
	w.RegisterActivity(ComposeGreeting)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Shutdown(context.Background()); err != nil {
			t.Errorf("stop the worker: %v", err)
		}
	}()
	seen := map[int]bool{}
	for i := 0; len(seen) < shards; i++ {
		id := fmt.Sprintf("greet-%d", i)
		k := engine.ShardOfKey(id, shards)
		if seen[k] {
			continue
		}
		seen[k] = true
		out, errOut, code := runCmd(t, "workflow", "start", "--addr", nodes[i%3].api.addr(), "--type", "Greet", "--queue", "greetings",
			"--id", id, "--input", `"ada"`, "--wait")
		if code != 0 || !strings.Contains(out, `"hello, friend ada"`) {
			t.Fatalf("workflow %s (shard %d): exit %d\n%s%s", id, k, code, out, errOut)
		}
	}

	// Each node's metrics carry every shard it holds under its own label,
	// and its HTTP requests without one.
	fs, err := metricstest.Scrape(http.DefaultClient, "http://"+nodes[0].api.addr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	labelled := fs.LabelValues(metrics.EngineCommands, "shard")
	slices.Sort(labelled)
	if labelled = slices.Compact(labelled); !reflect.DeepEqual(labelled, []string{"0", "1", "2", "3"}) {
		t.Fatalf("heddle_engine_commands_total has shards %v, want 0 to 3", labelled)
	}
	if fs.Series(metrics.RaftIsLeader, "shard", "0") != 1 || fs.Value(metrics.HTTPRequests) == 0 || len(fs.LabelValues(metrics.HTTPRequests, "shard")) != 0 {
		t.Fatal("the exposition lacks shard 0's Raft gauges or the HTTP requests, or gives the requests a shard")
	}

	// A child on another shard runs there, delivered through the parent
	// shard's outbox by the nodes over their APIs (phase 1 failed it with
	// CrossShard); beside its parent (a hash tag), it runs as always.
	c := client.New(svc)
	parentID := "parent-{" + fmt.Sprint(engine.ShardOfKey("a", shards)) + "}"
	other := "elsewhere-0"
	for i := 0; engine.ShardOfKey(other, shards) == engine.ShardOfKey(parentID, shards); i++ {
		other = fmt.Sprintf("elsewhere-%d", i)
	}
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: parentID, TaskQueue: "greetings"}, CrossShardParent, other)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(context.Background(), &got); err != nil || got != "hello, friend child" {
		t.Fatalf("a child on another shard: %q, %v", got, err)
	}
	out, errOut, code = runCmd(t, "cluster", "deliveries", "--addr", addrs)
	if code != 0 || !strings.Contains(out, "SOURCE") {
		t.Fatalf("cluster deliveries: exit %d: %s%s", code, out, errOut)
	}
	run, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: parentID + "-2", TaskQueue: "greetings"}, CrossShardParent, parentID+"-child")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(context.Background(), &got); err != nil || got != "hello, friend child" {
		t.Fatalf("a child beside its parent: %q, %v", got, err)
	}

	// shard-leader moves shard 2 to n1; rebalance moves it back.
	out, errOut, code = runCmd(t, "cluster", "shard-leader", "2", "n1", "--addr", addrs)
	if code != 0 || !strings.Contains(out, "placement version 2") {
		t.Fatalf("shard-leader: exit %d: %s%s", code, out, errOut)
	}
	awaitHosts(t, nodes, "shard 2 led by n1", func() bool { return shardLeaders(nodes, shards)[2] == "n1" })
	if _, errOut, code = runCmd(t, "cluster", "rebalance", "--addr", addrs); code != 0 {
		t.Fatalf("rebalance: exit %d: %s", code, errOut)
	}
	awaitHosts(t, nodes, "shard 2 led by n3 again", func() bool { return shardLeaders(nodes, shards)[2] == "n3" })
	if _, errOut, code = runCmd(t, "cluster", "shard-leader", "9", "n1", "--addr", addrs); code == 0 || !strings.Contains(errOut, "shard 9") {
		t.Fatalf("shard-leader of a shard that does not exist: exit %d: %s", code, errOut)
	}
}

// holdActivity is an activity whose first call tells started and waits
// for release (or its context); later calls return at once.
type holdActivity struct {
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func (h *holdActivity) Hold(ctx context.Context) (string, error) {
	first := false
	h.once.Do(func() { first = true })
	if !first {
		return "held", nil
	}
	close(h.started)
	select {
	case <-h.release:
		return "held", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// HeldWorkflow runs the hold activity and returns its result.
func HeldWorkflow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 5}})
	var got string
	err := workflow.ExecuteActivity(ctx, "Hold").Get(ctx, &got)
	return got, err
}

// TestShardedClusterShardLeaderKilled: a run whose activity is running
// when the leader of its shard dies finishes on the shard's next leader;
// "cluster status" shows that leader and the dead replica's lag as
// unknown; new runs of that shard start through the CLI meanwhile; and
// when the dead node comes back from its directory alone, the leadership
// the placement gives it returns to it.
func TestShardedClusterShardLeaderKilled(t *testing.T) {
	const shards = 4
	c := newShardedTestCluster(t, shards)
	want := []string{"n1", "n2", "n3", "n1"}
	awaitHosts(t, c.live(), "the spread leaders", func() bool { return reflect.DeepEqual(shardLeaders(c.live(), shards), want) })

	// The run lives on shard 1, led by n2.
	const shard, victim = 1, 1
	id := keyOnShard("held", shard, shards)
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: strings.Split(c.addrs(), ",")})
	if err != nil {
		t.Fatal(err)
	}
	hold := &holdActivity{started: make(chan struct{}), release: make(chan struct{})}
	w := worker.New(client.New(svc), "held", worker.Options{})
	w.RegisterWorkflow(HeldWorkflow)
	w.RegisterWorkflow(Greet)
	w.RegisterActivityWithName(hold.Hold, "Hold")
	w.RegisterActivity(LookupTitle)
	w.RegisterActivity(ComposeGreeting)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Shutdown(context.Background()); err != nil {
			t.Errorf("stop the worker: %v", err)
		}
	}()
	cl := client.New(svc)
	run, err := cl.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: "held"}, HeldWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.started:
	case <-time.After(20 * time.Second):
		j, err := svc.Describe(context.Background(), engine.Target{WorkflowID: id})
		t.Fatalf("the held activity never started: %+v, %v", j, err)
	}

	c.kill(victim)
	awaitHosts(t, c.live(), "a new leader of shard 1", func() bool {
		l := shardLeaders(c.live(), shards)[shard]
		return l != "" && l != "n2"
	})
	newLeader := shardLeaders(c.live(), shards)[shard]
	close(hold.release)
	var got string
	if err := run.Get(context.Background(), &got); err != nil || got != "held" {
		t.Fatalf("the run whose shard leader died: %q, %v", got, err)
	}

	// The status asked of the two that live: shard 1 led by the new
	// leader, n2 desired but not answering. n2, which their answers list,
	// is asked too, shows as unreachable, and makes the command fail.
	out, errOut, code := runCmd(t, "cluster", "status", "--addr", c.addrs())
	if code != 1 || !strings.Contains(errOut, "1 of 3 members did not answer") ||
		!regexp.MustCompile(`(?m)^\S+\s+-\s+unreachable`).MatchString(out) {
		t.Fatalf("cluster status with n2 dead: exit %d, want 1 with n2 unreachable:\n%s%s", code, out, errOut)
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 8 && f[0] == fmt.Sprint(shard) {
			row = f
		}
	}
	if row == nil || row[1] != newLeader || row[2] != "n2" || !slices.Contains(row[5:], "n2:?") {
		t.Fatalf("cluster status after n2 died does not show shard %d led by %s, n2 desired, n2's lag unknown:\n%s", shard, newLeader, out)
	}

	// A new run of the same shard starts and finishes through the CLI.
	id2 := keyOnShard("greet-after", shard, shards)
	out, errOut, code = runCmd(t, "workflow", "start", "--addr", c.addrs(), "--type", "Greet", "--queue", "held",
		"--id", id2, "--input", `"ada"`, "--wait")
	if code != 0 || !strings.Contains(out, `"hello, friend ada"`) {
		t.Fatalf("workflow %s on shard %d after its leader died: exit %d\n%s%s", id2, shard, code, out, errOut)
	}

	// n2 comes back from its directory; the shard returns to it.
	c.start(victim, false)
	awaitHosts(t, c.live(), "shard 1 led by n2 again", func() bool { return shardLeaders(c.live(), shards)[shard] == "n2" })
}

// keyOnShard returns the first of prefix-0, prefix-1, ... on shard k of
// count.
func keyOnShard(prefix string, k, count int) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s-%d", prefix, i); engine.ShardOfKey(id, count) == k {
			return id
		}
	}
}

func TestParsePeers(t *testing.T) {
	got, err := parsePeers("n1=10.0.0.1:7281/10.0.0.1:7280, n2=10.0.0.2:7281/10.0.0.2:7280")
	want := []raftfsm.PlacementNode{{ID: "n1", RaftAddr: "10.0.0.1:7281", HTTPAddr: "10.0.0.1:7280"}, {ID: "n2", RaftAddr: "10.0.0.2:7281", HTTPAddr: "10.0.0.2:7280"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parsePeers: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "n1", "n1=10.0.0.1:7281", "=a/b", "n1=/b", "n1=a/"} {
		if _, err := parsePeers(bad); err == nil {
			t.Errorf("parsePeers(%q) accepted it", bad)
		}
	}
}

// TestShardedClusterJoinAndMoveShard: a fourth node started with --shards
// and --join joins a sharded cluster of three, holding no shard; "cluster
// move-shard" moves shard 0's replica off n1 to it, "cluster status"
// shows shard 0 on n4, and a move the placement forbids is refused with
// its reason.
func TestShardedClusterJoinAndMoveShard(t *testing.T) {
	c := newShardedTestCluster(t, 2)
	raftAddr, err := lb.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, err := lb.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	addrs := c.addrs()
	n4, err := startNode(context.Background(), nodeOptions{id: "n4", dir: filepath.Join(c.root, "n4"), httpAddr: httpAddr, raftAddr: raftAddr,
		grace: time.Second, shards: 2, join: strings.Split(addrs, ",")[:1]})
	if err != nil {
		t.Fatal(err)
	}
	c.peers = append(c.peers, raftfsm.PlacementNode{ID: "n4", RaftAddr: raftAddr, HTTPAddr: httpAddr})
	c.nodes = append(c.nodes, n4)
	awaitHosts(t, c.live(), "n4 knowing the cluster", func() bool {
		p := n4.host.Placement()
		return len(p.Nodes) == 4 && n4.host.Ready(context.Background()) == nil
	})
	if _, errOut, code := runCmd(t, "cluster", "move-shard", "0", "n1", "n2", "--addr", addrs); code == 0 || !strings.Contains(errOut, `node "n2" holds a replica of shard 0 already`) {
		t.Fatalf("a move to a node that holds a replica: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCmd(t, "cluster", "move-shard", "0", "n1", "n4", "--addr", addrs)
	if code != 0 || !strings.Contains(out, "shard 0: moving its replica from n1 to n4") {
		t.Fatalf("move-shard: exit %d: %s%s", code, out, errOut)
	}
	awaitHosts(t, c.live(), "shard 0's move ended", func() bool {
		for _, n := range c.live() {
			if g := n.host.Placement().Groups[0]; g.Move != nil || g.Moves != 1 {
				return false
			}
		}
		return n4.host.LeadsShard(0)
	})
	out, _, _ = runCmd(t, "cluster", "status", "--addr", c.addrs())
	found := false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 8 && f[0] == "0" && f[1] == "n4" && strings.HasPrefix(f[5], "n4:") {
			found = true
		}
	}
	if !found {
		t.Fatalf("cluster status does not show shard 0 on n4, led by it:\n%s", out)
	}
}

// TestPrintShardsShowsAMove: while shard 0's replica moves from n1 to n4,
// "cluster status" lists n4 with its lag after the shard's replicas and
// says which move is under way.
func TestPrintShardsShowsAMove(t *testing.T) {
	sh := func(id, state string, applied uint64) clusterView {
		return clusterView{Status: &clusterStatusDoc{ID: id, Shards: []shardStatusDoc{{Shard: 0, State: state, Term: 2, CommitIndex: 40,
			AppliedIndex: applied, Replicas: []string{"n1", "n2", "n3"}, DesiredLeader: "n1", MoveFrom: "n1", MoveTo: "n4"}}}}
	}
	var buf strings.Builder
	p := newPrinter(&buf)
	printShards(p, []clusterView{sh("n1", "Leader", 40), sh("n2", "Follower", 40), sh("n3", "Follower", 39), sh("n4", "Follower", 12)})
	if err := p.err(); err != nil {
		t.Fatal(err)
	}
	want := "0\tn1\tn1\t2\t40\tn1:0 n2:0 n3:1 n4:28 (moving n1 to n4)\n"
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("printShards wrote\n%q\nwant a line\n%q", buf.String(), want)
	}
}

// TestPrintShardsShowsACancel: a move that was cancelled shows as being
// undone until it ends.
func TestPrintShardsShowsACancel(t *testing.T) {
	view := clusterView{Status: &clusterStatusDoc{ID: "n1", Shards: []shardStatusDoc{{Shard: 0, State: "Leader", Term: 2, CommitIndex: 40,
		AppliedIndex: 40, Replicas: []string{"n1", "n2", "n3"}, DesiredLeader: "n1", MoveFrom: "n1", MoveTo: "n4", MoveCancelling: true}}}}
	var buf strings.Builder
	p := newPrinter(&buf)
	printShards(p, []clusterView{view})
	if err := p.err(); err != nil {
		t.Fatal(err)
	}
	if want := "(cancelling the move of n1 to n4)\n"; !strings.Contains(buf.String(), want) || strings.Contains(buf.String(), "(moving") {
		t.Fatalf("printShards wrote\n%q\nwant a line ending %q", buf.String(), want)
	}
}

// The cluster's admin commands at addresses where nothing listens fail at
// once, naming the addresses, and do not claim that the command may have
// been applied: a refused connection sent nothing.
func TestClusterCommandsNoNodeFailAtOnce(t *testing.T) {
	t.Setenv("HEDDLE_ADDR", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	for _, args := range [][]string{
		{"cluster", "rebalance"},
		{"cluster", "move-shard", "1", "n1", "n2"},
		{"cluster", "remove", "n3"},
	} {
		start := time.Now()
		out, errs, code := runCmd(t, append(args, "--addr", dead)...)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%v took %v to fail", args, took)
		}
		if code != 1 || out != "" || !strings.Contains(errs, "no heddle node listens at "+dead+" (connection refused)") ||
			strings.Contains(errs, "outcome unknown") || strings.Contains(errs, "--retry-timeout") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 naming %s, refused, no outcome unknown", args, code, out, errs, dead)
		}
	}
}
