package embedded

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

// WaitClosed on one job is woken by that job's close only: commits to
// other jobs leave its waiter asleep (with many runs waiting for results,
// each commit wakes one reader, not all), so do writes to the job that do
// not close it (a run's turns before its end), and the job's completion
// wakes it.
func TestWaitClosedWakesOnlyForItsJob(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx := context.Background()
	a, _ := e.Create(ctx, engine.CreateJob{Type: "t", Queue: "a"})
	if _, err := e.Create(ctx, engine.CreateJob{Type: "t", Queue: "b"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *engine.Job, 1)
	go func() {
		j, err := e.WaitClosed(ctx, engine.Target{Job: a.Job})
		if err != nil {
			t.Error(err)
		}
		done <- j
	}()
	waiter := func() <-chan struct{} {
		e.commitMu.Lock()
		defer e.commitMu.Unlock()
		if ws := e.closeWaiters[a.Job]; len(ws) == 1 {
			return ws[0]
		}
		return nil
	}
	var ch <-chan struct{}
	eventually(t, "WaitClosed registered on job a", func() bool { ch = waiter(); return ch != nil })

	// Job b is claimed, signalled and completed: a's waiter sleeps on.
	jobs, _ := e.Claim(ctx, engine.Claim{Queue: "b", Owner: "w", Max: 1, LeaseMS: 60_000})
	if _, err := e.Complete(ctx, engine.Complete{LeaseRef: jobs[0].Lease()}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("writes to job b woke the waiter on job a")
	default:
	}
	if waiter() != ch {
		t.Fatal("the waiter on job a was replaced without a write to a")
	}

	// Job a is claimed and heartbeaten: its record is written twice, and
	// it is still open, so its waiter sleeps on.
	jobs, _ = e.Claim(ctx, engine.Claim{Queue: "a", Owner: "w", Max: 1, LeaseMS: 60_000})
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs of queue a, want 1", len(jobs))
	}
	if _, err := e.Heartbeat(ctx, engine.Heartbeat{Leases: []engine.LeaseRef{jobs[0].Lease()}, LeaseMS: 60_000}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("writes that left job a open woke its waiter")
	default:
	}
	if waiter() != ch {
		t.Fatal("the waiter on job a was replaced before a closed")
	}
	if _, err := e.Complete(ctx, engine.Complete{LeaseRef: jobs[0].Lease()}); err != nil {
		t.Fatal(err)
	}
	if j := <-done; j == nil || j.Status != engine.StatusCompleted {
		t.Fatalf("WaitClosed = %+v, want job a completed", j)
	}
	if waiter() != nil {
		t.Fatal("a waiter is left registered after WaitClosed returned")
	}
}

// A run the engine times out is closed: WaitClosed returns it, by job id and
// by workflow id, when the scheduler fires its deadline on time.
func TestWaitClosedReturnsATimedOutRun(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(3_000_000))
	e, err := Open(Config{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.Create(ctx, engine.CreateJob{WorkflowID: "slow", Type: "t", Queue: "nobody-polls", ExecutionTimeoutMS: 2_000})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *engine.Job, 2)
	for _, tgt := range []engine.Target{{Job: r.Job}, {WorkflowID: "slow"}} {
		go func() {
			j, err := e.WaitClosed(ctx, tgt)
			if err != nil {
				t.Error(err)
			}
			done <- j
		}()
	}
	eventually(t, "scheduler sleeps until the deadline", func() bool { return clk.Pending() == 1 })
	clk.Advance(1_999 * time.Millisecond)
	eventually(t, "scheduler sleeps again", func() bool { return clk.Pending() == 1 })
	select {
	case j := <-done:
		t.Fatalf("WaitClosed returned %+v before the deadline", j)
	default:
	}
	clk.Advance(time.Millisecond)
	for range 2 {
		select {
		case j := <-done:
			if j == nil || j.Status != engine.StatusTimedOut || j.ClosedMS != 3_002_000 {
				t.Fatalf("WaitClosed = %+v, want the run timed out at 3002000", j)
			}
		case <-ctx.Done():
			t.Fatal("WaitClosed did not return when the run timed out")
		}
	}
}

