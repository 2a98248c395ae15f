package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func TestClusterReplicatesAndFollowersRefuseWrites(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	l := c.leader()
	for i := 0; i < 20; i++ {
		if _, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := l.Engine().Claim(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 5, LeaseMS: 60_000})
	if err != nil || len(jobs) != 5 {
		t.Fatalf("claim = %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		ref := j.Lease()
		if _, err := l.Engine().CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: "1", Type: "activity_completed", Payload: []byte("ok")}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Engine().Complete(ctx, engine.Complete{LeaseRef: ref}); err != nil {
			t.Fatal(err)
		}
	}
	c.assertSameState()
	c.verifyAll()

	for id, n := range c.live() {
		if n == l {
			continue
		}
		_, err := n.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"})
		var nl *engine.NotLeaderError
		if !errors.As(err, &nl) || nl.LeaderID != l.ID() || nl.LeaderHTTP != "http-"+l.ID() {
			t.Fatalf("%s: write on a follower = %v, want NotLeaderError naming %s at http-%s", id, err, l.ID(), l.ID())
		}
		// A linearizable read on a follower is refused the same way; a
		// stale read answers from the follower's own state.
		if _, err := n.Engine().Describe(ctx, engine.Target{Job: jobs[0].Job}); !errors.Is(err, engine.ErrNotLeader) {
			t.Fatalf("%s: linearizable read on a follower = %v, want ErrNotLeader", id, err)
		}
		j, err := n.Engine().Describe(engine.WithStaleRead(ctx), engine.Target{Job: jobs[0].Job})
		if err != nil || j.Status != engine.StatusCompleted {
			t.Fatalf("%s: stale read = %+v, %v", id, j, err)
		}
	}
}

// TestConcurrentProposalsShareEntries checks that concurrent proposals are
// packed into fewer log entries than commands, and each caller still gets
// its own result.
func TestConcurrentProposalsShareEntries(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.leader()
	before := l.raft.LastIndex()
	const n = 200
	errs := make(chan error, n)
	ids := make(chan engine.JobID, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			r, err := l.Engine().Create(context.Background(), engine.CreateJob{Type: "t", Queue: "q", WorkflowID: fmt.Sprintf("wf-%d", i)})
			if err == nil {
				ids <- r.Job
			}
			errs <- err
		}(i)
	}
	seen := map[engine.JobID]bool{}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(ids)
	for id := range ids {
		if seen[id] {
			t.Fatalf("job id %d answered twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct jobs, want %d", len(seen), n)
	}
	entries := l.raft.LastIndex() - before
	t.Logf("%d commands in %d log entries", n, entries)
	if entries >= n {
		t.Fatalf("%d commands took %d log entries: proposals were not packed", n, entries)
	}
	c.assertSameState()
}

// A claimer waiting on an empty queue proposes nothing while other queues
// change: it looks at the local ready index first, so an idle worker costs
// no Raft entries. It claims as soon as its queue gets a job.
func TestWaitingClaimProposesNothingWhileIdle(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.DisableScheduler = true })
	l := c.leader()
	ctx := context.Background()
	got := make(chan []engine.ClaimedJob, 1)
	before := l.ProposedCommands()
	go func() {
		jobs, err := l.Engine().ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil {
			t.Error(err)
		}
		got <- jobs
	}()
	for i := 0; i < 2; i++ { // each wakes the claimer, which must not propose
		if _, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "other"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	jobs := <-got
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	if n := l.ProposedCommands() - before; n != 4 {
		t.Fatalf("%d commands proposed, want 4 (three creates and the one claim that found the job)", n)
	}
}
