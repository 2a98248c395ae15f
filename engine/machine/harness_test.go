package machine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// harness applies commands one at a time through a real LocalLog over an
// in-memory store, with time under the test's control (the log stamps each
// command from a manual clock set to h.now). Going through the log means the
// "a refused command writes nothing" checks cover the code that drops a
// failed command's writes from its batch.
type harness struct {
	t   testing.TB
	db  *storage.DB
	m   *machine.Machine
	log *embedded.LocalLog
	clk *clock.Manual
	now int64
	// meter, when set, makes apply skip the log: it applies each command
	// in a batch of its own and compares the metrics' diff of it with the
	// read-back reference (meter_reference_test.go).
	meter *meterCheck
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, db: db, m: machine.DefaultMachine, now: 1_000_000, clk: clock.NewManual(time.UnixMilli(1_000_000))}
	h.log, err = embedded.NewLocalLog(embedded.LocalLogConfig{DB: db, Machine: h.m, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, h.log); closeOK(t, db) })
	return h
}

// apply proposes cmd, stamped with the harness clock, and waits until it is
// applied and durable.
func (h *harness) apply(cmd engine.Command) (engine.Result, error) {
	h.clk.Set(time.UnixMilli(h.now))
	if h.meter != nil {
		return h.applyMetered(cmd)
	}
	return h.log.Propose(context.Background(), cmd)
}

// applyMetered applies cmd as the log would (stamped with h.now, in a
// batch committed before it answers), checking the metrics' diff of it.
func (h *harness) applyMetered(cmd engine.Command) (engine.Result, error) {
	h.t.Helper()
	cmd.Head().NowMS = h.now
	batch := h.db.NewBatch()
	defer batch.Discard()
	tx := batch.Begin()
	res, err := h.meter.apply(h.m, tx, cmd, func() string { return "" })
	if err != nil {
		return nil, err
	}
	if err := batch.Add(tx); err != nil {
		return nil, err
	}
	if err := batch.Commit(); err != nil {
		return nil, err
	}
	return res, nil
}

func (h *harness) must(cmd engine.Command) engine.Result {
	h.t.Helper()
	res, err := h.apply(cmd)
	if err != nil {
		h.t.Fatalf("%s: %v", cmd.Kind(), err)
	}
	return res
}

func (h *harness) mustFail(cmd engine.Command, want error) {
	h.t.Helper()
	_, err := h.apply(cmd)
	if !errors.Is(err, want) {
		h.t.Fatalf("%s: got error %v, want %v", cmd.Kind(), err, want)
	}
}

// closeOK closes c, failing the test (after it ran) if that fails: tests
// defer it for the engines, logs and databases they open.
func closeOK(t testing.TB, c interface{ Close() error }) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("closing %T: %v", c, err)
	}
}

// viewOK runs fn over db, failing the test at once if the read fails.
func viewOK(t testing.TB, db *storage.DB, fn func(r *storage.Reader) error) {
	t.Helper()
	if err := db.View(fn); err != nil {
		t.Fatalf("reading the store: %v", err)
	}
}

func (h *harness) create(wf string) engine.JobID {
	h.t.Helper()
	return h.must(&engine.CreateJob{WorkflowID: wf, Type: "order", Queue: "q"}).(*engine.CreateResult).Job
}

func (h *harness) claimOne(leaseMS int64) engine.ClaimedJob {
	h.t.Helper()
	r := h.must(&engine.Claim{Queue: "q", Owner: "w1", Max: 1, LeaseMS: leaseMS}).(*engine.ClaimResult)
	if len(r.Jobs) != 1 {
		h.t.Fatalf("claim got %d jobs, want 1", len(r.Jobs))
	}
	return r.Jobs[0]
}

func (h *harness) job(id engine.JobID) *engine.Job {
	h.t.Helper()
	var j *engine.Job
	err := h.db.View(func(r *storage.Reader) error {
		var err error
		j, err = machine.ReadJob(r, id)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

func (h *harness) history(id engine.JobID) []engine.Event {
	h.t.Helper()
	var evs []engine.Event
	err := h.db.View(func(r *storage.Reader) error {
		var err error
		evs, _, err = machine.ReadHistory(r, id, 0, 0)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

// verify fails the test on any problem Verify finds.
func (h *harness) verify() {
	h.t.Helper()
	var errs []error
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		errs = machine.Verify(r, 10)
		return nil
	})
	for _, err := range errs {
		h.t.Error(err)
	}
	if len(errs) > 0 {
		h.t.FailNow()
	}
}

// snapshot returns every key and value in the store, for "nothing changed" checks.
func (h *harness) snapshot() map[string]string {
	out := map[string]string{}
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		return r.Scan(nil, nil, true, func(k, v []byte) (bool, error) {
			out[string(k)] = string(v)
			return true, nil
		})
	})
	return out
}

func sameStore(t testing.TB, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("key %q changed", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("key %q added", k)
		}
	}
}

var bg = context.Background()

// runningParent starts a run of workflow id wf on the queue "parents" and
// claims it: a parent whose lease the test holds, so that it may start
// children and remote activities (CreateJob.ParentLease).
func (h *harness) runningParent(wf string) (engine.JobID, *engine.LeaseRef) {
	h.t.Helper()
	id := h.must(&engine.CreateJob{WorkflowID: wf, Type: "parent", Queue: "parents"}).(*engine.CreateResult).Job
	r := h.must(&engine.Claim{Queue: "parents", Owner: "parent-worker", Max: 1, LeaseMS: 3_600_000}).(*engine.ClaimResult)
	if len(r.Jobs) != 1 || r.Jobs[0].Job != id {
		h.t.Fatalf("claim of the parent %d = %+v", id, r.Jobs)
	}
	ref := r.Jobs[0].Lease()
	return id, &ref
}
