package embedded

import (
	"context"
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
