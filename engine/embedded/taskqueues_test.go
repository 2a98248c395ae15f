package embedded

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// openQueueEngine opens an in-memory engine with a manual clock and no
// scheduler, its task queue view on unless off.
func openQueueEngine(t *testing.T, off bool) (*Engine, *clock.Manual) {
	return openQueueEngineWith(t, Config{DisableQueueView: off})
}

// openQueueEngineWith is openQueueEngine with cfg's other fields (its
// metrics).
func openQueueEngineWith(t *testing.T, cfg Config) (*Engine, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.UnixMilli(schedT0))
	cfg.InMemory, cfg.Clock, cfg.DisableScheduler = true, clk, true
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	return e, clk
}

func mustCreate(t *testing.T, e *Engine, wf, typ, queue string) engine.JobID {
	t.Helper()
	r, err := e.Create(bg, engine.CreateJob{WorkflowID: wf, Type: typ, Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	return r.Job
}

func queuedReason(t *testing.T, e *Engine, wf string) *engine.QueuedReason {
	t.Helper()
	r, err := e.QueuedReason(bg, engine.Target{WorkflowID: wf})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A run of a misspelled type and a run on a queue nobody polls are Queued
// for ever; QueuedReason says why, naming what the workers do serve, and
// guesses what was meant.
func TestQueuedReasonForTheTwoStuckRuns(t *testing.T) {
	e, clk := openQueueEngine(t, false)
	mustCreate(t, e, "typo", "OrderWorkflw", "orders")
	mustCreate(t, e, "lost", "OrderWorkflow", "ordres")
	// A worker of "orders" that runs OrderWorkflow and the activity Charge
	// polls: it passes the misspelled run over (defers it).
	claim := engine.Claim{Queue: "orders", Owner: "w1@host", Max: 4, LeaseMS: 30_000,
		Types: []string{"OrderWorkflow", engine.ActivityTypePrefix + "Charge"}, BuildID: "v1.2"}
	jobs, err := e.Claim(bg, claim)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("claim = %v, %v", jobs, err)
	}

	typo := queuedReason(t, e, "typo")
	if typo.Code != engine.QueuedNoPollerForType {
		t.Fatalf("misspelled type: %+v", typo)
	}
	for _, want := range []string{`no poller of task queue "orders" serves workflow type "OrderWorkflw"`,
		"they serve workflow types OrderWorkflow, activity types Charge", `did you mean "OrderWorkflow"?`} {
		if !strings.Contains(typo.Message, want) {
			t.Errorf("misspelled type: %q lacks %q", typo.Message, want)
		}
	}
	lost := queuedReason(t, e, "lost")
	if lost.Code != engine.QueuedNoPoller {
		t.Fatalf("unserved queue: %+v", lost)
	}
	for _, want := range []string{`no worker has polled task queue "ordres" in the last 5m`,
		"queues with pollers: orders", `did you mean "orders"?`} {
		if !strings.Contains(lost.Message, want) {
			t.Errorf("unserved queue: %q lacks %q", lost.Message, want)
		}
	}

	// The poller is listed with what its claim said.
	d, err := e.DescribeTaskQueue(bg, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Pollers) != 1 {
		t.Fatalf("pollers = %+v", d.Pollers)
	}
	p := d.Pollers[0]
	if p.Identity != "w1@host" || p.BuildID != "v1.2" || p.LastAccessMS != schedT0 || p.Polling ||
		fmt.Sprint(p.WorkflowTypes) != "[OrderWorkflow]" || fmt.Sprint(p.ActivityTypes) != "[Charge]" {
		t.Errorf("poller = %+v", p)
	}

	// Six minutes later the worker is gone from the list; the queue still
	// says who polled last, and when.
	clk.Advance(6 * time.Minute)
	gone := queuedReason(t, e, "typo")
	if gone.Code != engine.QueuedNoPoller || !strings.Contains(gone.Message, "the last poll was 6m0s ago, by w1@host") {
		t.Fatalf("after the window: %+v", gone)
	}
}

// A worker that runs the type but does not poll (its slots are busy)
// leaves the run waiting for a free slot; while a poll of it waits, the
// run is about to be claimed.
func TestQueuedReasonNoFreeSlotAndDispatching(t *testing.T) {
	e, clk := openQueueEngine(t, false)
	claim := engine.Claim{Queue: "q", Owner: "busy", Max: 1, LeaseMS: 30_000, Types: []string{"T"}}
	if _, err := e.Claim(bg, claim); err != nil {
		t.Fatal(err)
	}
	clk.Advance(45 * time.Second)
	mustCreate(t, e, "w", "T", "q")
	r := queuedReason(t, e, "w")
	if r.Code != engine.QueuedNoFreeSlot || !strings.Contains(r.Message, "waiting for a free slot") ||
		!strings.Contains(r.Message, "(busy) are all busy; none has polled for 45s") {
		t.Fatalf("no free slot: %+v", r)
	}
	end := e.BeginPoll(claim)
	r = queuedReason(t, e, "w")
	end()
	if r.Code != engine.QueuedDispatching {
		t.Fatalf("while a poll waits: %+v", r)
	}
	if d, _ := e.DescribeTaskQueue(bg, "q"); d.Pollers[0].LastAccessMS != clk.Now().UnixMilli() {
		t.Errorf("a poll that ended now is an access now: %+v", d.Pollers[0])
	}
	// Not Queued: no reason.
	jobs, err := e.Claim(bg, claim)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim = %v, %v", jobs, err)
	}
	if r := queuedReason(t, e, "w"); r.Queued || r.Code != "" {
		t.Errorf("running run: %+v", r)
	}
}

// ClaimWait lists its claimer as polling for as long as it waits, and no
// longer.
func TestClaimWaitIsListedWhilePolling(t *testing.T) {
	e, _ := openQueueEngine(t, false)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := e.ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "waiter", Max: 1, LeaseMS: 1000})
		done <- err
	}()
	polling := func() bool {
		d, err := e.DescribeTaskQueue(bg, "q")
		return err == nil && len(d.Pollers) == 1 && d.Pollers[0].Polling && d.Pollers[0].AnyType
	}
	eventually(t, "the waiting claimer is listed as polling", polling)
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled claim: %v", err)
	}
	if polling() {
		t.Fatal("still polling after ClaimWait returned")
	}
}

