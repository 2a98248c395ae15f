package httpapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// TestDeliveriesOfShardsANodeDoesNotHold: on four nodes with three
// replicas of each shard, a node that holds no replica of shard 1 still
// reports shard 1's outbox, read at the shard's leader, not stale, and
// lists no shard as unread. The entry is kept pending by a hold on its
// target (shard 0), as a backup holds deliveries. Before, the node listed
// shard 1 as unread, and an operator had to find a node holding it.
func TestDeliveriesOfShardsANodeDoesNotHold(t *testing.T) {
	const shards = 2
	c := newShardedCluster(t, 4, shards)
	c.awaitLeaders(c.desired)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	outsider := c.outsiderOf(1)
	if err := c.live()[c.leaderOf(0)].HoldDeliveries(ctx, 0, "test-hold", "test", time.Minute); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if id := c.leaderOf(0); id != "" {
			_ = c.live()[id].ReleaseDeliveries(context.Background(), 0, "test-hold")
		}
	}()

	cl := c.client()
	parent, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("parent-", 1, shards), Type: "p", Queue: "parents"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := cl.ClaimWait(ctx, engine.Claim{Queue: "parents", Owner: "w", Max: 1, LeaseMS: 600_000})
	if err != nil || len(claimed) != 1 || claimed[0].Job != parent.Job {
		t.Fatalf("claiming the parent: %v, %v", claimed, err)
	}
	lease := claimed[0].Lease()
	// The child's create goes through the parent's shard's outbox and
	// answers once delivered: not while shard 0 holds its deliveries.
	go func() {
		_, _ = cl.Create(ctx, engine.CreateJob{WorkflowID: wfOn("child-", 0, shards), Type: "c", Queue: "q",
			ParentID: parent.Job, ParentStep: "a1", ParentLease: &lease})
	}()

	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's last report: %s", outsider, last)
		}
	})
	c.await("the outsider's report of shard 1's pending entry", func() bool {
		rep, err := c.client(outsider).DeliveryBacklog(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%+v", *rep)
		if len(rep.Unread) != 0 {
			return false
		}
		for _, b := range rep.Backlog {
			if b.Source == 1 && b.Target == 0 && b.Pending == 1 && !b.Stale {
				return true
			}
		}
		return false
	})
}

// A node that holds no replica of a shard knows only the placement's
// desired leader of it, which keeps its place while its node is down. It
// serves the shard all the same then: a list, read at the shard's leader,
// goes on to the shard's other replicas (a follower names the leader it
// knows, and the read follows), and a request it forwards goes to them
// when the desired leader's node refuses the connection. Before, every
// such list failed after the remote read's 5 s, and every describe, start
// or signal answered 503 unknown_outcome until the node came back.
func TestANodeWithoutAReplicaWhileTheDesiredLeaderIsDown(t *testing.T) {
	const shards = 2
	c := newShardedCluster(t, 4, shards)
	c.awaitLeaders(c.desired)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	outsider := c.outsiderOf(1)
	wf := wfOn("run-", 1, shards)
	if _, err := c.client().Create(ctx, engine.CreateJob{WorkflowID: wf, Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	down := c.desired(1)
	c.kill(down)
	c.await("a new leader of shard 1", func() bool { id := c.leaderOf(1); return id != "" && id != down })
	if id, _ := c.live()[outsider].ShardLeader(1); id != down {
		t.Fatalf("the outsider knows %q as shard 1's leader, want the desired %q (the case this test is for)", id, down)
	}

	lctx, lcancel := context.WithTimeout(ctx, 4*time.Second)
	defer lcancel()
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{c.httpOf(outsider)}, RetryTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	page, err := cl.List(lctx, engine.ListQuery{WorkflowID: wf, Limit: 10})
	if err != nil {
		t.Fatalf("listing shard 1's runs at %s while %s is down: %v", outsider, down, err)
	}
	if len(page.Jobs) != 1 || page.Jobs[0].WorkflowID != wf {
		t.Fatalf("the list at %s = %+v, want the run %q", outsider, page.Jobs, wf)
	}
	if j, err := cl.Describe(lctx, engine.Target{WorkflowID: wf}); err != nil || j.WorkflowID != wf {
		t.Fatalf("describing %q at %s while %s is down: %v, %v", wf, outsider, down, j, err)
	}
	started := wfOn("started-", 1, shards)
	res, err := cl.Create(lctx, engine.CreateJob{Header: engine.Header{RequestID: "start-while-down"}, WorkflowID: started, Type: "t", Queue: "q"})
	if err != nil || engine.ShardOfJob(res.Job) != 1 {
		t.Fatalf("starting %q at %s while %s is down: %+v, %v", started, outsider, down, res, err)
	}
	if _, err := cl.Signal(lctx, engine.Signal{Target: engine.Target{WorkflowID: started}, Name: "ping"}); err != nil {
		t.Fatalf("signalling %q at %s while %s is down: %v", started, outsider, down, err)
	}
	// The outsider learned the shard's leader from the node that took the
	// start: it names it from then on, to its forwards and in the map a
	// client routes by, instead of the desired leader that is down.
	// An election between the signal and the check would move the leader:
	// then another signal teaches the outsider again.
	var id, leader string
	for try := range 3 {
		if try > 0 {
			if _, err := cl.Signal(lctx, engine.Signal{Target: engine.Target{WorkflowID: started}, Name: "ping"}); err != nil {
				t.Fatal(err)
			}
		}
		id, _ = c.live()[outsider].ShardLeader(1)
		if leader = c.leaderOf(1); id == leader {
			break
		}
	}
	if id != leader || id == down {
		t.Fatalf("after forwarding to it, the outsider knows %q as shard 1's leader, want %q, which took the signal (not %q)", id, leader, down)
	}
	if m := c.live()[outsider].ShardMap(); m.Leaders[1] != id {
		t.Fatalf("the outsider's shard map names %q as shard 1's leader, want %q", m.Leaders[1], id)
	}

	// A new placement (shard 1's desired leader set to its third replica)
	// supersedes what the outsider learned: it names the new desired
	// leader until a forward teaches it again.
	third := ""
	for _, r := range c.live()[outsider].Placement().Groups[1].Replicas {
		if r != down && r != id {
			third = r
		}
	}
	if _, err := c.client(leader).SetShardLeader(lctx, 1, third); err != nil {
		t.Fatalf("setting shard 1's desired leader to %s: %v", third, err)
	}
	c.await("the outsider to name shard 1's new desired leader", func() bool {
		got, _ := c.live()[outsider].ShardLeader(1)
		return got == third
	})
}

// outsiderOf returns a live node that holds no replica of shard k, failing
// the test when every node holds one.
func (c *shardedCluster) outsiderOf(k int) string {
	c.t.Helper()
	for id, h := range c.live() {
		if h.Shard(k) == nil {
			return id
		}
	}
	c.t.Fatalf("every node holds a replica of shard %d; the test needs one that holds none", k)
	return ""
}
