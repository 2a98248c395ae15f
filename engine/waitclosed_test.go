package engine

import (
	"context"
	"testing"
)

// WaitClosed on one job is woken by writes to that job only: commits to
// other jobs leave its waiter asleep (with many runs waiting for results,
// each commit wakes one reader, not all), and the job's completion wakes it.
func TestWaitClosedWakesOnlyForItsJob(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx := context.Background()
	a, _ := e.Create(ctx, CreateJob{Type: "t", Queue: "a"})
	b, _ := e.Create(ctx, CreateJob{Type: "t", Queue: "b"})
	done := make(chan *Job, 1)
	go func() {
		j, err := e.WaitClosed(ctx, Target{Job: a.Job})
		if err != nil {
			t.Error(err)
		}
		done <- j
	}()
	waiter := func() <-chan struct{} {
		e.commitMu.Lock()
		defer e.commitMu.Unlock()
		if ws := e.jobWaiters[a.Job]; len(ws) == 1 {
			return ws[0]
		}
		return nil
	}
	var ch <-chan struct{}
	eventually(t, "WaitClosed registered on job a", func() bool { ch = waiter(); return ch != nil })

	// Job b is claimed, signalled and completed: a's waiter sleeps on.
	jobs, _ := e.Claim(ctx, Claim{Queue: "b", Owner: "w", Max: 1, LeaseMS: 60_000})
	if _, err := e.Complete(ctx, Complete{LeaseRef: LeaseRef{Job: b.Job, Attempt: jobs[0].Attempt}}); err != nil {
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

	jobs, _ = e.Claim(ctx, Claim{Queue: "a", Owner: "w", Max: 1, LeaseMS: 60_000})
	if _, err := e.Complete(ctx, Complete{LeaseRef: LeaseRef{Job: a.Job, Attempt: jobs[0].Attempt}}); err != nil {
		t.Fatal(err)
	}
	if j := <-done; j == nil || j.Status != StatusCompleted {
		t.Fatalf("WaitClosed = %+v, want job a completed", j)
	}
	if waiter() != nil {
		t.Fatal("a waiter is left registered after WaitClosed returned")
	}
}
