package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// onShard runs op against the engine of shard k's leader, whichever live
// node that is, retrying while leadership moves, a replica closes or an
// outcome is unknown. Commands carry request ids, so a retry of a command
// that was in fact applied returns the first result.
func (c *testHosts) onShard(k int, op func(e *embedded.Engine) error) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := engine.ErrNotLeader
		for _, h := range c.live() {
			if n := h.Shard(k); n != nil && n.IsLeader() {
				err = op(n.Engine())
				break
			}
		}
		retry := errors.Is(err, engine.ErrNotLeader) || errors.Is(err, engine.ErrUnknownOutcome) || errors.Is(err, engine.ErrClosed)
		if !retry {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader of shard %d took the command: %w", k, err)
		}
		c.nextChange(50 * time.Millisecond)
	}
}

// nextChange waits for the next commit, leader change or placement change
// of any live node, or d at most (a retry after a refusal no event follows).
func (c *testHosts) nextChange(d time.Duration) {
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(d))}}
	for _, h := range c.live() {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.ShardsChanged())})
	}
	reflect.Select(cases)
}

// metaLeader waits for the metadata group's leader, once it has written
// the cluster's placement, and returns it.
func (c *testHosts) metaLeader() *Host {
	c.t.Helper()
	var l *Host
	c.await("a metadata leader", func() bool {
		for _, h := range c.live() {
			if id, _ := h.metaLeader(); id == h.ID() && h.metaFS.placement() != nil {
				l = h
				return true
			}
		}
		return false
	})
	return l
}

// moveLoad is a workload on one shard: runs created, and a worker that
// claims each, commits a step and completes it, counting its completions
// by job.
type moveLoad struct {
	c     *testHosts
	shard int
	mu    sync.Mutex
	jobs  []engine.JobID
	done  map[engine.JobID]int
	errs  chan error
	stop  chan struct{}
	wg    sync.WaitGroup
	n     int // runs created so far
	total int // runs the workload creates
}

func startMoveLoad(c *testHosts, shard, before, total int) *moveLoad {
	l := &moveLoad{c: c, shard: shard, done: map[engine.JobID]int{}, errs: make(chan error, 4), stop: make(chan struct{}), total: total}
	l.create(before)
	l.wg.Add(1)
	go l.work()
	return l
}

// create creates n more runs on the shard.
func (l *moveLoad) create(n int) {
	for range n {
		l.mu.Lock()
		i := l.n
		l.n++
		l.mu.Unlock()
		wf := keyOn(fmt.Sprintf("move-%d-", i), l.shard, l.c.shards)
		err := l.c.onShard(l.shard, func(e *embedded.Engine) error {
			res, err := e.Create(context.Background(), engine.CreateJob{Header: engine.Header{RequestID: "create-" + wf}, WorkflowID: wf, Type: "t", Queue: "q"})
			if err == nil {
				l.mu.Lock()
				if !slices.Contains(l.jobs, res.Job) {
					l.jobs = append(l.jobs, res.Job)
				}
				l.mu.Unlock()
			}
			return err
		})
		if err != nil {
			l.errs <- fmt.Errorf("create %s: %w", wf, err)
			return
		}
	}
}

func (l *moveLoad) completed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done)
}

