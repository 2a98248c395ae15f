package main

// These tests start real cluster nodes in-process (Raft on loopback TCP,
// real directories, the HTTP API) through the same startNode the server
// and "cluster up" commands use, and drive the cluster commands and the
// example worker's workflow against them.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
)

// startTestCluster starts three nodes joined through the first one's API.
func startTestCluster(t *testing.T) ([]*clusterNode, string) {
	t.Helper()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var nodes []*clusterNode
	var addrs []string
	t.Cleanup(func() {
		for i := len(nodes) - 1; i >= 0; i-- {
			if err := nodes[i].close(); err != nil {
				t.Errorf("close %s: %v", nodes[i].node.ID(), err)
			}
		}
	})
	for i, id := range []string{"n1", "n2", "n3"} {
		o := nodeOptions{id: id, dir: filepath.Join(root, id), httpAddr: "127.0.0.1:0", raftAddr: "127.0.0.1:0",
			grace: time.Second, bootstrap: i == 0}
		if i > 0 {
			o.join = addrs[:1]
		}
		n, err := startNode(ctx, o)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		nodes = append(nodes, n)
		addrs = append(addrs, n.api.addr())
	}
	// A node that just joined has not yet received the log: wait until
	// every node applied what the leader had when the last one joined.
	target := nodes[0].node.FSM().Applied()
	for _, n := range nodes {
		for n.node.FSM().Applied() < target {
			select {
			case <-ctx.Done():
				t.Fatalf("%s never caught up to index %d", n.node.ID(), target)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nodes, strings.Join(addrs, ",")
}

func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestClusterCommands(t *testing.T) {
	nodes, addrs := startTestCluster(t)
	out, errOut, code := runCmd(t, "cluster", "status", "--addr", addrs, "--json")
	if code != 0 {
		t.Fatalf("cluster status: exit %d: %s", code, errOut)
	}
	var views []struct {
		Addr   string                 `json:"addr"`
		Ready  bool                   `json:"ready"`
		Status *httpapi.ClusterStatus `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatalf("cluster status --json: %v\n%s", err, out)
	}
	leaders := map[string]bool{}
	for _, v := range views {
		if v.Status == nil || len(v.Status.Members) != 3 || !v.Ready {
			t.Fatalf("%s: status %+v, ready %v; want three members, ready", v.Addr, v.Status, v.Ready)
		}
		leaders[v.Status.LeaderID] = true
	}
	if len(views) != 3 || len(leaders) != 1 || leaders[""] {
		t.Fatalf("views %d, leaders %v: want three nodes agreeing on one leader", len(views), leaders)
	}
	out, _, _ = runCmd(t, "cluster", "status", "--addr", addrs)
	if !strings.Contains(out, "Leader") || strings.Count(out, "Follower") != 2 || !strings.Contains(out, "READY") || strings.Count(out, " yes\n") != 3 {
		t.Fatalf("cluster status:\n%s", out)
	}
	// -o jsonl: one member's view a line, in the order of --addr.
	out, errOut, code = runCmd(t, "cluster", "status", "--addr", addrs, "-o", "jsonl")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("cluster status -o jsonl: exit %d, %d lines: %s%s", code, len(lines), out, errOut)
	}
	for i, line := range lines {
		var v clusterView
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.Addr != strings.Split(addrs, ",")[i] || v.Status == nil {
			t.Errorf("cluster status -o jsonl line %d: %v, %s", i+1, err, line)
		}
	}
	// A member that does not answer is shown, and the exit status is 1.
	_, errOut, code = runCmd(t, "cluster", "status", "--addr", addrs+",127.0.0.1:1", "-o", "json")
	if code != 1 || !strings.Contains(errOut, "1 of 4 members did not answer") {
		t.Errorf("cluster status with an unreachable member: exit %d, stderr %q", code, errOut)
	}

	// A workflow started through a follower runs on a remote worker.
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: strings.Split(addrs, ",")})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(client.New(svc), "greetings", worker.Options{})
	w.RegisterWorkflow(Greet)
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
	follower := nodes[1].api.addr()
	out, errOut, code = runCmd(t, "workflow", "start", "--addr", follower, "--type", "Greet", "--queue", "greetings",
		"--id", "greet-1", "--input", `"ada"`, "--wait")
	if code != 0 || !strings.Contains(out, `"hello, friend ada"`) {
		t.Fatalf("workflow start through a follower: exit %d\n%s%s", code, out, errOut)
	}

	// Lists and counts answer through a follower too, in Temporal's syntax.
	out, errOut, code = runCmd(t, "workflow", "list", "--addr", follower, "--query", `WorkflowId = "greet-1" AND ExecutionStatus = "Completed"`, "-o", "json")
	if code != 0 || !strings.Contains(out, `"workflow_id": "greet-1"`) || !strings.Contains(out, `"order": "start_desc"`) {
		t.Fatalf("workflow list through a follower: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCmd(t, "workflow", "count", "--addr", follower, "--status", "Closed", "-o", "json")
	if code != 0 || !strings.Contains(out, `"count": 1`) {
		t.Fatalf("workflow count through a follower: exit %d\n%s%s", code, out, errOut)
	}

	// Leadership moves, and the client follows it.
	_, errOut, code = runCmd(t, "cluster", "transfer-leader", "--addr", addrs)
	if code != 0 {
		t.Fatalf("transfer-leader: exit %d: %s", code, errOut)
	}
	c := client.New(svc)
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "greet-2", TaskQueue: "greetings"}, Greet, "dr who")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(context.Background(), &got); err != nil || got != "hello, dr who" {
		t.Fatalf("after the transfer: %q, %v", got, err)
	}

	// Remove the leader itself: it hands leadership to another member
	// first, and that member removes it. The two that stay see two members.
	var leader *clusterNode
	var stay []*clusterNode
	for _, n := range nodes {
		if n.node.IsLeader() {
			leader = n
		} else {
			stay = append(stay, n)
		}
	}
	if leader == nil || len(stay) != 2 {
		t.Fatalf("after the transfer: no single leader among the three nodes")
	}
	out, errOut, code = runCmd(t, "cluster", "remove", leader.node.ID(), "--addr", addrs, "-o", "json")
	if code != 0 || strings.TrimSpace(out) != "{\n  \"removed\": \""+leader.node.ID()+"\"\n}" {
		t.Fatalf("remove: exit %d: %s%s", code, out, errOut)
	}
	if leader.node.IsLeader() {
		t.Fatalf("%s still leads after its removal", leader.node.ID())
	}
	remaining, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{stay[0].api.addr(), stay[1].api.addr()}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := remaining.Status(context.Background())
	if err != nil || len(st.Members) != 2 {
		t.Fatalf("after remove: %+v, %v", st, err)
	}
	for _, m := range st.Members {
		if m.ID == leader.node.ID() {
			t.Fatalf("after remove: %s is still a member: %+v", m.ID, st)
		}
	}
	// The data is the same on both remaining members.
	for _, n := range stay {
		j, err := n.node.Engine().Describe(engine.WithStaleRead(context.Background()), engine.Target{WorkflowID: "greet-1"})
		if n.node.FSM().Applied() == 0 || err != nil || j.Status != engine.StatusCompleted {
			t.Fatalf("%s: greet-1 = %+v, %v", n.node.ID(), j, err)
		}
	}
}

func TestServerCommandBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "--dir", "d"}, "--id is required"},
		{[]string{"server", "--id", "n1"}, "--dir is required"},
		{[]string{"server", "--id", "n1", "--dir", "d", "--bootstrap", "--join", "x:1"}, "exclude each other"},
		{[]string{"server", "--id", "n1", "--dir", "d", "extra"}, "unexpected argument"},
		{[]string{"cluster"}, "heddle cluster: missing command"},
		{[]string{"cluster", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"cluster", "remove"}, "missing argument ID"},
		{[]string{"cluster", "up"}, "--dir is required"},
		{[]string{"cluster", "up", "--dir", "d", "--nodes", "0"}, "--nodes 0 is not in [1, 9]"},
		{[]string{"cluster", "up", "--dir", "d", "--shards", "0"}, "--shards 0 is not in [1, 4096]"},
		{[]string{"cluster", "up", "--dir", "d", "--shards", "4097"}, "--shards 4097 is not in [1, 4096]"},
		{[]string{"cluster", "up", "--dir", "d", "--nodes", "3", "--shards", "4", "--replicas", "4"}, "--replicas 4 is not in [1, 3]"},
		{[]string{"cluster", "up", "--dir", "d", "--replicas", "2"}, "--replicas needs --shards above 1"},
		{[]string{"cluster", "shard-leader", "x", "n1"}, `SHARD "x" is not a shard number`},
		{[]string{"cluster", "shard-leader", "1"}, "missing argument NODE"},
		{[]string{"cluster", "move-shard", "x", "n1", "n4"}, `SHARD "x" is not a shard number`},
		{[]string{"cluster", "move-shard", "1", "n1"}, "missing argument TO"},
		{[]string{"server", "--id", "n1", "--dir", "d", "--peers", "n1=a:1/b:2"}, "--peers needs --shards"},
		{[]string{"server", "--id", "n1", "--dir", "d", "--shards", "4"}, "--shards needs --peers"},
		{[]string{"server", "--id", "n1", "--dir", "d", "--shards", "4", "--peers", "n1=a:1/b:2", "--bootstrap"}, "needs neither --bootstrap nor --join"},
		{[]string{"server", "--id", "n1", "--dir", "d", "--shards", "4", "--peers", "n1"}, "is not id=raft-addr/http-addr"},
		{[]string{"worker", "--concurrency", "0"}, "--concurrency 0 must be at least 1"},
	} {
		_, errOut, code := runCmd(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// "cluster up" runs every node in one process, whose limit of open files
// their replicas share: a layout past it is refused at once, naming the
// count, before any node's directory is made. Without the check, 1,024
// shards on three nodes failed after about a minute with "too many open
// files", their directories half created.
func TestClusterUpRefusesMoreReplicasThanFiles(t *testing.T) {
	defer func(f func() (uint64, bool)) { processFileLimit = f }(processFileLimit)
	processFileLimit = func() (uint64, bool) { return 1_000, true } // 125 replicas
	dir := filepath.Join(t.TempDir(), "c")
	_, errOut, code := runCmd(t, "cluster", "up", "--dir", dir, "--nodes", "3", "--shards", "64", "--base-port", "17990")
	if code != 1 || !strings.Contains(errOut, "3 nodes in this process, 64 shards of 3 replicas") ||
		!strings.Contains(errOut, "192 shard replicas") || !strings.Contains(errOut, "the 1000 this process may open") {
		t.Fatalf("cluster up of 192 replicas with 1,000 files: exit %d, %q; want exit 1 naming the replicas and the limit", code, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the refused cluster left %s: %v", dir, err)
	}
}
