package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// do runs op against whichever node leads, retrying while leadership moves
// or an outcome is unknown. Commands carry request ids, so a retry of a
// command that was in fact applied returns the first result.
func (c *testCluster) do(op func(e *embedded.Engine) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var l *Node
		for _, n := range c.live() {
			if n.IsLeader() {
				l = n
			}
		}
		var err error
		if l == nil {
			err = engine.ErrNotLeader
		} else {
			err = op(l.Engine())
		}
		retry := errors.Is(err, engine.ErrNotLeader) || errors.Is(err, engine.ErrUnknownOutcome) || errors.Is(err, engine.ErrClosed)
		if !retry {
			return err // nil included
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader took the command: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLeaderKilledDuringClaimsAndCommits kills the leader while a worker
// streams claims and step commits. A new leader is elected, every write
// that was acknowledged is on every surviving node, no job was held by two
// live attempts, and the worker that held a job before the failover is
// fenced out once the job has been reclaimed and claimed again.
func TestLeaderKilledDuringClaimsAndCommits(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	const jobs = 60
	for i := 0; i < jobs; i++ {
		req := fmt.Sprintf("create-%d", i)
		if err := c.do(func(e *embedded.Engine) error {
			_, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: req}, Type: "t", Queue: "q", WorkflowID: fmt.Sprintf("wf-%d", i)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	// The job held across the failover by a worker that then goes quiet.
	var held engine.ClaimedJob
	if err := c.do(func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-held"}, Queue: "q", Owner: "old-worker", Max: 1, LeaseMS: 10_000})
		if err == nil && len(js) == 1 {
			held = js[0]
		} else if err == nil {
			err = errors.New("nothing to claim")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}

	// A worker streams claim, commit, complete; each acknowledged commit is
	// recorded.
	type ack struct {
		job     engine.JobID
		attempt uint64
	}
	var mu sync.Mutex
	var committed []ack
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			var js []engine.ClaimedJob
			err := c.do(func(e *embedded.Engine) error {
				var err error
				js, err = e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: fmt.Sprintf("claim-%d", i)}, Queue: "q", Owner: "worker", Max: 1, LeaseMS: 60_000})
				return err
			})
			if err != nil {
				done <- err
				return
			}
			if len(js) == 0 {
				done <- nil
				return
			}
			j := js[0]
			ref := j.Lease()
			err = c.do(func(e *embedded.Engine) error {
				_, err := e.CommitStep(ctx, engine.CommitStep{Header: engine.Header{RequestID: fmt.Sprintf("commit-%d", i)},
					LeaseRef: ref, Step: "1", Type: "activity_completed", Payload: []byte("done")})
				return err
			})
			if err != nil {
				done <- fmt.Errorf("commit job %d: %w", j.Job, err)
				return
			}
			mu.Lock()
			committed = append(committed, ack{j.Job, j.Attempt})
			mu.Unlock()
			err = c.do(func(e *embedded.Engine) error {
				_, err := e.Complete(ctx, engine.Complete{Header: engine.Header{RequestID: fmt.Sprintf("complete-%d", i)}, LeaseRef: ref})
				return err
			})
			if err != nil {
				done <- fmt.Errorf("complete job %d: %w", j.Job, err)
				return
			}
		}
	}()
	// Kill the leader once the worker is under way.
	c.eventually("ten commits", func() bool { mu.Lock(); defer mu.Unlock(); return len(committed) >= 10 })
	old := c.leader()
	oldID := old.ID()
	c.kill(oldID)
	newLeader := c.leader()
	if newLeader.ID() == oldID {
		t.Fatal("the killed node still leads")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(stop)

	// Every acknowledged commit is on both survivors.
	c.waitConverged()
	mu.Lock()
	acks := append([]ack(nil), committed...)
	mu.Unlock()
	if len(acks) != jobs-1 {
		t.Fatalf("%d jobs committed, want %d", len(acks), jobs-1)
	}
	for id, n := range c.live() {
		for _, a := range acks {
			eff, err := n.Engine().Effect(engine.WithStaleRead(ctx), a.job, "1")
			if err != nil || eff == nil {
				t.Fatalf("%s: acknowledged commit of job %d missing: %v", id, a.job, err)
			}
		}
	}
	c.assertSameState()
	c.verifyAll()

	// The held job: its lease expires on the clock, the new leader reclaims
	// it after the failover grace, a new worker claims it, and the old
	// worker's write is refused.
	c.clock.Advance(30 * time.Second)
	var again engine.ClaimedJob
	c.eventually("the held job reclaimed and claimed again", func() bool {
		err := c.do(func(e *embedded.Engine) error {
			js, err := e.Claim(ctx, engine.Claim{Queue: "q", Owner: "new-worker", Max: 1, LeaseMS: 60_000})
			if err == nil && len(js) == 1 {
				again = js[0]
			}
			return err
		})
		return err == nil && again.Job != 0
	})
	if again.Job != held.Job || again.Attempt <= held.Attempt {
		t.Fatalf("claimed job %d attempt %d after the failover, want job %d with an attempt above %d", again.Job, again.Attempt, held.Job, held.Attempt)
	}
	err := c.do(func(e *embedded.Engine) error {
		_, err := e.CommitStep(ctx, engine.CommitStep{LeaseRef: held.Lease(),
			Step: "1", Type: "activity_completed", Payload: []byte("late")})
		return err
	})
	if !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("old worker's commit after the failover = %v, want ErrStaleAttempt", err)
	}

	// The killed node restarts on its directory and catches up.
	c.start(oldID, false)
	c.assertSameState()
	c.verifyAll()
}
