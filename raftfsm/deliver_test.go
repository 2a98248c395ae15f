package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// deliverTo is the test cluster's HostConfig.DeliverTo: node from's
// delivery to node to, applied by to's replica of the target shard in
// process (a real node POSTs it: httpapi.NodeSender), after the hook.
func (c *testHosts) deliverTo(ctx context.Context, from, to string, d *engine.Deliver) (*engine.DeliverResult, error) {
	c.mu.Lock()
	hook := c.deliverHook
	c.mu.Unlock()
	if hook != nil {
		if res, err, done := hook(from, to, d); done {
			return res, err
		}
	}
	return c.applyDeliver(ctx, to, d)
}

// applyDeliver proposes d on node to's replica of its target shard.
// deliveryFault is a fault c's deliveries meet (injectDeliveryFault): hit
// is closed once the first matching delivery met a "source" or "target"
// fault; a "partition" fails every matching delivery, telling refused of
// each try, until heal is closed.
type deliveryFault struct {
	hit, heal chan struct{}
	refused   chan struct{}
}

// injectDeliveryFault arms c's deliveries that match with fault:
//   - "source": the first is applied on its target, and its answer never
//     comes back: the source's leader hangs until the test kills it;
//   - "target": the first is applied, and the target's leader is killed
//     before it answers;
//   - "partition": every one fails to reach its target until heal.
//
// Deliveries that do not match go through.
func (c *testHosts) injectDeliveryFault(fault string, match func(d *engine.Deliver) bool) *deliveryFault {
	f := &deliveryFault{hit: make(chan struct{}), heal: make(chan struct{}), refused: make(chan struct{}, 64)}
	var once sync.Once
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deliverHook = func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool) {
		if !match(d) {
			return nil, nil, false
		}
		if fault == "partition" {
			select {
			case <-f.heal:
				return nil, nil, false
			default:
			}
			select {
			case f.refused <- struct{}{}:
			default:
			}
			return nil, errors.New("connect: no route to host " + to), true
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil, nil, false
		}
		if _, err := c.applyDeliver(context.Background(), to, d); err != nil {
			c.t.Errorf("the first delivery (%s): %v", d.DeliveryRef, err)
		}
		switch fault {
		case "source":
			close(f.hit)
			<-c.live()[from].ctx.Done() // until the test kills the node
		case "target":
			c.kill(to)
			close(f.hit)
		}
		return nil, errors.New("connection reset by peer"), true
	}
	return f
}

// runningOn creates a run of workflow id wf, of type typ on queue, at shard
// k's leader, claims it there, and returns the lease the claim took.
func (c *testHosts) runningOn(k int, wf, typ, queue string) engine.LeaseRef {
	c.t.Helper()
	ctx := context.Background()
	_, e := c.shardLeader(k)
	res, err := e.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: typ, Queue: queue})
	if err != nil {
		c.t.Fatal(err)
	}
	claimed, err := e.Claim(ctx, engine.Claim{Queue: queue, Owner: "w-" + queue, LeaseMS: 600_000, Max: 1})
	if err != nil || len(claimed) != 1 {
		c.t.Fatalf("claim %s: %v %v", wf, claimed, err)
	}
	return engine.LeaseRef{Job: res.Job, Attempt: claimed[0].Attempt, Token: claimed[0].LeaseToken}
}

func (c *testHosts) applyDeliver(ctx context.Context, to string, d *engine.Deliver) (*engine.DeliverResult, error) {
	h := c.live()[to]
	if h == nil {
		return nil, errors.New("connection refused: node " + to + " is down")
	}
	n := h.Shard(d.Target)
	if n == nil {
		return nil, &engine.NotLeaderError{}
	}
	res, err := n.Engine().Propose(ctx, d)
	if err != nil {
		return nil, err
	}
	return res.(*engine.DeliverResult), nil
}

// shardLeader returns the engine of shard k's leader among the live hosts,
// waiting for one.
func (c *testHosts) shardLeader(k int) (string, *embedded.Engine) {
	c.t.Helper()
	var id string
	var eng *embedded.Engine
	c.await("a leader of the shard", func() bool {
		for hid, h := range c.live() {
			if n := h.Shard(k); n != nil && n.IsLeader() {
				id, eng = hid, n.Engine()
				return true
			}
		}
		return false
	})
	return id, eng
}