// The backlog counts the ready jobs and the delayed ones apart, its age is
// the oldest ready job's, and the rates count what became ready and what
// was claimed over the last minute: with metrics (the view reads the
// Meter's notes) and without (the log notes for the view alone).
func TestDescribeTaskQueueBacklogAndRates(t *testing.T) {
	for _, metered := range []bool{false, true} {
		t.Run(fmt.Sprint("metrics=", metered), func(t *testing.T) {
			var cfg Config
			if metered {
				m, err := metrics.New(prometheus.NewRegistry())
				if err != nil {
					t.Fatal(err)
				}
				cfg.Metrics = m
			}
			testBacklogAndRates(t, cfg)
		})
	}
}

func testBacklogAndRates(t *testing.T, cfg Config) {
	e, clk := openQueueEngineWith(t, cfg)
	for i := range 3 {
		mustCreate(t, e, fmt.Sprint("r", i), "T", "q")
		clk.Advance(10 * time.Second)
	}
	mustCreate(t, e, "other", "U", "q")
	// A claimer that runs T only defers the U job (delayed) and takes one.
	jobs, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 30_000, Types: []string{"T"}})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim = %v, %v", jobs, err)
	}
	d, err := e.DescribeTaskQueue(bg, "q")
	if err != nil {
		t.Fatal(err)
	}
	st := d.Stats
	if st.BacklogCount != 3 || st.DelayedCount != 0 || st.BacklogAgeMS != 20_000 {
		// r1, r2 and U: the claim stopped at its Max before it reached U.
		t.Fatalf("stats = %+v", st)
	}
	if want := 4.0 / 60; st.AddRate != want || st.DispatchRate != 1.0/60 {
		t.Errorf("rates = %v added, %v dispatched; want %v and %v", st.AddRate, st.DispatchRate, want, 1.0/60)
	}
	if _, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 4, LeaseMS: 30_000, Types: []string{"T"}}); err != nil {
		t.Fatal(err)
	}
	d, _ = e.DescribeTaskQueue(bg, "q")
	if d.Stats.BacklogCount != 0 || d.Stats.DelayedCount != 1 || d.Stats.BacklogAgeMS != 0 {
		t.Fatalf("after deferring U: %+v", d.Stats)
	}
	if d.Pollers[0].DispatchRate != 3.0/60 {
		t.Errorf("poller's dispatch rate = %v", d.Pollers[0].DispatchRate)
	}
	clk.Advance(2 * time.Minute)
	d, _ = e.DescribeTaskQueue(bg, "q")
	if d.Stats.AddRate != 0 || d.Stats.DispatchRate != 0 {
		t.Errorf("rates after two idle minutes: %+v", d.Stats)
	}

	l, err := e.ListTaskQueues(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Queues) != 1 || l.Queues[0].Name != "q" || l.Queues[0].Stats.DelayedCount != 1 {
		t.Fatalf("list = %+v", l)
	}
}