// work claims, commits and completes until every run of the workload is
// complete.
func (l *moveLoad) work() {
	defer l.wg.Done()
	ctx := context.Background()
	for i := 0; ; i++ {
		l.mu.Lock()
		finished := len(l.done) == l.total
		l.mu.Unlock()
		if finished {
			return
		}
		var js []engine.ClaimedJob
		err := l.c.onShard(l.shard, func(e *embedded.Engine) error {
			var err error
			js, err = e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: fmt.Sprintf("claim-%d", i)}, Queue: "q", Owner: "worker", Max: 1, LeaseMS: 600_000})
			return err
		})
		if err != nil {
			l.errs <- fmt.Errorf("claim: %w", err)
			return
		}
		if len(js) == 0 {
			l.c.nextChange(50 * time.Millisecond)
			continue
		}
		j := js[0]
		ref := j.Lease()
		for _, op := range []func(e *embedded.Engine) error{
			func(e *embedded.Engine) error {
				_, err := e.CommitStep(ctx, engine.CommitStep{Header: engine.Header{RequestID: fmt.Sprintf("commit-%d", j.Job)},
					LeaseRef: ref, Step: "1", Type: "activity_completed", Payload: []byte("done")})
				return err
			},
			func(e *embedded.Engine) error {
				_, err := e.Complete(ctx, engine.Complete{Header: engine.Header{RequestID: fmt.Sprintf("complete-%d", j.Job)}, LeaseRef: ref})
				return err
			},
		} {
			if err := l.c.onShard(l.shard, op); err != nil {
				l.errs <- fmt.Errorf("job %d: %w", j.Job, err)
				return
			}
		}
		l.mu.Lock()
		l.done[j.Job]++
		l.mu.Unlock()
	}
}