// TestCrossShardChildDeliveredOnce: a parent on shard 0 starts a child
// whose workflow id routes to shard 1 (phase 1 refused it with
// ErrCrossShard); the create answers the child's job id, the child runs
// and completes on shard 1, and its result becomes the parent's step's
// effect, once. The same with the source shard's leader killed after the
// child is created on the target and before the acknowledgement, and with
// the target shard's leader killed just after it applied the delivery and
// before it answered. Each ends with the child existing once, the effect
// recorded once, no entry pending on any shard, and VerifyShard clean on
// every replica of every shard.
func TestCrossShardChildDeliveredOnce(t *testing.T) {
	for _, kill := range []string{"none", "source", "target"} {
		t.Run("kill="+kill, func(t *testing.T) { crossShardChild(t, kill) })
	}
}

func crossShardChild(t *testing.T, kill string) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders() // n1 leads shard 0, n2 shard 1
	ctx := context.Background()
	parentWF, childWF := keyOn("parent-", 0, 2), keyOn("child-", 1, 2)
	_, eng0 := c.shardLeader(0)
	leaseRef := c.runningOn(0, parentWF, "parent", "parents")
	lease := &leaseRef

	var once sync.Once
	hit := make(chan struct{})
	switch kill {
	case "source":
		// The first delivery is applied on the target, then its answer
		// never comes back: the source's leader dies before it can
		// acknowledge.
		c.mu.Lock()
		c.deliverHook = func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool) {
			first := false
			once.Do(func() { first = true })
			if !first {
				return nil, nil, false
			}
			_, err := c.applyDeliver(ctx, to, d)
			close(hit)
			<-c.live()[from].ctx.Done() // until the test kills the node
			return nil, errors.Join(errors.New("connection reset"), err), true
		}
		c.mu.Unlock()
	case "target":
		// The target's leader applies the first delivery and dies before
		// it answers.
		c.mu.Lock()
		c.deliverHook = func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool) {
			first := false
			once.Do(func() { first = true })
			if !first {
				return nil, nil, false
			}
			if _, err := c.applyDeliver(ctx, to, d); err != nil {
				t.Errorf("the first delivery: %v", err)
			}
			c.kill(to)
			close(hit)
			return nil, errors.New("connection reset by peer"), true
		}
		c.mu.Unlock()
	}

	create := engine.CreateJob{Header: engine.Header{RequestID: "start-child"}, WorkflowID: childWF, Type: "child", Queue: "kids",
		ParentID: lease.Job, ParentStep: "s1", ParentLease: lease}
	type answer struct {
		res *engine.CreateResult
		err error
	}
	first := make(chan answer, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := eng0.Create(cctx, create)
		first <- answer{res, err}
	}()
	var (
		res *engine.CreateResult
		err error
	)
	switch kill {
	case "source":
		<-hit
		c.kill("n1")
		a := <-first
		if a.err == nil {
			t.Fatalf("the create on the killed leader answered %+v", a.res)
		}
		// The caller retries with the same request id at the shard's new
		// leader, which delivers the entry again and acknowledges it.
		_, eng0 = c.shardLeader(0)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for {
			res, err = eng0.Create(cctx, create)
			if !errors.Is(err, engine.ErrNotLeader) {
				break
			}
			_, eng0 = c.shardLeader(0)
		}
		if err != nil {
			t.Fatalf("the retried create: %v", err)
		}
	default:
		a := <-first
		if a.err != nil {
			t.Fatalf("the create: %v", a.err)
		}
		res = a.res
		if kill == "target" {
			<-hit
		}
	}
	if res.Job == 0 || engine.ShardOfJob(res.Job) != 1 || res.WorkflowID != childWF || res.Delivery != nil {
		t.Fatalf("the create answered %+v, want a job of shard 1 named %q", res, childWF)
	}

	// The child runs on shard 1 and completes.
	_, eng1 := c.shardLeader(1)
	var kids []engine.ClaimedJob
	for len(kids) == 0 {
		kids, err = eng1.Claim(ctx, engine.Claim{Queue: "kids", Owner: "kw", LeaseMS: 600_000, Max: 1})
		if errors.Is(err, engine.ErrNotLeader) {
			_, eng1 = c.shardLeader(1)
			continue
		}
		if err != nil || len(kids) != 1 || kids[0].Job != res.Job {
			t.Fatalf("claim the child: %v %v", kids, err)
		}
	}
	if _, err := eng1.Complete(ctx, engine.Complete{LeaseRef: engine.LeaseRef{Job: res.Job, Attempt: kids[0].Attempt, Token: kids[0].LeaseToken},
		Result: []byte(`"done"`)}); err != nil {
		t.Fatal(err)
	}

	// The child's end reaches the parent, and nothing stays pending.
	c.await("the child's result on its parent's step, and no entry pending", func() bool {
		if !c.nothingPending(ctx) {
			return false
		}
		_, e0 := c.shardLeaderNow(0)
		if e0 == nil {
			return false
		}
		eff, err := e0.Effect(engine.WithStaleRead(ctx), lease.Job, "s1")
		return err == nil && eff != nil
	})
	_, eng0 = c.shardLeader(0)
	eff, err := eng0.Effect(ctx, lease.Job, "s1")
	if err != nil || string(eff.Payload) != `"done"` || eff.Failed {
		t.Fatalf("the parent's effect of s1: %+v %v", eff, err)
	}
	hist, err := eng0.History(ctx, lease.Job, 0, 100)
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
		t.Fatalf("the parent's history records the effect of s1 %d times, want once: %+v", recorded, hist.Events)
	}
	_, eng1 = c.shardLeader(1)
	runs := 0
	if err := eng1.View(ctx, func(r *storage.Reader) error {
		return r.Scan(storage.RunsPrefix(childWF), nil, false, func([]byte, []byte) (bool, error) { runs++; return true, nil })
	}); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Fatalf("the child's workflow id has %d runs on shard 1, want 1", runs)
	}
	c.verifyShards()
	c.verifyAcross()
}

