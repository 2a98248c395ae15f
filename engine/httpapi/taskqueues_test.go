package httpapi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// On a three-node cluster a worker's long poll waits on the follower it
// reached, and never reaches the leader while its queue is empty. A
// describe asked of any member lists it all the same: the node that
// answers merges every member's own view. A claim a follower forwards is
// seen by both, and its dispatch is counted by every member.
func TestTaskQueuesMergeEveryMembersPolls(t *testing.T) {
	c := newQueryCluster(t)
	var leaderID string
	var followers []string
	for _, id := range c.ids {
		if c.nodes[id].IsLeader() {
			leaderID = id
		} else {
			followers = append(followers, id)
		}
	}
	if leaderID == "" {
		t.Fatal("no leader")
	}
	f1, f2 := followers[0], followers[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	at := func(id string) *Client { return newClient(t, ClientConfig{Addrs: []string{c.url[id]}}) }
	lc := at(leaderID)
	if _, err := lc.Create(ctx, engine.CreateJob{WorkflowID: "lost", Type: "Order", Queue: "ordres"}); err != nil {
		t.Fatal(err)
	}

	// A worker polls the empty queue "idle" at f1 and waits there.
	pctx, stopPoll := context.WithCancel(ctx)
	polled := make(chan error, 1)
	go func() {
		_, err := at(f1).ClaimWait(pctx, engine.Claim{Queue: "idle", Owner: "far-worker", Max: 1, LeaseMS: 30_000,
			Types: []string{"Order", engine.ActivityTypePrefix + "Charge"}, BuildID: "b2"})
		polled <- err
	}()
	defer func() { stopPoll(); endedCancelled(t, <-polled) }()
	c.eventually("f1 seeing the poll", func() bool {
		for _, v := range c.nodes[f1].Engine().TaskQueueViews() {
			if v.Name == "idle" && len(v.Pollers) == 1 && v.Pollers[0].Polling {
				return true
			}
		}
		return false
	})
	for _, v := range c.nodes[leaderID].Engine().TaskQueueViews() {
		if v.Name == "idle" {
			t.Fatalf("the poll reached the leader: %+v", v)
		}
	}

	// Asked of f2 (which forwards the read to the leader), and of f2 with
	// a stale read (which answers itself): both list the poller at f1.
	for _, stale := range []bool{false, true} {
		rctx := ctx
		if stale {
			rctx = engine.WithStaleRead(ctx)
		}
		d, err := at(f2).DescribeTaskQueue(rctx, "idle")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Pollers) != 1 || len(d.Unreached) != 0 {
			t.Fatalf("stale %v: %+v", stale, d)
		}
		p := d.Pollers[0]
		if p.Identity != "far-worker" || !p.Polling || p.BuildID != "b2" || !slices.Equal(p.Nodes, []string{f1}) ||
			!slices.Equal(p.WorkflowTypes, []string{"Order"}) || !slices.Equal(p.ActivityTypes, []string{"Charge"}) {
			t.Errorf("stale %v: poller %+v", stale, p)
		}
	}
	l, err := lc.ListTaskQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(l.Queues, func(d engine.TaskQueueDescription) bool { return d.Name == "idle" })
	if i < 0 || len(l.Queues[i].Pollers) != 1 {
		t.Fatalf("list: %+v", l.Queues)
	}
	r, err := at(f2).QueuedReason(ctx, engine.Target{WorkflowID: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != engine.QueuedNoPoller || !strings.Contains(r.Message, "queues with pollers: idle") {
		t.Errorf("the run on the unpolled queue: %+v", r)
	}

	// A run of a misspelled type on "shop", whose worker polls f2 (its
	// claim is forwarded to the leader, which passes the run over): asked
	// of f1, the run's reason names what the worker runs.
	if _, err := lc.Create(ctx, engine.CreateJob{WorkflowID: "typo", Type: "Ordr", Queue: "shop"}); err != nil {
		t.Fatal(err)
	}
	shopCtx, stopShop := context.WithCancel(ctx)
	shopDone := make(chan error, 1)
	go func() {
		_, err := at(f2).ClaimWait(shopCtx, engine.Claim{Queue: "shop", Owner: "shop-worker", Max: 1, LeaseMS: 30_000, Types: []string{"Order"}})
		shopDone <- err
	}()
	defer func() { stopShop(); endedCancelled(t, <-shopDone) }()
	var typo *engine.QueuedReason
	c.eventually("the shop worker seen", func() bool {
		typo, err = at(f1).QueuedReason(ctx, engine.Target{WorkflowID: "typo"})
		return err == nil && typo.Code == engine.QueuedNoPollerForType
	})
	if !strings.Contains(typo.Message, `no poller of task queue "shop" serves workflow type "Ordr" (they serve workflow types Order); did you mean "Order"?`) {
		t.Errorf("the misspelled run: %+v", typo)
	}

	// A claim sent to f2 is forwarded to the leader, which claims: both
	// saw the worker, and every member counted the dispatch.
	if _, err := lc.Create(ctx, engine.CreateJob{WorkflowID: "work", Type: "Order", Queue: "work"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := at(f2).Claim(ctx, engine.Claim{Queue: "work", Owner: "near-worker", Max: 1, LeaseMS: 30_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim through f2 = %v, %v", jobs, err)
	}
	d, err := at(f1).DescribeTaskQueue(ctx, "work")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{leaderID, f2}
	slices.Sort(want)
	if len(d.Pollers) != 1 || !slices.Equal(d.Pollers[0].Nodes, want) || d.Pollers[0].DispatchRate != 1.0/60 {
		t.Errorf("the forwarded claimer: %+v", d.Pollers)
	}
	c.eventually("every member counting the dispatch", func() bool {
		for _, id := range c.ids {
			views := c.nodes[id].Engine().TaskQueueViews()
			i := slices.IndexFunc(views, func(d engine.TaskQueueDescription) bool { return d.Name == "work" })
			if i < 0 || views[i].Stats.DispatchRate != 1.0/60 || views[i].Stats.AddRate != 1.0/60 {
				return false
			}
		}
		return true
	})
}

// A member that does not answer is named in the answer, whose pollers are
// then those of the members that did.
func TestTaskQueuesNameTheMembersNotReached(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e, Cluster: fakeCluster{members: []engine.ClusterMember{
		{ID: "me", HTTPAddr: "self"}, {ID: "gone", HTTPAddr: deadAddr(t)}}}})
	cl := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	end := e.BeginPoll(engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000})
	defer end()
	d, err := cl.DescribeTaskQueue(context.Background(), "q")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Unreached, []string{"gone"}) || len(d.Pollers) != 1 || !slices.Equal(d.Pollers[0].Nodes, []string{"me"}) {
		t.Fatalf("%+v", d)
	}
}

// fakeCluster is a Cluster whose status is members, the first of them
// this node.
type fakeCluster struct {
	Cluster
	members []engine.ClusterMember
}

func (f fakeCluster) Status(context.Context) (ClusterStatus, error) {
	return ClusterStatus{ID: f.members[0].ID, LeaderID: f.members[0].ID, Members: f.members}, nil
}

// endedCancelled fails t unless err is what a poll cut short by its
// context returns: nothing, or the cancellation.
func endedCancelled(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled poll: %v", err)
	}
}
