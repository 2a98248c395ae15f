package embedded

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// meterHarness applies commands through a LocalLog that meters them, with
// time under the test's control.
type meterHarness struct {
	t   *testing.T
	reg *prometheus.Registry
	db  *storage.DB
	log *LocalLog
	mt  *Meter
	clk *clock.Manual
}

func newMeterHarness(t *testing.T) *meterHarness {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &meterHarness{t: t, reg: reg, db: db, mt: NewMeter(m), clk: clock.NewManual(time.UnixMilli(1_000_000))}
	h.log, err = NewLocalLog(LocalLogConfig{DB: db, Clock: h.clk, Meter: h.mt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, h.log); closeOK(t, db) })
	return h
}

func (h *meterHarness) do(cmd engine.Command) engine.Result {
	h.t.Helper()
	res, err := h.log.Propose(context.Background(), cmd)
	if err != nil {
		h.t.Fatalf("%s: %v", cmd.Kind(), err)
	}
	return res
}

func (h *meterHarness) claim() engine.ClaimedJob {
	h.t.Helper()
	jobs := h.do(&engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}).(*engine.ClaimResult).Jobs
	if len(jobs) != 1 {
		h.t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}

func (h *meterHarness) scrape() metricstest.Families {
	h.t.Helper()
	fs, err := metricstest.Gather(h.reg)
	if err != nil {
		h.t.Fatal(err)
	}
	return fs
}

// open returns the open-job gauge of each status on queue q.
func (h *meterHarness) open() map[engine.Status]float64 {
	fs := h.scrape()
	out := map[engine.Status]float64{}
	for _, s := range engine.Statuses() {
		if v := fs.Value(metrics.EngineJobs, "status", s.String(), "queue", "q"); v != 0 {
			out[s] = v
		}
	}
	return out
}

