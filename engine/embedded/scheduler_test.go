package embedded

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// countingLog records what the scheduler proposes.
type countingLog struct {
	inner Log
	mu    sync.Mutex
	kinds []engine.CommandKind
}

func (c *countingLog) Propose(ctx context.Context, cmd engine.Command) (engine.Result, error) {
	c.mu.Lock()
	c.kinds = append(c.kinds, cmd.Kind())
	c.mu.Unlock()
	return c.inner.Propose(ctx, cmd)
}

func (c *countingLog) proposed() []engine.CommandKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]engine.CommandKind(nil), c.kinds...)
}

// eventually waits for cond, which background goroutines make true; it fails
// only if cond never holds (the bound is generous, not a timing assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never happened: %s", what)
}

// The scheduler sleeps until the earliest deadline in the indexes and
// proposes exactly when it is due: nothing while the clock stands still,
// one proposal when it reaches the deadline.
func TestSchedulerProposesExactlyWhenDue(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	clk := clock.NewManual(start)
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, db)
	var sched *Scheduler
	local, err := NewLocalLog(LocalLogConfig{DB: db, Clock: clk, OnCommit: func(_, _ []uint64) {
		if sched != nil {
			sched.Wake()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, local)
	log := &countingLog{inner: local}
	sched = NewScheduler(log, db, clk, 10)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { _ = sched.Run(ctx); close(done) }() // Run returns ctx's error alone
	defer func() { cancel(); <-done }()

	id := local.mustCreate(t)
	c, _ := local.Propose(bg, &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
	ref := engine.LeaseRef{Job: id, Attempt: c.(*engine.ClaimResult).Jobs[0].Attempt}
	if _, err := local.Propose(bg, &engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{TimerID: "t", TimerAtMS: start.UnixMilli() + 10_000}, SeenSeq: 2}); err != nil {
		t.Fatal(err)
	}
	// With only a timer 10 s away, the scheduler holds one timer for it.
	eventually(t, "scheduler sleeps on one timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(9_999 * time.Millisecond)
	eventually(t, "scheduler sleeps again", func() bool { return clk.Pending() == 1 })
	if p := log.proposed(); len(p) != 0 {
		t.Fatalf("proposed %v before the deadline", p)
	}
	clk.Advance(time.Millisecond)
	eventually(t, "timer fired", func() bool { return jobStatus(t, db, id) == engine.StatusQueued })
	if p := log.proposed(); len(p) != 1 || p[0] != engine.KindFireTimers {
		t.Fatalf("proposed %v, want one FireTimers", p)
	}
}

// A clock that reads between two milliseconds (a test clock moved a few
// nanoseconds, as a test environment's delayed callback does) still wakes
// the scheduler when it is moved exactly to a deadline's millisecond: the
// scheduler sleeps until the deadline's instant, not for whole milliseconds
// counted from the millisecond now falls in, which would end its sleep the
// fraction after the deadline.
func TestSchedulerWakesAtADeadlineFromBetweenMilliseconds(t *testing.T) {
	startMS := int64(1_000_000)
	clk := clock.NewManual(time.UnixMilli(startMS))
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, db)
	local, err := NewLocalLog(LocalLogConfig{DB: db, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, local)
	id := local.mustCreate(t)
	c, _ := local.Propose(bg, &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
	ref := engine.LeaseRef{Job: id, Attempt: c.(*engine.ClaimResult).Jobs[0].Attempt}
	dueMS := startMS + 10_000
	if _, err := local.Propose(bg, &engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{TimerID: "t", TimerAtMS: dueMS}, SeenSeq: 2}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Nanosecond)
	sched := NewScheduler(local, db, clk, 10)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { _ = sched.Run(ctx); close(done) }() // Run returns ctx's error alone
	defer func() { cancel(); <-done }()
	eventually(t, "scheduler sleeps on one timer", func() bool { return clk.Pending() == 1 })
	clk.Set(time.UnixMilli(dueMS))
	eventually(t, "timer fired at its millisecond", func() bool { return jobStatus(t, db, id) == engine.StatusQueued })
}

func (l *LocalLog) mustCreate(t *testing.T) engine.JobID {
	t.Helper()
	r, err := l.Propose(bg, &engine.CreateJob{Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	return r.(*engine.CreateResult).Job
}

func jobStatus(t *testing.T, db *storage.DB, id engine.JobID) engine.Status {
	var s engine.Status
	viewOK(t, db, func(r *storage.Reader) error {
		j, err := machine.ReadJob(r, id)
		if err != nil {
			t.Error(err)
			return err
		}
		s = j.Status
		return nil
	})
	return s
}

// Through the Engine: the scheduler fires timers, reclaims an expired lease,
// releases a retry delay, and leaves a waiting job alone.
func TestEngineSchedulerDrivesDeadlines(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(5_000_000))
	e, err := Open(Config{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	mk := func(wf string) (engine.JobID, engine.LeaseRef) {
		r, err := e.Create(bg, engine.CreateJob{WorkflowID: wf, Type: "t", Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 5_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v %v", jobs, err)
		}
		return r.Job, jobs[0].Lease()
	}
	timerJob, tref := mk("timer")
	if _, err := e.Wait(bg, engine.Wait{LeaseRef: tref, Spec: engine.WaitSpec{TimerID: "t", TimerAtMS: clk.Now().UnixMilli() + 3_000}, SeenSeq: 2}); err != nil {
		t.Fatal(err)
	}
	leased, _ := mk("leased")
	waiting, wref := mk("waiting")
	if _, err := e.Wait(bg, engine.Wait{LeaseRef: wref, Spec: engine.WaitSpec{Signals: []string{"never"}}, SeenSeq: 2}); err != nil {
		t.Fatal(err)
	}
	retry, rref := mk("retry")
	if _, err := e.Requeue(bg, engine.Requeue{LeaseRef: rref, DelayMS: 4_000}); err != nil {
		t.Fatal(err)
	}
	status := func(id engine.JobID) engine.Status {
		j, err := e.Describe(bg, engine.Target{Job: id})
		if err != nil {
			t.Fatal(err)
		}
		return j.Status
	}
	clk.Advance(3 * time.Second)
	eventually(t, "timer job queued", func() bool { return status(timerJob) == engine.StatusQueued })
	clk.Advance(time.Second)
	eventually(t, "retry released", func() bool { return status(retry) == engine.StatusQueued })
	clk.Advance(time.Second)
	eventually(t, "expired lease reclaimed", func() bool { return status(leased) == engine.StatusQueued })
	clk.Advance(24 * time.Hour)
	// Two claims later the reclaimed/released jobs run again; the waiting one
	// was never reclaimed however far the clock moved.
	eventually(t, "scheduler idle", func() bool { return clk.Pending() <= 1 })
	if s := status(waiting); s != engine.StatusWaiting {
		t.Fatalf("waiting job is %s", s)
	}
	var errs []error
	viewOK(t, e.DB(), func(r *storage.Reader) error { errs = machine.Verify(r, 5); return nil })
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}

// History and List page with cursors and filter by status, type and queue.
func TestHistoryAndListPaging(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	for i := 0; i < 7; i++ {
		typ, q := "a", "q1"
		if i%2 == 1 {
			typ, q = "b", "q2"
		}
		if _, err := e.Create(bg, engine.CreateJob{Type: typ, Queue: q}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		if _, err := e.Signal(bg, engine.Signal{Target: engine.Target{Job: 1}, Name: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []uint64
	for after := uint64(0); ; {
		p, err := e.History(bg, 1, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range p.Events {
			seqs = append(seqs, ev.Seq)
		}
		if p.Next == 0 {
			break
		}
		after = p.Next
	}
	if len(seqs) != 6 || seqs[0] != 1 || seqs[5] != 6 {
		t.Fatalf("paged history seqs %v, want 1..6", seqs)
	}
	if _, err := e.History(bg, 99, 0, 0); !errorsIs(err, engine.ErrUnknownJob) {
		t.Fatalf("history of unknown job: %v", err)
	}
	// Paged by the first cursor, After: oldest first.
	list := func(q engine.ListQuery) []engine.JobID {
		q.Order = engine.ListStartAsc
		var ids []engine.JobID
		for {
			p, err := e.List(bg, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range p.Jobs {
				ids = append(ids, j.ID)
			}
			if p.Next == 0 {
				return ids
			}
			q.After = p.Next
		}
	}
	eq := func(got []engine.JobID, want ...engine.JobID) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	}
	eq(list(engine.ListQuery{Limit: 2}), 1, 2, 3, 4, 5, 6, 7)
	eq(list(engine.ListQuery{Type: "b", Limit: 2}), 2, 4, 6)
	eq(list(engine.ListQuery{Queue: "q1", Status: engine.StatusQueued, Limit: 3}), 1, 3, 5, 7)
	if _, err := e.Cancel(bg, engine.Cancel{Target: engine.Target{Job: 3}}); err != nil {
		t.Fatal(err)
	}
	eq(list(engine.ListQuery{Status: engine.StatusCancelled}), 3)
	eq(list(engine.ListQuery{Status: engine.StatusQueued, Type: "a"}), 1, 5, 7)
}

// A paging cursor never wraps around: after the largest id or seq there is
// nothing, on every index List may walk, not the first page again.
func TestCursorAtTheTopOfTheRangeGivesAnEmptyPage(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	for range 3 {
		if _, err := e.Create(bg, engine.CreateJob{Type: "a", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []engine.ListQuery{
		{After: math.MaxUint64},
		{After: math.MaxUint64, Status: engine.StatusQueued},
		{After: math.MaxUint64, Type: "a"},
		{After: math.MaxUint64, Queue: "q"},
		{After: math.MaxUint64 - 1},
	} {
		p, err := e.List(bg, q)
		if err != nil || len(p.Jobs) != 0 || p.Next != 0 {
			t.Fatalf("List(%+v) = %+v, %v; want an empty last page", q, p, err)
		}
	}
	for _, after := range []uint64{math.MaxUint64, math.MaxUint64 - 1} {
		p, err := e.History(bg, 1, after, 0)
		if err != nil || len(p.Events) != 0 || p.Next != 0 {
			t.Fatalf("History(after %d) = %+v, %v; want an empty last page", after, p, err)
		}
	}
	if _, err := e.History(bg, 99, math.MaxUint64, 0); !errorsIs(err, engine.ErrUnknownJob) {
		t.Fatalf("history of an unknown job after the last seq: %v, want ErrUnknownJob", err)
	}
}

// A new Raft leader's scheduler holds back lease reclaims until the failover
// grace has passed, even for a lease that expired long ago; timers are not
// held back.
func TestSchedulerReclaimWaitsForFailoverGrace(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	clk := clock.NewManual(start)
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, db)
	local, err := NewLocalLog(LocalLogConfig{DB: db, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, local)
	id := local.mustCreate(t)
	if _, err := local.Propose(bg, &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1_000}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // the lease is long expired when the leader starts

	log := &countingLog{inner: local}
	sched := NewScheduler(log, db, clk, 10)
	sched.ReclaimNotBeforeMS = clk.Now().Add(5 * time.Second).UnixMilli()
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { _ = sched.Run(ctx); close(done) }() // Run returns ctx's error alone
	defer func() { cancel(); <-done }()

	eventually(t, "scheduler sleeps until the grace ends", func() bool { return clk.Pending() == 1 })
	clk.Advance(4_999 * time.Millisecond)
	eventually(t, "scheduler sleeps again", func() bool { return clk.Pending() == 1 })
	if p := log.proposed(); len(p) != 0 {
		t.Fatalf("proposed %v inside the failover grace", p)
	}
	if s := jobStatus(t, db, id); s != engine.StatusRunning {
		t.Fatalf("job is %s inside the grace, want running", s)
	}
	clk.Advance(time.Millisecond)
	eventually(t, "lease reclaimed", func() bool { return jobStatus(t, db, id) == engine.StatusQueued })
	if p := log.proposed(); len(p) != 1 || p[0] != engine.KindReclaim {
		t.Fatalf("proposed %v, want one Reclaim", p)
	}
}

// When many timers fall due at the same instant, the scheduler proposes
// enough FireTimers to take them all at once (the log packs them into one
// commit) rather than one after the other, and deadlines go the same way.
func TestSchedulerProposesSweepsForEverythingDueAtOnce(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	clk := clock.NewManual(start)
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, db)
	var sched *Scheduler
	local, err := NewLocalLog(LocalLogConfig{DB: db, Clock: clk, OnCommit: func(_, _ []uint64) {
		if sched != nil {
			sched.Wake()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, local)
	log := &countingLog{inner: local}
	sched = NewScheduler(log, db, clk, 10) // runs once the jobs are in place
	const n = 25
	due := start.UnixMilli() + 5_000
	for i := 0; i < n; i++ {
		id := local.mustCreate(t)
		c, err := local.Propose(bg, &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil {
			t.Fatal(err)
		}
		ref := engine.LeaseRef{Job: id, Attempt: c.(*engine.ClaimResult).Jobs[0].Attempt}
		if _, err := local.Propose(bg, &engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{TimerID: "t", TimerAtMS: due}, SeenSeq: 2}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 12; i++ { // due at the same instant as the timers
		if _, err := local.Propose(bg, &engine.CreateJob{Type: "t", Queue: "nobody", ExecutionTimeoutMS: 5_000}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { _ = sched.Run(ctx); close(done) }() // it ends with ctx's error, the test's own doing
	defer func() { cancel(); <-done }()

	eventually(t, "scheduler sleeps until the timers", func() bool { return clk.Pending() == 1 })
	clk.Advance(5 * time.Second)
	eventually(t, "every timer fired and every deadline expired", func() bool {
		counts := map[engine.Status]int{}
		viewOK(t, db, func(r *storage.Reader) error {
			for id := engine.JobID(1); id <= n+12; id++ {
				j, err := machine.ReadJob(r, id)
				if err != nil {
					return err
				}
				counts[j.Status]++
			}
			return nil
		})
		return counts[engine.StatusQueued] == n && counts[engine.StatusTimedOut] == 12
	})
	eventually(t, "scheduler idle", func() bool { return clk.Pending() == 1 })
	kinds := map[engine.CommandKind]int{}
	for _, k := range log.proposed() {
		kinds[k]++
	}
	// 25 timers in batches of 10 take 3 sweeps, 12 deadlines 2, proposed
	// together in one round; the lease sweep of the claims' leases has not
	// come due.
	if kinds[engine.KindFireTimers] != 3 || kinds[engine.KindExpireDeadlines] != 2 || len(kinds) != 2 {
		t.Fatalf("proposed %v, want 3 FireTimers and 2 ExpireDeadlines", kinds)
	}
	var errs []error
	viewOK(t, db, func(r *storage.Reader) error { errs = machine.Verify(r, 5); return nil })
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}