// With the view off, claims record nothing and nothing is counted; the
// backlog is still read from the store.
func TestQueueViewOff(t *testing.T) {
	e, _ := openQueueEngine(t, true)
	mustCreate(t, e, "a", "T", "q")
	if _, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000, Types: []string{"U"}}); err != nil {
		t.Fatal(err)
	}
	end := e.BeginPoll(engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000})
	defer end()
	d, err := e.DescribeTaskQueue(bg, "q")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Pollers) != 0 || d.Stats.AddRate != 0 || d.Stats.DelayedCount != 1 || d.NowMS != schedT0 {
		t.Fatalf("view off: %+v", d)
	}
	if e.TaskQueueViews() != nil {
		t.Errorf("views with the view off: %+v", e.TaskQueueViews())
	}
}

// BuildID is the view's, not the log's: the claim the log applies has none.
func TestClaimBuildIDIsNotProposed(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(schedT0))
	e, err := Open(Config{InMemory: true, Clock: clk, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	log := &recordingLog{inner: e.log}
	e.log = log
	if _, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000, BuildID: "b1"}); err != nil {
		t.Fatal(err)
	}
	if len(log.cmds) != 1 || log.cmds[0].(*engine.Claim).BuildID != "" {
		t.Fatalf("proposed %+v", log.cmds)
	}
	if d, _ := e.DescribeTaskQueue(bg, "q"); d.Pollers[0].BuildID != "b1" {
		t.Errorf("poller = %+v", d.Pollers[0])
	}
}

// The view's memory is bounded: pollers past the per-queue bound and
// queues past theirs are forgotten, the least recent first.
func TestTaskQueuesBounds(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(schedT0))
	tq := NewTaskQueues(clk)
	for i := range engine.MaxPollersPerQueue + 5 {
		tq.Claimed(&engine.Claim{Queue: "q", Owner: fmt.Sprint("w", i)}, 0)
		clk.Advance(time.Millisecond)
	}
	v := tq.View("q")
	if len(v.Pollers) != engine.MaxPollersPerQueue || v.Pollers[len(v.Pollers)-1].Identity != "w5" {
		t.Fatalf("%d pollers, the oldest %s", len(v.Pollers), v.Pollers[len(v.Pollers)-1].Identity)
	}
	for i := range engine.MaxTaskQueues + 1 {
		tq.Claimed(&engine.Claim{Queue: fmt.Sprint("q", i), Owner: "w"}, 0)
		clk.Advance(time.Millisecond)
	}
	views := tq.Views()
	if len(views) != engine.MaxTaskQueues {
		t.Fatalf("%d queues", len(views))
	}
	for _, v := range views {
		if v.Name == "q" || v.Name == "q0" {
			t.Errorf("queue %s, the least recently used, is kept", v.Name)
		}
	}
	// A poller naming more types than are kept may run any.
	var types []string
	for i := range maxTypeBytes/100 + 1 {
		types = append(types, fmt.Sprintf("%0100d", i))
	}
	types = append(types, "last")
	tq.Claimed(&engine.Claim{Queue: "big", Owner: "w", Types: types}, 0)
	p := tq.View("big").Pollers[0]
	if !p.TypesTruncated || !p.Serves("last") || len(p.WorkflowTypes) != maxTypeBytes/100 {
		t.Errorf("truncated poller: %d types, truncated %v", len(p.WorkflowTypes), p.TypesTruncated)
	}
}

// recordingLog keeps the commands proposed through it (one goroutine).
type recordingLog struct {
	inner Log
	cmds  []engine.Command
}

func (l *recordingLog) Propose(ctx context.Context, cmd engine.Command) (engine.Result, error) {
	l.cmds = append(l.cmds, cmd)
	return l.inner.Propose(ctx, cmd)
}