// WaitClosed on a job id answers a final end (every end but Failed) from
// the applied state without the read barrier: such an end never changes,
// so the barrier could not change the answer, and on a cluster each
// barrier is a heartbeat round of the run's group. A wait that finds the
// job open passes the barrier once, at its first look (as a node that
// lost its leadership must refuse to wait, and a lagging one must not
// answer "not found"), and not again when the close wakes it. Failed,
// which a requeue reopens, and a missing job are read behind the barrier,
// as is every job once the node is closing.
func TestWaitClosedAsksTheBarrierOnlyWhenItMatters(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx := context.Background()
	var barriers atomic.Int64
	var refuse atomic.Bool
	errNotLeader := errors.New("not the leader")
	e.barrier = func(context.Context) error {
		barriers.Add(1)
		if refuse.Load() {
			return errNotLeader
		}
		return nil
	}
	claim := func(queue string) engine.LeaseRef {
		t.Helper()
		jobs, err := e.Claim(ctx, engine.Claim{Queue: queue, Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim %s: %d jobs, %v", queue, len(jobs), err)
		}
		return jobs[0].Lease()
	}
	wait := func(id engine.JobID) (*engine.Job, int64, error) {
		before := barriers.Load()
		j, err := e.WaitClosed(ctx, engine.Target{Job: id})
		return j, barriers.Load() - before, err
	}

	done, _ := e.Create(ctx, engine.CreateJob{Type: "t", Queue: "done"})
	if _, err := e.Complete(ctx, engine.Complete{LeaseRef: claim("done")}); err != nil {
		t.Fatal(err)
	}
	j, n, err := wait(done.Job)
	if err != nil || j.Status != engine.StatusCompleted || n != 0 {
		t.Fatalf("a completed job: %v, %v after %d barriers, want Completed after 0", j, err, n)
	}
	refuse.Store(true)
	if j, n, err = wait(done.Job); err != nil || j.Status != engine.StatusCompleted || n != 0 {
		t.Fatalf("a completed job on a node that leads no more: %v, %v after %d barriers, want Completed after 0", j, err, n)
	}

	open, _ := e.Create(ctx, engine.CreateJob{Type: "t", Queue: "open"})
	if _, _, err := wait(open.Job); !errors.Is(err, errNotLeader) {
		t.Fatalf("an open job on a node that leads no more: %v, want the barrier's refusal", err)
	}
	refuse.Store(false)
	type answer struct {
		j   *engine.Job
		n   int64
		err error
	}
	got := make(chan answer, 1)
	before := barriers.Load()
	go func() {
		j, err := e.WaitClosed(ctx, engine.Target{Job: open.Job})
		got <- answer{j, barriers.Load() - before, err}
	}()
	eventually(t, "the wait sleeps on the open job", func() bool {
		e.commitMu.Lock()
		defer e.commitMu.Unlock()
		return len(e.closeWaiters[open.Job]) == 1
	})
	if _, err := e.Complete(ctx, engine.Complete{LeaseRef: claim("open")}); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.err != nil || a.j.Status != engine.StatusCompleted || a.n != 1 {
		t.Fatalf("an open job that completes: %v, %v after %d barriers, want Completed after 1", a.j, a.err, a.n)
	}

	failed, _ := e.Create(ctx, engine.CreateJob{Type: "t", Queue: "failed"})
	if _, err := e.Fail(ctx, engine.Fail{LeaseRef: claim("failed")}); err != nil {
		t.Fatal(err)
	}
	if j, n, err := wait(failed.Job); err != nil || j.Status != engine.StatusFailed || n != 1 {
		t.Fatalf("a failed job: %v, %v after %d barriers, want Failed after 1", j, err, n)
	}
	refuse.Store(true)
	if _, _, err := wait(failed.Job); !errors.Is(err, errNotLeader) {
		t.Fatalf("a failed job on a node that leads no more: %v, want the barrier's refusal (a requeue may have reopened it)", err)
	}
	if _, n, err := wait(failed.Job + 1000); !errors.Is(err, errNotLeader) || n != 1 {
		t.Fatalf("a job this node does not hold: %v after %d barriers, want the barrier's refusal after 1", err, n)
	}

	// A node closing (StopWaiting) wakes its waiters, which pass the
	// barrier again: it refuses, and they leave for the shard's leader
	// instead of sleeping on a store no commit will wake.
	refuse.Store(false)
	last, _ := e.Create(ctx, engine.CreateJob{Type: "t", Queue: "last"})
	left := make(chan error, 1)
	go func() {
		_, err := e.WaitClosed(ctx, engine.Target{Job: last.Job})
		left <- err
	}()
	eventually(t, "the wait sleeps on the last job", func() bool {
		e.commitMu.Lock()
		defer e.commitMu.Unlock()
		return len(e.closeWaiters[last.Job]) == 1
	})
	refuse.Store(true)
	e.StopWaiting()
	if err := <-left; !errors.Is(err, errNotLeader) {
		t.Fatalf("a wait woken by StopWaiting: %v, want the barrier's refusal", err)
	}
}
