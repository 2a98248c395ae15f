package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/loopback"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/heddlewf/heddle/storage"
)

// openShardedCluster starts a sharded cluster of three nodes and shards
// shards on loopback, each node serving its API (and delivering to the
// others over it), and returns a client of all three, as a remote worker
// process has, and the hosts.
func openShardedCluster(t *testing.T, shards int) (*httpapi.Client, []*raftfsm.Host) {
	t.Helper()
	root := t.TempDir()
	var peers []raftfsm.PlacementNode
	for i := 1; i <= 3; i++ {
		raftAddr, err := loopback.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		httpAddr, err := loopback.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, raftfsm.PlacementNode{ID: fmt.Sprintf("n%d", i), RaftAddr: raftAddr, HTTPAddr: httpAddr})
	}
	var hosts []*raftfsm.Host
	var addrs []string
	for _, p := range peers {
		h, err := raftfsm.OpenHost(raftfsm.HostConfig{Config: raftfsm.Config{ID: p.ID, Dir: filepath.Join(root, p.ID), RaftAddr: p.RaftAddr,
			HTTPAddr: p.HTTPAddr, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
			LeaderLeaseTimeout: 150 * time.Millisecond, FailoverGrace: time.Second,
			Storage: storage.Options{MemTableBytes: 4 << 20, BlockCacheBytes: 4 << 20}},
			Peers: peers, Shards: shards,
			DeliverTo: func(ctx context.Context, _, httpAddr string, d *engine.Deliver) (*engine.DeliverResult, error) {
				return httpapi.NodeSender{}.Deliver(ctx, httpAddr, d)
			}})
		if err != nil {
			t.Fatal(err)
		}
		api, err := httpapi.NewServer(httpapi.ServerConfig{Service: httpapi.NewShardRouter(h), Cluster: h})
		if err != nil {
			t.Fatal(err)
		}
		srv := api.HTTPServer()
		ln, err := net.Listen("tcp", p.HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() {
			api.Close()
			_ = srv.Close()
			closeOK(t, h)
		})
		hosts = append(hosts, h)
		addrs = append(addrs, "http://"+p.HTTPAddr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, h := range hosts {
		// Ready once the metadata group and every shard have leaders;
		// looked at again at each commit or change of leader.
		for {
			changed, meta := h.ShardsChanged(), h.LeaderChanged()
			err := h.Ready(ctx)
			if err == nil {
				break
			}
			select {
			case <-changed:
			case <-meta:
			case <-ctx.Done():
				t.Fatalf("node %s not ready: %v", h.ID(), err)
			}
		}
	}
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	return c, hosts
}

// TestChildWorkflowsAcrossShards runs the parent of
// TestChildWorkflowsRemoteActivitiesAndContinueAsNew on a cluster of four
// shards with a workflow id without a hash tag: its children (the ids the
// SDK derives, and "counter", a continue-as-new chain), the remote activity
// of one of them and a failing child land on other shards than the
// parent's, through its shard's outbox, and their results come back
// (phase 1 failed them with CrossShard). Every shard's store verifies, and
// no delivery is left pending.
func TestChildWorkflowsAcrossShards(t *testing.T) {
	const shards = 4
	svc, hosts := openShardedCluster(t, shards)
	main := startWorkerOn(t, svc, "main", worker.Options{})
	main.RegisterWorkflow(Parent)
	main.RegisterWorkflow(ChildDoubler)
	main.RegisterWorkflow(Counter)
	main.RegisterWorkflow(Failing)
	remote := startWorkerOn(t, svc, "remote", worker.Options{})
	remote.RegisterActivity(Double)
	c := client.New(svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "parent", TaskQueue: "main"}, Parent)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "40 3 child gives up"; got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
	// The parent's children live on other shards: the test crossed them.
	page, err := c.ListWorkflows(ctx, engine.ListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	parentShard, crossed := engine.ShardOfKey("parent", shards), 0
	for _, j := range page.Jobs {
		if j.ParentID != 0 && engine.ShardOfJob(j.ID) != parentShard {
			crossed++
		}
	}
	if crossed == 0 {
		t.Fatalf("no child of the parent (shard %d) ran on another shard: %+v", parentShard, page.Jobs)
	}
	// The children's ends reached the parent before it could finish, but
	// their acknowledgements on the children's shards may still be on
	// their way.
	verifyQuietShards(ctx, t, hosts, shards)
}

// verifyQuietShards waits (at each commit of a node's shards) until no
// outbox holds anything; then every shard's store verifies, and so do the
// links between the shards.
func verifyQuietShards(ctx context.Context, t *testing.T, hosts []*raftfsm.Host, shards int) {
	t.Helper()
	leaderOf := func(k int) *raftfsm.Node {
		for _, h := range hosts {
			if n := h.Shard(k); n != nil && n.IsLeader() {
				return n
			}
		}
		return nil
	}
	for {
		var changed []<-chan struct{}
		for _, h := range hosts {
			changed = append(changed, h.ShardsChanged())
		}
		pending := 0
		for k := range shards {
			n := leaderOf(k)
			if n == nil {
				pending++
				continue
			}
			if err := n.Engine().View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
				es, err := machine.PendingEntries(r, 0)
				pending += len(es)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		if pending == 0 {
			break
		}
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-changed[2]:
		case <-ctx.Done():
			t.Fatalf("%d deliveries still pending", pending)
		}
	}
	// Each shard is read at its leader; under load a leadership may move
	// meanwhile, so a read that finds no leader, or loses it, waits for
	// the next change and reads again.
	view := func(k int, fn func(r *storage.Reader) error) error {
		for {
			var changed []<-chan struct{}
			for _, h := range hosts {
				changed = append(changed, h.ShardsChanged())
			}
			n := leaderOf(k)
			if n != nil {
				err := n.Engine().View(ctx, fn)
				if !errors.Is(err, engine.ErrNotLeader) {
					return err
				}
			}
			select {
			case <-changed[0]:
			case <-changed[1]:
			case <-changed[2]:
			case <-ctx.Done():
				return fmt.Errorf("shard %d has no leader: %w", k, ctx.Err())
			}
		}
	}
	for k := range shards {
		if err := view(k, func(r *storage.Reader) error {
			for _, err := range machine.VerifyShard(r, 5, engine.ShardLayout{Index: k, Count: shards}) {
				t.Errorf("shard %d: %v", k, err)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	errs := machine.VerifyAcrossShards(shards, view, 10)
	for _, err := range errs {
		t.Errorf("across shards: %v", err)
	}
}

// LeavesChild starts a child that waits for ever, sees it started, and
// ends: its parent-close policy (terminate, the default) ends the child.
func LeavesChild(ctx workflow.Context) error {
	f := workflow.ExecuteChildWorkflow(ctx, Sleeper)
	return f.GetChildWorkflowExecution().Get(ctx, nil)
}

// TestParentClosePolicyAcrossShards: a parent without a hash tag ends while
// its child, on another shard, still runs; the worker terminates the child
// as its parent, through the parent's shard's outbox (phase 1 refused the
// child; a terminate naming a parent on another shard was refused too).
func TestParentClosePolicyAcrossShards(t *testing.T) {
	const shards = 4
	svc, _ := openShardedCluster(t, shards)
	w := startWorkerOn(t, svc, "main", worker.Options{})
	w.RegisterWorkflow(LeavesChild)
	w.RegisterWorkflow(Sleeper)
	c := client.New(svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "leaver", TaskQueue: "main"}, LeavesChild)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListWorkflows(ctx, engine.ListQuery{Type: "Sleeper", Limit: 10})
	if err != nil || len(page.Jobs) != 1 {
		t.Fatalf("the child: %+v, %v", page, err)
	}
	child := page.Jobs[0]
	if engine.ShardOfJob(child.ID) == engine.ShardOfKey("leaver", shards) {
		t.Fatalf("the child %q landed on its parent's shard; pick ids that hash apart", child.WorkflowID)
	}
	j, err := svc.WaitClosed(ctx, engine.Target{Job: child.ID})
	if err != nil || j.Status != engine.StatusTerminated {
		t.Fatalf("the child after its parent ended: %+v, %v", j, err)
	}
}

// idOn returns the first of prefix0, prefix1, … that routes to shard k of
// count.
func idOn(prefix string, k, count int) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s%d", prefix, i); engine.ShardOfKey(id, count) == k {
			return id
		}
	}
}

// TestSignalsAndCancelsAcrossShards runs Pinger of
// TestSignalAndCancelExternalWorkflows on a cluster of four shards, with
// its target, its victim and the id nobody holds on other shards than its
// own: the signal, the cancel request and the failed signal go through
// the sender's shard's outbox, and their outcomes come back as the steps'
// effects (phase 1 sent them as the worker's own commands, not with the
// run). Each landed once, every shard's store verifies, and no delivery
// is left pending.
func TestSignalsAndCancelsAcrossShards(t *testing.T) {
	const shards = 4
	svc, hosts := openShardedCluster(t, shards)
	w := startWorkerOn(t, svc, "ext", worker.Options{})
	w.RegisterWorkflow(Pinged)
	w.RegisterWorkflow(Pinger)
	c := client.New(svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nobody := engine.ShardOfKey("nobody-home", shards) // Pinger's unknown target
	senderShard := (nobody + 1) % shards
	sender := idOn("pinger-", senderShard, shards)
	target := idOn("target-", (senderShard+2)%shards, shards)
	victim := idOn("victim-", (senderShard+3)%shards, shards)
	runPinger(ctx, t, c, "ext", sender, target, victim)
	// Each outcome is in the sender's history once, and the target got the
	// signal once.
	hist, err := c.GetWorkflowHistory(ctx, sender, "")
	if err != nil {
		t.Fatal(err)
	}
	types := eventTypes(hist)
	for _, want := range []string{"signal_external_sent", "signal_external_failed", "cancel_external_requested"} {
		if strings.Count(types, want) != 1 {
			t.Fatalf("history %s: want one %s", types, want)
		}
	}
	thist, err := c.GetWorkflowHistory(ctx, target, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(eventTypes(thist), "signal_received"); n != 1 {
		t.Fatalf("the target's history %s holds %d signals, want 1", eventTypes(thist), n)
	}
	verifyQuietShards(ctx, t, hosts, shards)
}

// SignallingChild signals its parent ("child", carrying its workflow id)
// and ends.
func SignallingChild(ctx workflow.Context) error {
	info := workflow.GetInfo(ctx)
	return workflow.SignalExternalWorkflow(ctx, info.ParentWorkflowExecution.ID, "", "child", info.WorkflowExecution.ID).Get(ctx, nil)
}

// SignalledParent starts SignallingChild with the given id, waits for it,
// and then for its signal, which the child sent before it ended.
func SignalledParent(ctx workflow.Context, childID string) (string, error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: childID})
	if err := workflow.ExecuteChildWorkflow(cctx, SignallingChild).Get(ctx, nil); err != nil {
		return "", err
	}
	var from string
	workflow.GetSignalChannel(ctx, "child").Receive(ctx, &from)
	return from, nil
}

// TestChildSignalsParentAcrossShards: a child on another shard signals its
// parent before it ends; the signal and the child's end both cross back
// through the child's shard's outbox, in the order sent.
func TestChildSignalsParentAcrossShards(t *testing.T) {
	const shards = 4
	svc, hosts := openShardedCluster(t, shards)
	w := startWorkerOn(t, svc, "kin", worker.Options{})
	w.RegisterWorkflow(SignalledParent)
	w.RegisterWorkflow(SignallingChild)
	c := client.New(svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	parent := idOn("parent-", 0, shards)
	child := idOn("child-", 2, shards)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: parent, TaskQueue: "kin"}, SignalledParent, child)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != child {
		t.Fatalf("the parent got the signal of %q, want %q", got, child)
	}
	verifyQuietShards(ctx, t, hosts, shards)
}