// ListTaskQueues names every queue that ever held a job, finished or not,
// and every queue polled lately, in name order, each once.
func TestListTaskQueuesNamesEveryQueue(t *testing.T) {
	e, _ := openQueueEngine(t, false)
	for _, q := range []string{"b", "ab", "a", "c"} {
		mustCreate(t, e, "w-"+q, "T", q)
	}
	jobs, err := e.Claim(bg, engine.Claim{Queue: "c", Owner: "w", Max: 1, LeaseMS: 1000})
	if err != nil || len(jobs) != 1 {
		t.Fatal(jobs, err)
	}
	if _, err := e.Complete(bg, engine.Complete{LeaseRef: jobs[0].Lease()}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Claim(bg, engine.Claim{Queue: "polled-only", Owner: "w", Max: 1, LeaseMS: 1000}); err != nil {
		t.Fatal(err)
	}
	l, err := e.ListTaskQueues(bg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range l.Queues {
		got = append(got, fmt.Sprintf("%s:%d/%d", q.Name, q.Stats.BacklogCount, len(q.Pollers)))
	}
	if want := "[a:1/0 ab:1/0 b:1/0 c:0/1 polled-only:0/1]"; fmt.Sprint(got) != want || l.Truncated {
		t.Errorf("list = %v (truncated %v), want %s", got, l.Truncated, want)
	}
}

// BenchmarkQueueViewCycle: create, claim (ClaimWait, as a worker polls)
// and complete of one job through an in-memory engine (no sync: what is
// left is CPU), with the task queue view on and off. ns/op is one cycle
// of three commands and one poll; the difference is what the view costs
// them: recording the poll and the claim, the notes Apply writes without
// a Meter, and counting what became ready and what was claimed.
//
//	go test ./engine/embedded -run X -bench QueueViewCycle -count 6
func BenchmarkQueueViewCycle(b *testing.B) {
	for _, off := range []bool{true, false} {
		b.Run(fmt.Sprintf("view=%v", !off), func(b *testing.B) {
			e, err := Open(Config{InMemory: true, DisableScheduler: true, DisableQueueView: off})
			if err != nil {
				b.Fatal(err)
			}
			defer closeOK(b, e)
			claim := engine.Claim{Queue: "q", Owner: "worker-1", Max: 1, LeaseMS: 60_000,
				Types: []string{"t", "Other", engine.ActivityTypePrefix + "A", engine.ActivityTypePrefix + "B"}}
			b.ResetTimer()
			for range b.N {
				if _, err := e.Create(bg, engine.CreateJob{Type: "t", Queue: "q", Input: benchInput}); err != nil {
					b.Fatal(err)
				}
				jobs, err := e.ClaimWait(bg, claim)
				if err != nil || len(jobs) != 1 {
					b.Fatal(jobs, err)
				}
				if _, err := e.Complete(bg, engine.Complete{LeaseRef: jobs[0].Lease()}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTaskQueuesRecord: what the view adds to one poll and claim of a
// worker (BeginPoll and its end, Claimed) and to one applied command that
// made a job ready (Stage, and Committed for its batch), measured alone:
// ns/op against the CPU a workflow costs (queueview's
// view_off_cpu_us_per_workflow, some 350 µs on two cores for about eight
// claims and twenty-five commands) is the view's share of it.
//
//	go test ./engine/embedded -run X -bench TaskQueuesRecord
func BenchmarkTaskQueuesRecord(b *testing.B) {
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer closeOK(b, db)
	m, err := machine.NewMachine(engine.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	var notes machine.Notes
	batch := db.NewBatch()
	defer batch.Discard()
	if _, err := m.ApplyNoting(batch.Begin(), &engine.CreateJob{Header: engine.Header{NowMS: schedT0}, Type: "t", Queue: "q"}, &notes); err != nil {
		b.Fatal(err)
	}
	tq := NewTaskQueues(nil)
	claim := engine.Claim{Queue: "q", Owner: "worker-1", Max: 1, LeaseMS: 60_000,
		Types: []string{"t", "Other", engine.ActivityTypePrefix + "A", engine.ActivityTypePrefix + "B"}}
	b.Run("poll+claim", func(b *testing.B) {
		for range b.N {
			tq.BeginPoll(&claim)()
			tq.Claimed(&claim, 1)
		}
	})
	b.Run("command", func(b *testing.B) {
		for range b.N {
			tq.Stage(&notes)
			tq.Committed()
		}
	})
}