// finish waits for the worker and checks that every run completed exactly
// once: one completion acknowledged, one job_completed event in its
// history, as the shard's leader reads it.
func (l *moveLoad) finish(t *testing.T) {
	t.Helper()
	wait := make(chan struct{})
	go func() { l.wg.Wait(); close(wait) }()
	select {
	case err := <-l.errs:
		t.Fatal(err)
	case <-wait:
	}
	select {
	case err := <-l.errs:
		t.Fatal(err)
	default:
	}
	if len(l.jobs) != l.total {
		t.Fatalf("%d runs created, want %d", len(l.jobs), l.total)
	}
	for _, j := range l.jobs {
		if l.done[j] != 1 {
			t.Errorf("run %d completed %d times by the worker, want once", j, l.done[j])
		}
		err := l.c.onShard(l.shard, func(e *embedded.Engine) error {
			page, err := e.History(context.Background(), j, 0, 1000)
			if err != nil {
				return err
			}
			ends := 0
			for _, ev := range page.Events {
				if ev.Type == engine.EventJobCompleted {
					ends++
				}
			}
			if ends != 1 {
				return fmt.Errorf("run %d has %d job_completed events, want 1", j, ends)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}

// shardMembers returns shard k's Raft configuration as its leader holds
// it: each member's id and whether it votes.
func (c *testHosts) shardMembers(k int) map[string]bool {
	c.t.Helper()
	var out map[string]bool
	err := c.onShard(k, func(*embedded.Engine) error {
		for _, h := range c.live() {
			n := h.Shard(k)
			if n == nil || !n.IsLeader() {
				continue
			}
			f := n.raft.GetConfiguration()
			if err := f.Error(); err != nil {
				return err
			}
			out = map[string]bool{}
			for _, s := range f.Configuration().Servers {
				out[string(s.ID)] = s.Suffrage == raft.Voter
			}
			return nil
		}
		return engine.ErrNotLeader
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// awaitMoveEnd waits until every live node applied a placement in which
// shard k moved moves times and no move is under way, and returns it.
func (c *testHosts) awaitMoveEnd(k int, moves uint32) Placement {
	c.t.Helper()
	var p Placement
	c.await(fmt.Sprintf("shard %d's move %d ended everywhere", k, moves), func() bool {
		for _, h := range c.live() {
			p = h.Placement()
			if g := p.Groups[k]; g.Move != nil || g.Moves != moves {
				return false
			}
		}
		return true
	})
	return p
}

// TestHostMoveReplicaWhileRunsAreActive: on 4 nodes with 3 replicas a
// shard's replica moves off its leader to the node that held none, then a
// follower's replica moves back, while a worker claims, commits and
// completes the shard's runs and more are created. Every run completes
// exactly once, the group's members and the placement end as asked, the
// leaving node removes its replica, and every replica verifies.
func TestHostMoveReplicaWhileRunsAreActive(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders()
	meta := c.metaLeader()
	ctx := context.Background()

	// Bad requests are refused, naming what is wrong.
	for _, bad := range []struct {
		shard    int
		from, to string
	}{{2, "n1", "n4"}, {-1, "n1", "n4"}, {0, "n9", "n4"}, {0, "n1", "n9"}, {0, "n1", "n2"}, {0, "n4", "n1"}, {0, "n1", "n1"}} {
		if _, err := meta.MoveReplica(ctx, bad.shard, bad.from, bad.to); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("MoveReplica(%d, %s, %s): %v, want ErrInvalidCommand", bad.shard, bad.from, bad.to, err)
		}
	}
	for _, h := range c.live() {
		if h != meta {
			if _, err := h.MoveReplica(ctx, 0, "n1", "n4"); !errors.Is(err, engine.ErrNotLeader) {
				t.Fatalf("a follower of the metadata group moved a replica: %v", err)
			}
			break
		}
	}

	// Shard 0 is on n1, n2, n3, led by n1; n4 holds none of it.
	if p := meta.Placement(); !reflect.DeepEqual(p.Groups[0].Replicas, []string{"n1", "n2", "n3"}) || p.Groups[0].Leader != "n1" {
		t.Fatalf("shard 0 placed %+v", p.Groups[0])
	}
	load := startMoveLoad(c, 0, 30, 60)
	c.await("ten runs completed", func() bool { return load.completed() >= 10 })
	before := meta.PlacementVersion()
	v, err := meta.MoveReplica(ctx, 0, "n1", "n4")
	if err != nil || v != before+1 {
		t.Fatalf("MoveReplica: version %d, %v; want %d", v, err, before+1)
	}
	if _, err := meta.MoveReplica(ctx, 0, "n2", "n4"); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a second move of shard 0 while one is under way: %v", err)
	}
	if again, err := meta.MoveReplica(ctx, 0, "n1", "n4"); err != nil || again != v {
		t.Fatalf("the same move asked again: version %d, %v; want %d", again, err, v)
	}
	load.create(30) // runs created while the replica moves
	p := c.awaitMoveEnd(0, 1)
	if g := p.Groups[0]; !reflect.DeepEqual(g.Replicas, []string{"n4", "n2", "n3"}) || g.Leader != "n4" {
		t.Fatalf("shard 0 placed %+v after the move, want replicas [n4 n2 n3] led by n4", g)
	}
	if got := c.shardMembers(0); !reflect.DeepEqual(got, map[string]bool{"n2": true, "n3": true, "n4": true}) {
		t.Fatalf("shard 0's group is %v after the move, want voters n2, n3, n4", got)
	}
	c.await("n1 closed its replica of shard 0 and removed its directory and its log", func() bool {
		_, err := os.Stat(c.live()["n1"].shardDir(0))
		return c.live()["n1"].Shard(0) == nil && errors.Is(err, os.ErrNotExist) && !groupStored(c.live()["n1"].log, 1)
	})
	c.await("shard 0 led by n4", func() bool { return c.leaders()[0] == "n4" })

	// A follower's replica moves back to n1, the runs still going.
	if _, err := meta.MoveReplica(ctx, 0, "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	p = c.awaitMoveEnd(0, 2)
	if g := p.Groups[0]; !reflect.DeepEqual(g.Replicas, []string{"n4", "n2", "n1"}) || g.Leader != "n4" {
		t.Fatalf("shard 0 placed %+v after the second move", g)
	}
	if got := c.shardMembers(0); !reflect.DeepEqual(got, map[string]bool{"n1": true, "n2": true, "n4": true}) {
		t.Fatalf("shard 0's group is %v after the second move", got)
	}
	load.finish(t)
	c.verifyShards()
}

// TestHostMoveResumesAfterItsDriverStops: shard 0's leader, n1, is also
// the node its replica moves off; it is stopped once it added n4 as a
// non-voter, while runs go on. The next leader resumes the move where it
// stopped (n4 caught up and made a voter, n1 removed, the end committed);
// n1, restarted, learns the end from the metadata group and removes its
// replica; every run completes once and every replica verifies.
func TestHostMoveResumesAfterItsDriverStops(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders()
	reached := make(chan struct{}, 1)
	hook := func(ctx context.Context, node string, shard int, step string) {
		if node == "n1" && shard == 0 && step == "nonvoter" {
			select {
			case reached <- struct{}{}:
			default:
			}
			<-ctx.Done() // held until n1 stops
		}
	}
	moveStepHook.Store(&hook)
	t.Cleanup(func() { moveStepHook.Store(nil) })

	load := startMoveLoad(c, 0, 20, 40)
	c.await("five runs completed", func() bool { return load.completed() >= 5 })
	if _, err := c.metaLeader().MoveReplica(context.Background(), 0, "n1", "n4"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		t.Fatal("n1 never added n4 to shard 0's group")
	}
	c.kill("n1")
	load.create(20)
	c.awaitMoveEnd(0, 1)
	if got := c.shardMembers(0); !reflect.DeepEqual(got, map[string]bool{"n2": true, "n3": true, "n4": true}) {
		t.Fatalf("shard 0's group is %v after the move, want voters n2, n3, n4", got)
	}
	n1 := c.start("n1", false)
	c.await("n1 applied the move's end and removed its replica", func() bool {
		_, err := os.Stat(n1.shardDir(0))
		return n1.Placement().Groups[0].Moves == 1 && n1.Shard(0) == nil && errors.Is(err, os.ErrNotExist) && !groupStored(n1.log, 1)
	})
	load.finish(t)
	c.verifyShards()
}

// TestHostReplacedMachineCatchesUp: n4, which holds shard 1 from the start
// and shard 0 by a move, loses its directory and starts again with the
// cluster's peers and shards, as a new machine in its place does
// (docs/operations.md, "Replace a machine of a sharded cluster"): it
// learns the placement from the metadata group, opens both shards, and
// their leaders catch it up; every replica verifies.
func TestHostReplacedMachineCatchesUp(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders()
	ctx := context.Background()
	for k := range 2 {
		if err := c.onShard(k, func(e *embedded.Engine) error {
			_, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: fmt.Sprint("before-", k)}, WorkflowID: keyOn("before-", k, 2), Type: "t", Queue: "q"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.metaLeader().MoveReplica(ctx, 0, "n1", "n4"); err != nil {
		t.Fatal(err)
	}
	c.awaitMoveEnd(0, 1)
	c.kill("n4")
	if err := os.RemoveAll(c.dirs["n4"]); err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		if err := c.onShard(k, func(e *embedded.Engine) error {
			_, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: fmt.Sprint("while-", k)}, WorkflowID: keyOn("while-", k, 2), Type: "t", Queue: "q"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	n4 := c.start("n4", true)
	c.await("n4 holding shards 0 and 1 again", func() bool {
		return n4.Placement().Groups[0].Moves == 1 && n4.Shard(0) != nil && n4.Shard(1) != nil && n4.Ready(ctx) == nil
	})
	c.verifyShards()
}

// TestHostJoinsAndTakesAReplica: a fourth node joins a cluster of three
// (started with Join, then added by an admin through the metadata group's
// leader), learns the placement from the metadata group, and then takes
// shard 0's replica off the shard's leader while runs go on.
func TestHostJoinsAndTakesAReplica(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	ctx := context.Background()
	n4 := PlacementNode{ID: "n4", RaftAddr: freeAddr(t), HTTPAddr: "http-n4"}
	c.peers = append(c.peers, n4)
	c.dirs["n4"] = filepath.Join(t.TempDir(), "n4")
	cfg := c.config("n4", false)
	cfg.Join, cfg.Shards = true, 2
	h4, err := OpenHost(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.hosts["n4"] = h4
	c.mu.Unlock()

	meta := c.metaLeader()
	if _, err := meta.MoveReplica(ctx, 0, "n1", "n4"); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a move to a node not added yet: %v", err)
	}
	if _, err := meta.AddNode(ctx, PlacementNode{ID: "n1", RaftAddr: n4.RaftAddr}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("adding a node whose id is taken: %v", err)
	}
	v, err := meta.AddNode(ctx, n4)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := meta.AddNode(ctx, n4); err != nil || again != v {
		t.Fatalf("adding the same node again: %d, %v; want %d", again, err, v)
	}
	c.awaitPlacement(v)
	c.await("n4 a voter of the metadata group, knowing its leader", func() bool {
		st, err := h4.Status(ctx)
		if err != nil || st.LeaderID == "" {
			return false
		}
		for _, m := range st.Members {
			if m.ID == "n4" {
				return m.Voter
			}
		}
		return false
	})
	if p4 := h4.Placement(); len(p4.Nodes) != 4 || len(p4.ShardsOf("n4")) != 0 {
		t.Fatalf("n4's placement: %+v", p4)
	}

	load := startMoveLoad(c, 0, 20, 40)
	c.await("five runs completed", func() bool { return load.completed() >= 5 })
	if _, err := meta.MoveReplica(ctx, 0, "n1", "n4"); err != nil {
		t.Fatal(err)
	}
	load.create(20)
	p := c.awaitMoveEnd(0, 1)
	if g := p.Groups[0]; !reflect.DeepEqual(g.Replicas, []string{"n4", "n2", "n3"}) || g.Leader != "n4" {
		t.Fatalf("shard 0 placed %+v", g)
	}
	load.finish(t)
	c.verifyShards()

	// Restarted from its directory, without Join, n4 is a node as any.
	c.kill("n4")
	c.start("n4", false)
	c.awaitDesiredLeaders()
}

// TestHostReadyWhileAReplicaArrives: the node a replica moves to opens the
// shard's group empty, which knows no leader until the shard's leader adds
// it; the node stays ready meanwhile (its other shards serve), and the
// move then ends.
func TestHostReadyWhileAReplicaArrives(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders()
	reached, release := make(chan struct{}, 1), make(chan struct{})
	hook := func(ctx context.Context, node string, shard int, step string) {
		if shard == 0 && step == "start" {
			select {
			case reached <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	moveStepHook.Store(&hook)
	t.Cleanup(func() { moveStepHook.Store(nil) })
	ctx := context.Background()
	if _, err := c.metaLeader().MoveReplica(ctx, 0, "n1", "n4"); err != nil {
		t.Fatal(err)
	}
	n4 := c.live()["n4"]
	c.await("n4 opened shard 0's group", func() bool { return n4.Shard(0) != nil })
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		t.Fatal("the move's driver never started")
	}
	if err := n4.Shard(0).Ready(ctx); err == nil {
		t.Fatal("shard 0's empty replica on n4 says it is ready before it joined the group")
	}
	if err := n4.Ready(ctx); err != nil {
		t.Fatalf("n4, receiving a replica, is not ready: %v", err)
	}
	close(release)
	c.awaitMoveEnd(0, 1)
	c.await("n4 ready with shard 0", func() bool { return n4.Ready(ctx) == nil })
}

// TestHostJoinWithAnotherShardCount: a node joining with a shard count
// other than the cluster's is not ready, and says why, rather than opening
// shards by the wrong count.
func TestHostJoinWithAnotherShardCount(t *testing.T) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	n4 := PlacementNode{ID: "n4", RaftAddr: freeAddr(t), HTTPAddr: "http-n4"}
	c.peers = append(c.peers, n4)
	c.dirs["n4"] = filepath.Join(t.TempDir(), "n4")
	cfg := c.config("n4", false)
	cfg.Join, cfg.Shards = true, 3
	h4, err := OpenHost(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.hosts["n4"] = h4
	c.mu.Unlock()
	if _, err := c.metaLeader().AddNode(context.Background(), n4); err != nil {
		t.Fatal(err)
	}
	c.await("n4 saying it has the wrong shard count", func() bool {
		err := h4.Ready(context.Background())
		return err != nil && strings.Contains(err.Error(), "the cluster has 2 shards, but this node was started with 3")
	})
}

// TestHostMoveEndsWhenTheMetadataLeaderStops: the metadata group's leader
// stops while shard 1's leader carries a move out (held after adding the
// arriving node); the shard's leader commits the move's end through the
// next metadata leader, asked over a host call when it is another node.
func TestHostMoveEndsWhenTheMetadataLeaderStops(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders() // shard 1 on n2, n3, n4, led by n2
	ctx := context.Background()
	meta := c.metaLeader()
	for meta.ID() == "n2" || meta.ID() == "n1" {
		// The metadata leader to stop must be neither the shard's leader
		// nor the node the replica moves to.
		if err := meta.TransferLeader(ctx); err != nil {
			t.Fatal(err)
		}
		c.await("another metadata leader", func() bool { id, _ := meta.metaLeader(); return id != "" && id != meta.ID() })
		meta = c.metaLeader()
	}
	reached, release := make(chan struct{}, 1), make(chan struct{})
	hook := func(ctx context.Context, node string, shard int, step string) {
		if shard == 1 && step == "nonvoter" {
			select {
			case reached <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	moveStepHook.Store(&hook)
	t.Cleanup(func() { moveStepHook.Store(nil) })
	load := startMoveLoad(c, 1, 10, 20)
	if _, err := meta.MoveReplica(ctx, 1, "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		t.Fatal("shard 1's leader never added n1")
	}
	stopped := meta.ID()
	c.kill(stopped)
	close(release)
	load.create(10)
	p := c.awaitMoveEnd(1, 1)
	if g := p.Groups[1]; !reflect.DeepEqual(g.Replicas, []string{"n2", "n1", "n4"}) || g.Leader != "n2" {
		t.Fatalf("shard 1 placed %+v after the move", g)
	}
	if got := c.shardMembers(1); !reflect.DeepEqual(got, map[string]bool{"n1": true, "n2": true, "n4": true}) {
		t.Fatalf("shard 1's group is %v after the move", got)
	}
	c.start(stopped, false)
	load.finish(t)
	c.verifyShards()
}

// TestHostRemovesANode: a node that holds a replica cannot be removed
// (the error names the shards to move); once its replicas moved away it
// is removed from the nodes and from the metadata group, it says it is
// not ready because it was removed, and the other nodes serve on.
func TestHostRemovesANode(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders()
	ctx := context.Background()
	meta := c.metaLeader()
	p0 := c.live()["n4"].Placement()
	held := p0.ShardsOf("n4")
	if len(held) == 0 {
		t.Fatal("n4 holds no replica to begin with")
	}
	if _, err := meta.RemoveNode(ctx, "n4"); !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), "move them to other nodes first") {
		t.Fatalf("removing n4, which holds replicas of %v: %v", held, err)
	}
	if _, err := meta.RemoveNode(ctx, "n9"); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("removing an unknown node: %v", err)
	}
	for _, k := range held {
		p := c.live()["n4"].Placement()
		to := ""
		for _, n := range []string{"n1", "n2", "n3"} {
			if !slices.Contains(p.Groups[k].Replicas, n) {
				to = n
			}
		}
		if _, err := c.metaLeader().MoveReplica(ctx, k, "n4", to); err != nil {
			t.Fatal(err)
		}
		c.awaitMoveEnd(k, p.Groups[k].Moves+1)
	}
	v, err := c.metaLeader().RemoveNode(ctx, "n4")
	if err != nil {
		t.Fatal(err)
	}
	c.awaitPlacement(v)
	c.await("n4 out of the metadata group", func() bool {
		st, err := c.metaLeader().Status(ctx)
		if err != nil {
			return false
		}
		for _, m := range st.Members {
			if m.ID == "n4" {
				return false
			}
		}
		return len(st.Members) == 3
	})
	if p := c.live()["n1"].Placement(); len(p.Nodes) != 3 || slices.ContainsFunc(p.Nodes, func(n PlacementNode) bool { return n.ID == "n4" }) {
		t.Fatalf("the placement after the removal: %+v", p.Nodes)
	}
	c.await("n4 applied its removal and says so", func() bool {
		err := c.live()["n4"].Ready(ctx)
		return errors.Is(err, ErrNotReady) && strings.Contains(err.Error(), "removed")
	})
	// Removing n4 may have moved the metadata group's leadership (n4 led
	// it, or stepped down last): a proposal that meets the move has an
	// unknown outcome, or finds no leader, and is asked again of the next
	// leader, at the next change.
	for tries := 1; ; tries++ {
		_, err := c.metaLeader().RemoveNode(ctx, "n4")
		if (errors.Is(err, engine.ErrUnknownOutcome) || errors.Is(err, engine.ErrNotLeader)) && tries < 60 {
			c.nextChange(time.Second)
			continue
		}
		if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), "removed already") {
			t.Fatalf("removing n4 again: %v", err)
		}
		break
	}
	c.kill("n4")
	for _, id := range []string{"n1", "n2", "n3"} {
		c.await(id+" ready without n4", func() bool { return c.live()[id].Ready(ctx) == nil })
	}
	c.verifyShards()
}

// TestHostCancelsAMoveToADeadNode: a move of shard 0's replica to n4,
// which is down, waits for n4 to catch up; cancelled, the shard's leader
// takes n4 out of the group again and the move ends with the replicas as
// they were, the shard serving throughout. A second cancel finds no move;
// n4, started again, opens no replica of shard 0.
func TestHostCancelsAMoveToADeadNode(t *testing.T) {
	c := newTestHosts(t, 4, 2)
	c.awaitDesiredLeaders()
	ctx := context.Background()
	c.kill("n4")
	meta := c.metaLeader()
	if _, err := meta.CancelMove(ctx, 0); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("cancelling with no move under way: %v", err)
	}
	if _, err := meta.MoveReplica(ctx, 0, "n1", "n4"); err != nil {
		t.Fatal(err)
	}
	c.await("n4 added to shard 0's group as a non-voter, its catch-up waited for", func() bool {
		voter, in := c.shardMembers(0)["n4"]
		return in && !voter
	})
	v, err := c.metaLeader().CancelMove(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.metaLeader().CancelMove(ctx, 0); err != nil && !errors.Is(err, engine.ErrInvalidCommand) || err == nil && again != v {
		t.Fatalf("cancelling again: %d, %v; want %d, or no move left", again, err, v)
	}
	p := c.awaitMoveEnd(0, 0)
	if g := p.Groups[0]; !reflect.DeepEqual(g.Replicas, []string{"n1", "n2", "n3"}) || g.Leader != "n1" {
		t.Fatalf("shard 0 placed %+v after the cancel, want its replicas as they were", g)
	}
	if got := c.shardMembers(0); !reflect.DeepEqual(got, map[string]bool{"n1": true, "n2": true, "n3": true}) {
		t.Fatalf("shard 0's group is %v after the cancel, want voters n1, n2, n3", got)
	}
	if _, err := c.metaLeader().CancelMove(ctx, 0); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("cancelling a cancelled move: %v", err)
	}
	if err := c.onShard(0, func(e *embedded.Engine) error {
		_, err := e.Create(ctx, engine.CreateJob{WorkflowID: keyOn("after-cancel-", 0, 2), Type: "t", Queue: "q"})
		return err
	}); err != nil {
		t.Fatalf("shard 0 after the cancel: %v", err)
	}
	n4 := c.start("n4", false)
	c.await("n4 applied the cancel, holding shard 1 and not shard 0", func() bool {
		g := n4.Placement().Groups[0]
		return g.Move == nil && n4.Shard(0) == nil && n4.Shard(1) != nil
	})
	c.verifyShards()
}