// verifyAcross runs machine.VerifyAcrossShards over the shards' leaders'
// stores (after verifyShards: every replica holds one state).
func (c *testHosts) verifyAcross() {
	c.t.Helper()
	errs := machine.VerifyAcrossShards(c.shards, func(k int, fn func(r *storage.Reader) error) error {
		// A leader, waited for: a restored cluster's leaders may be
		// moving to their places (the balancer) when the check begins.
		id, _ := c.shardLeader(k)
		if n := c.live()[id].Shard(k); n != nil {
			return n.fsm.View(fn)
		}
		return errors.New("no leader")
	}, 10)
	for _, err := range errs {
		c.t.Errorf("across shards: %v", err)
	}
}

// nothingPending reports whether no live replica of any shard holds an
// outbox entry or a sending mark (each read as the replica stands).
func (c *testHosts) nothingPending(ctx context.Context) bool {
	for _, h := range c.live() {
		for k := range c.shards {
			n := h.Shard(k)
			if n == nil {
				continue
			}
			pending := 0
			err := n.Engine().View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
				es, err := machine.PendingEntries(r, 0)
				pending = len(es)
				if err != nil {
					return err
				}
				return r.Scan(storage.SendingPrefix, nil, true, func([]byte, []byte) (bool, error) { pending++; return true, nil })
			})
			if err != nil || pending > 0 {
				return false
			}
		}
	}
	return true
}

// shardLeaderNow returns shard k's leader among the live hosts, or nil.
// atLeader runs fn on the engine of shard k's leader, again at the next
// leader while it answers not-leader: on a loaded machine a leader the
// test just found may lose its leadership before fn's command reaches it.
// fn's commands carry request ids, so a try the old leader applied anyway
// is answered again, not applied twice.
func (c *testHosts) atLeader(k int, fn func(eng *embedded.Engine) error) {
	c.t.Helper()
	for tries := 0; ; tries++ {
		_, eng := c.shardLeader(k)
		err := fn(eng)
		if err == nil {
			return
		}
		if !errors.Is(err, engine.ErrNotLeader) || tries == 100 {
			c.t.Fatal(err)
		}
	}
}

func (c *testHosts) shardLeaderNow(k int) (string, *embedded.Engine) {
	for id, h := range c.live() {
		if n := h.Shard(k); n != nil && n.IsLeader() {
			return id, n.Engine()
		}
	}
	return "", nil
}

