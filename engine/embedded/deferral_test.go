package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Through an Engine and its scheduler, with a manual clock: a deferred job
// is invisible to MayHaveReady, so a waiting ClaimWait proposes nothing
// while it is deferred; the scheduler releases it exactly at its time, and
// the ClaimWait of a claimer that runs it wakes and takes it.
func TestDeferredJobIsReleasedOnTimeAndWakesClaimers(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(7_000_000))
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, db)
	var e *Engine
	var sched *Scheduler
	local, err := NewLocalLog(LocalLogConfig{DB: db, Clock: clk, OnCommit: func(touched, closed []uint64) {
		e.NotifyCommitted(touched, closed)
		sched.Wake()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, local)
	log := &countingLog{inner: local}
	if e, err = New(Backend{Log: log, Store: db}); err != nil {
		t.Fatal(err)
	}
	sched = NewScheduler(log, db, clk, 0)
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = sched.Run(ctx); close(done) }() // it ends with ctx's error, the test's own doing
	defer func() { cancel(); <-done }()

	job, err := e.Create(bg, engine.CreateJob{Type: "b", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := propose[*engine.ClaimResult](bg, e, &engine.Claim{Queue: "q", Owner: "w-a", Max: 1, LeaseMS: 1000, Types: []string{"a"}})
	if err != nil || len(r.Deferred) != 1 {
		t.Fatalf("deferring claim = %+v, %v", r, err)
	}
	if ready, err := e.MayHaveReady("q"); err != nil || ready {
		t.Fatalf("MayHaveReady with only a deferred job = %v, %v", ready, err)
	}
	claims := func() int {
		n := 0
		for _, k := range log.proposed() {
			if k == engine.KindClaim {
				n++
			}
		}
		return n
	}
	before := claims()
	got := make(chan []engine.ClaimedJob, 1)
	go func() {
		jobs, err := e.ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "w-b", Max: 1, LeaseMS: 1000, Types: []string{"b"}})
		if err != nil {
			t.Error(err)
		}
		got <- jobs
	}()
	eventually(t, "scheduler sleeps until the release", func() bool { return clk.Pending() == 1 })
	clk.Advance(999 * time.Millisecond)
	eventually(t, "scheduler sleeps again", func() bool { return clk.Pending() == 1 })
	select {
	case jobs := <-got:
		t.Fatalf("claimed %+v before the release", jobs)
	default:
	}
	if n := claims() - before; n != 0 {
		t.Fatalf("the waiting claimer proposed %d claims while the job was deferred, want none", n)
	}
	clk.Advance(time.Millisecond)
	select {
	case jobs := <-got:
		if len(jobs) != 1 || jobs[0].Job != job.Job {
			t.Fatalf("claimed %+v, want job %d", jobs, job.Job)
		}
	case <-ctx.Done():
		t.Fatal("the claimer was not woken by the release")
	}
	var errs []error
	viewOK(t, db, func(r *storage.Reader) error { errs = machine.Verify(r, 5); return nil })
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}