func sameCounts(a, b map[engine.Status]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The open-job gauge follows every status change a command writes, the
// closed counter every end, and a recount from the status index agrees
// with what the commits added up to at every step.
func TestMeterFollowsStatusChanges(t *testing.T) {
	h := newMeterHarness(t)
	steps := []struct {
		name string
		run  func()
		want map[engine.Status]float64
	}{
		{"two creates", func() {
			h.do(&engine.CreateJob{Type: "t", Queue: "q"})
			h.do(&engine.CreateJob{Type: "t", Queue: "q"})
		}, map[engine.Status]float64{engine.StatusQueued: 2}},
		{"a claim", func() { h.claim() }, map[engine.Status]float64{engine.StatusQueued: 1, engine.StatusRunning: 1}},
		{"a completion", func() {
			h.do(&engine.Complete{LeaseRef: engine.LeaseRef{Job: 1, Attempt: 1}})
		}, map[engine.Status]float64{engine.StatusQueued: 1}},
		{"continue-as-new after a delay: the new run is Queued and Retrying in one command", func() {
			j := h.claim()
			h.do(&engine.ContinueAsNew{LeaseRef: j.Lease(), DelayMS: 1000})
		}, map[engine.Status]float64{engine.StatusRetrying: 1}},
		{"the delay ends", func() {
			h.clk.Advance(2 * time.Second)
			h.do(&engine.ReleaseDelayed{Max: 10})
		}, map[engine.Status]float64{engine.StatusQueued: 1}},
		{"a lease runs out", func() {
			h.claim()
			h.clk.Advance(5 * time.Second)
			h.do(&engine.Reclaim{Max: 10})
		}, map[engine.Status]float64{engine.StatusQueued: 1}},
		{"a wait on a timer that fires 2 s late", func() {
			j := h.claim()
			due := h.clk.Now().Add(time.Second).UnixMilli()
			h.do(&engine.Wait{LeaseRef: j.Lease(), SeenSeq: j.LastSeq, Spec: engine.WaitSpec{TimerID: "t1", TimerAtMS: due}})
			h.clk.Advance(3 * time.Second)
			h.do(&engine.FireTimers{Max: 10})
		}, map[engine.Status]float64{engine.StatusQueued: 1}},
	}
	for _, st := range steps {
		st.run()
		got := h.open()
		if !sameCounts(got, st.want) {
			t.Fatalf("after %s: open jobs %v, want %v", st.name, got, st.want)
		}
		if err := h.mt.Count(h.db); err != nil {
			t.Fatal(err)
		}
		if recount := h.open(); !sameCounts(recount, got) {
			t.Fatalf("after %s: a recount from the status index gives %v, the commits added up to %v", st.name, recount, got)
		}
	}
	fs := h.scrape()
	checks := []struct {
		what string
		got  float64
		want float64
	}{
		{"jobs closed Completed", fs.Value(metrics.EngineJobsClosed, "status", "Completed", "queue", "q"), 2},
		{"reclaims", fs.Value(metrics.EngineReclaims), 1},
		{"timers fired", fs.Value(metrics.EngineTimerLateness), 1},
		{"their lateness in seconds", fs.Sum(metrics.EngineTimerLateness), 2},
		{"creates applied", fs.Value(metrics.EngineCommands, "kind", "CreateJob", "outcome", "ok"), 2},
		{"creates timed", fs.Value(metrics.EngineApplySeconds, "kind", "CreateJob"), 2},
		{"commits", fs.Value(metrics.EngineCommits), fs.Value(metrics.EngineBatchCommands)},
		{"syncs of an in-memory store", fs.Value(metrics.EngineSyncs), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}

	// Refused fenced writes count as stale attempts, a heartbeat's
	// refusal included, and a refused command as its error's outcome.
	if _, err := h.log.Propose(context.Background(), &engine.Complete{LeaseRef: engine.LeaseRef{Job: 3, Attempt: 99}}); err == nil {
		t.Fatal("a completion by attempt 99 was accepted")
	}
	h.do(&engine.Heartbeat{Leases: []engine.LeaseRef{{Job: 3, Attempt: 99}}, LeaseMS: 1000})
	fs = h.scrape()
	if got := fs.Value(metrics.EngineStaleAttempts, "kind", "Complete"); got != 1 {
		t.Errorf("stale completions: %v, want 1", got)
	}
	if got := fs.Value(metrics.EngineStaleAttempts, "kind", "Heartbeat"); got != 1 {
		t.Errorf("stale heartbeats: %v, want 1", got)
	}
	if got := fs.Value(metrics.EngineCommands, "kind", "Complete", "outcome", "stale_attempt"); got != 1 {
		t.Errorf("completions refused as stale: %v, want 1", got)
	}
}

// Clients choose task queue names, and each named queue is a label value
// of the job families: however many queues they use, the families keep at
// most (metrics.DefaultMaxQueues + 1) label values, so at most that many
// times the statuses in series, and a queue with nothing left open has no
// open-job series. Every job is still counted, beyond the first queues
// under queue="_other". (One job on each of 10,000 queues, half of them
// completed, used to leave 15,000 series.)
func TestMeterSeriesBoundedWhateverTheQueues(t *testing.T) {
	h := newMeterHarness(t)
	const queues = 10_000
	name := func(i int) string { return fmt.Sprintf("q%05d", i) }
	for i := range queues {
		h.do(&engine.CreateJob{Type: "t", Queue: name(i)})
	}
	for i := 0; i < queues; i += 2 {
		jobs := h.do(&engine.Claim{Queue: name(i), Owner: "w", Max: 1, LeaseMS: 1000}).(*engine.ClaimResult).Jobs
		if len(jobs) != 1 {
			t.Fatalf("queue %s: claimed %d jobs", name(i), len(jobs))
		}
		h.do(&engine.Complete{LeaseRef: jobs[0].Lease()})
	}
	fs := h.scrape()
	series := fs.Series(metrics.EngineJobs) + fs.Series(metrics.EngineJobsClosed)
	if bound := (metrics.DefaultMaxQueues + 1) * len(engine.Statuses()); series > bound {
		t.Fatalf("%d series of the job families after jobs on %d queues, over the bound of %d", series, queues, bound)
	}
	checks := []struct {
		what      string
		got, want float64
	}{
		{"open jobs", fs.Value(metrics.EngineJobs), queues / 2},
		{"open jobs of q00001", fs.Value(metrics.EngineJobs, "status", "Queued", "queue", name(1)), 1},
		{"open jobs beyond the named queues", fs.Value(metrics.EngineJobs, "status", "Queued", "queue", metrics.OtherQueue),
			(queues - metrics.DefaultMaxQueues) / 2},
		{"series of q00000, whose one job completed", float64(fs.Series(metrics.EngineJobs, "queue", name(0))), 0},
		{"closed jobs", fs.Value(metrics.EngineJobsClosed), queues / 2},
		{"closed jobs of q00000", fs.Value(metrics.EngineJobsClosed, "status", "Completed", "queue", name(0)), 1},
		{"series of q09999, beyond the named queues", float64(fs.Series(metrics.EngineJobs, "queue", name(queues-1))), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	// The Meter's own memory follows the open jobs too.
	h.mt.mu.Lock()
	if n := len(h.mt.open); n != queues/2 {
		t.Errorf("the Meter mirrors %d open-job counts for %d open jobs", n, queues/2)
	}
	h.mt.mu.Unlock()
}

// A queue name that is not UTF-8 does not stop the engine. Prometheus
// refuses such a label value, and the Meter used to panic over it in the
// commit path, taking the process down (every node of a cluster, which all
// apply the command). The engine may refuse the name; if it takes it, the
// job is counted.
func TestMeterTakesQueueNamesNotUTF8(t *testing.T) {
	h := newMeterHarness(t)
	_, err := h.log.Propose(context.Background(), &engine.CreateJob{Type: "t", Queue: "q\xff"})
	if err != nil && !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatal(err)
	}
	h.do(&engine.CreateJob{Type: "t", Queue: "q"})
	fs := h.scrape()
	if got, want := fs.Value(metrics.EngineJobs), map[bool]float64{true: 2, false: 1}[err == nil]; got != want {
		t.Fatalf("%v open jobs counted, want %v", got, want)
	}
}

// A reopened store's gauge starts from its status index, not from zero.
func TestOpenCountsOpenJobs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	e, err := Open(Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.Create(context.Background(), engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Claim(context.Background(), engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}); err != nil {
		t.Fatal(err)
	}
	closeOK(t, e)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e, err = Open(Config{Dir: dir, DisableScheduler: true, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	fs, err := metricstest.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if q, r := fs.Value(metrics.EngineJobs, "status", "Queued", "queue", "q"), fs.Value(metrics.EngineJobs, "status", "Running", "queue", "q"); q != 2 || r != 1 {
		t.Fatalf("after reopening: %v Queued and %v Running, want 2 and 1", q, r)
	}
	// A durable store syncs at every commit.
	if _, err := e.Create(context.Background(), engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if fs, _ = metricstest.Gather(reg); fs.Value(metrics.EngineSyncs) != 1 {
		t.Fatalf("syncs after one create: %v, want 1", fs.Value(metrics.EngineSyncs))
	}
}

// With no metrics the engine has no Meter at all.
func TestNilMeterCostsNothing(t *testing.T) {
	var mt *Meter
	if NewMeter(nil) != nil || !mt.Start().IsZero() {
		t.Fatal("a nil Meter reads the clock")
	}
	mt.Applied(&engine.CreateJob{}, nil, nil, time.Time{})
	mt.Stage(mt.Diff(nil, &engine.CreateJob{}, nil))
	mt.Committed(1, time.Time{}, true)
	mt.Discard()
	mt.Synced()
	if err := mt.Count(nil); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkMeteredCycle: create, claim and complete of one job through an
// in-memory LocalLog (no sync: what is left is CPU), with and without a
// Meter. ns/op is one cycle of three commands; the difference is what the
// metrics cost each of them.
func BenchmarkMeteredCycle(b *testing.B) {
	for _, metered := range []bool{false, true} {
		b.Run(fmt.Sprintf("metrics=%v", metered), func(b *testing.B) {
			db, err := storage.Open(storage.Options{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer closeOK(b, db)
			var mt *Meter
			if metered {
				m, err := metrics.New(prometheus.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				mt = NewMeter(m)
			}
			l, err := NewLocalLog(LocalLogConfig{DB: db, Meter: mt})
			if err != nil {
				b.Fatal(err)
			}
			defer closeOK(b, l)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if _, err := l.Propose(ctx, &engine.CreateJob{Type: "t", Queue: "q", Input: benchInput}); err != nil {
					b.Fatal(err)
				}
				res, err := l.Propose(ctx, &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
				if err != nil {
					b.Fatal(err)
				}
				j := res.(*engine.ClaimResult).Jobs[0]
				if _, err := l.Propose(ctx, &engine.Complete{LeaseRef: j.Lease()}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