// TestCrossShardChildRefused: the child's shard refuses the create (its
// workflow id has an open run and the policy rejects duplicates); the
// refusal is recorded there as the entry's outcome, acknowledged, and the
// create answers it, matching the sentinel; nothing stays pending.
func TestCrossShardChildRefused(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	ctx := context.Background()
	parentWF, childWF := keyOn("parent-", 0, 2), keyOn("child-", 1, 2)
	_, eng1 := c.shardLeader(1)
	if _, err := eng1.Create(ctx, engine.CreateJob{WorkflowID: childWF, Type: "other", Queue: "kids"}); err != nil {
		t.Fatal(err)
	}
	_, eng0 := c.shardLeader(0)
	leaseRef := c.runningOn(0, parentWF, "parent", "parents")
	lease := &leaseRef
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := eng0.Create(cctx, engine.CreateJob{WorkflowID: childWF, Type: "child", Queue: "kids", ReusePolicy: engine.IDReuseRejectDuplicate,
		ParentID: lease.Job, ParentStep: "s1", ParentLease: lease})
	if !errors.Is(err, engine.ErrWorkflowExists) {
		t.Fatalf("a child whose workflow id is taken on its shard: %v, want ErrWorkflowExists", err)
	}
	var rec *engine.DeliveredRecord
	if err := eng1.View(ctx, func(r *storage.Reader) error {
		b, err := r.Get(storage.DeliveredKey(0, 1))
		if err != nil {
			return err
		}
		rec, err = machine.DecodeDelivered(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if rec.Answer.Error == "" || rec.Answer.Outcome != "workflow_exists" {
		t.Fatalf("the delivered record: %+v, want the refusal", rec.Answer)
	}
	c.verifyShards()
	c.verifyAcross()
}

// TestDeliveriesInOrderAfterFailures: while the target's node cannot be
// reached, three children's creates wait in the parent shard's outbox and
// the deliverer keeps trying only the first (one pair's entries go in
// order); once it is reached, they are delivered in the order written, each
// once, and every create answers its child.
func TestDeliveriesInOrderAfterFailures(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	ctx := context.Background()
	_, eng0 := c.shardLeader(0)
	leaseRef := c.runningOn(0, keyOn("parent-", 0, 2), "parent", "parents")
	lease := &leaseRef
	var mu sync.Mutex
	reachable := false
	var tried, delivered []uint64
	failedTwice := make(chan struct{})
	c.mu.Lock()
	c.deliverHook = func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		if !reachable {
			tried = append(tried, d.Seq)
			if len(tried) == 2 {
				close(failedTwice)
			}
			return nil, errors.New("connection refused"), true
		}
		delivered = append(delivered, d.Seq)
		return nil, nil, false
	}
	c.mu.Unlock()
	type answer struct {
		res *engine.CreateResult
		err error
	}
	answers := make(chan answer, 3)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The three creates are written one after the other, so their entries
	// are 1, 2, 3.
	for i := 1; i <= 3; i++ {
		create := engine.CreateJob{WorkflowID: keyOn(fmt.Sprintf("kid%d-", i), 1, 2), Type: "child", Queue: "kids",
			ParentID: lease.Job, ParentStep: fmt.Sprintf("s%d", i), ParentLease: lease}
		written := make(chan struct{})
		go func() {
			res, err := eng0.Create(cctx, create)
			answers <- answer{res, err}
		}()
		c.await(fmt.Sprintf("entry %d written", i), func() bool {
			var es []*engine.OutboxEntry
			_ = eng0.View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
				var err error
				es, err = machine.PendingEntries(r, 0)
				return err
			})
			if len(es) == i {
				close(written)
				return true
			}
			return false
		})
		<-written
	}
	<-failedTwice
	mu.Lock()
	reachable = true
	for _, s := range tried {
		if s != 1 {
			t.Errorf("while the target was unreachable the deliverer tried entry %d, not only the first: %v", s, tried)
		}
	}
	mu.Unlock()
	for range 3 {
		a := <-answers
		if a.err != nil || engine.ShardOfJob(a.res.Job) != 1 {
			t.Fatalf("a create: %+v, %v", a.res, a.err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != 3 || delivered[0] != 1 || delivered[1] != 2 || delivered[2] != 3 {
		t.Fatalf("delivered %v, want [1 2 3]", delivered)
	}
}

// TestHungTargetHoldsOnlyItsPair: while deliveries to shard 1 hang (a
// partitioned node: each try waits), a child on shard 2 of the same parent
// is still created at once; released, the child on shard 1 is created too.
func TestHungTargetHoldsOnlyItsPair(t *testing.T) {
	c := newTestHosts(t, 3, 3)
	c.awaitDesiredLeaders()
	ctx := context.Background()
	_, eng0 := c.shardLeader(0)
	leaseRef := c.runningOn(0, keyOn("parent-", 0, 3), "parent", "parents")
	lease := &leaseRef
	release := make(chan struct{})
	hung := make(chan struct{}, 16)
	c.mu.Lock()
	c.deliverHook = func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool) {
		if d.Target != 1 {
			return nil, nil, false
		}
		select {
		case <-release:
			return nil, nil, false
		default:
		}
		hung <- struct{}{}
		<-release
		return nil, errors.New("i/o timeout"), true
	}
	c.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := eng0.Create(cctx, engine.CreateJob{WorkflowID: keyOn("kid-a-", 1, 3), Type: "child", Queue: "kids",
			ParentID: lease.Job, ParentStep: "a", ParentLease: lease})
		first <- err
	}()
	<-hung // the delivery to shard 1 is stuck
	res, err := eng0.Create(cctx, engine.CreateJob{WorkflowID: keyOn("kid-b-", 2, 3), Type: "child", Queue: "kids",
		ParentID: lease.Job, ParentStep: "b", ParentLease: lease})
	if err != nil || engine.ShardOfJob(res.Job) != 2 {
		t.Fatalf("the child on shard 2 while shard 1's deliveries hang: %+v, %v", res, err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the child on shard 1 once released: %v", err)
	}
	c.verifyShards()
	c.verifyAcross()
}

// A node that holds no replica of a delivery's target shard knows only
// the placement's desired leader of it, which keeps its place while its
// node is down. Such a node's deliveries go on to the target's other
// replicas (a real node forwards to the leader; here only the leader's
// replica takes them): a child started from a shard that node leads is
// created while the target's desired leader stays down. Before, the
// deliverer retried the down node until it came back.
func TestDeliveryReachesATargetWhoseDesiredLeaderIsDown(t *testing.T) {
	const shards = 4
	c := newTestHosts(t, 4, shards)
	c.awaitDesiredLeaders()
	p := c.live()["n1"].Placement()
	source, target := -1, -1
	for s := 0; s < shards && source < 0; s++ {
		for k := range shards {
			if k != s && !slices.Contains(p.Groups[k].Replicas, p.Groups[s].Leader) {
				source, target = s, k
				break
			}
		}
	}
	if source < 0 {
		t.Fatalf("every shard's leader holds a replica of every other shard: %+v", p.Groups)
	}
	down := p.Groups[target].Leader
	lease := c.runningOn(source, keyOn("parent-", source, shards), "parent", "parents")
	c.kill(down)
	c.shardLeader(target) // a new leader of the target, on another node
	if id, _ := c.live()[p.Groups[source].Leader].ShardLeader(target); id != down {
		t.Fatalf("the source's leader knows %q as the target's leader, want the desired %q (the case this test is for)", id, down)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	childWF := keyOn("child-", target, shards)
	create := engine.CreateJob{Header: engine.Header{RequestID: "start-child"}, WorkflowID: childWF, Type: "child",
		Queue: "kids", ParentID: lease.Job, ParentStep: "s1", ParentLease: &lease}
	var res *engine.CreateResult
	var err error
	for {
		// Asked again, under its request id, at the next leader should
		// the source's leadership move on the way.
		_, eng := c.shardLeader(source)
		if res, err = eng.Create(ctx, create); !errors.Is(err, engine.ErrNotLeader) {
			break
		}
	}
	if err != nil {
		t.Fatalf("starting a child on shard %d while its desired leader %s is down: %v", target, down, err)
	}
	if engine.ShardOfJob(res.Job) != target || res.WorkflowID != childWF {
		t.Fatalf("the create answered %+v, want a job of shard %d named %q", res, target, childWF)
	}
	c.await("the delivery acknowledged", func() bool { return c.nothingPending(ctx) })
}
