package machine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// newShardHarness is newHarness over the store of shard l.
func newShardHarness(t testing.TB, l engine.ShardLayout) *harness {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.NewShardMachine(engine.Limits{}, l)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, db: db, m: m, now: 1_000_000, clk: clock.NewManual(time.UnixMilli(1_000_000))}
	h.log, err = embedded.NewLocalLog(embedded.LocalLogConfig{DB: db, Machine: h.m, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, h.log); closeOK(t, db) })
	return h
}

// keyOnShard returns the first of prefix0, prefix1, … that routes to shard.
func keyOnShard(prefix string, shard, count int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("%s%d", prefix, i); engine.ShardOfKey(k, count) == shard {
			return k
		}
	}
}

// verifyShard fails the test on any problem VerifyShard finds.
func (h *harness) verifyShard(l engine.ShardLayout) {
	h.t.Helper()
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		for _, err := range machine.VerifyShard(r, 10, l) {
			h.t.Error(err)
		}
		return nil
	})
}

func crossShard(t *testing.T, err error, to int) {
	t.Helper()
	var cs *engine.CrossShardError
	if !errors.As(err, &cs) || !errors.Is(err, engine.ErrCrossShard) {
		t.Fatalf("got %v, want a CrossShardError", err)
	}
	if cs.To != to {
		t.Fatalf("%v: To = %d, want %d", err, cs.To, to)
	}
	if !strings.Contains(err.Error(), engine.CrossShardCode) {
		t.Fatalf("%v does not carry its code", err)
	}
}

// TestShardAssignsIDsUnderItsIndex: a shard's job and review task ids carry
// its index in their high bits, and the name of a run started without a
// workflow id routes back to the shard. Shard 0 assigns what an unsharded
// store does.
func TestShardAssignsIDsUnderItsIndex(t *testing.T) {
	l := engine.ShardLayout{Index: 3, Count: 4}
	h := newShardHarness(t, l)
	res := h.must(&engine.CreateJob{Type: "t", Queue: "q"}).(*engine.CreateResult)
	if res.Job != engine.JobIDOf(3, 1) {
		t.Fatalf("first job of shard 3 is %d, want %d", res.Job, engine.JobIDOf(3, 1))
	}
	if got := engine.ShardOfKey(res.WorkflowID, 4); got != 3 {
		t.Fatalf("the default workflow id %q routes to shard %d, not back to 3", res.WorkflowID, got)
	}
	second := h.must(&engine.CreateJob{WorkflowID: keyOnShard("wf-", 3, 4), Type: "t", Queue: "q"}).(*engine.CreateResult)
	if second.Job != engine.JobIDOf(3, 2) {
		t.Fatalf("second job is %d", second.Job)
	}
	review := h.must(&engine.CreateReview{Job: keyOnShard("rj-", 3, 4), Phase: "p", Queue: "q", Type: "w"}).(*engine.ReviewResult).Review
	if engine.ShardOfReview(review) != 3 {
		t.Fatalf("review task id %d carries shard %d", review, engine.ShardOfReview(review))
	}
	h.verifyShard(l)

	zero := newShardHarness(t, engine.ShardLayout{Index: 0, Count: 4})
	if id := zero.must(&engine.CreateJob{Type: "t", Queue: "q"}).(*engine.CreateResult).Job; id != 1 {
		t.Fatalf("shard 0's first job is %d, want 1 as unsharded", id)
	}
}

// TestShardRefusesWhatCrossesShards: what would link a shard to another is
// refused with a CrossShardError and writes nothing; what stays on the
// shard works.
func TestShardRefusesWhatCrossesShards(t *testing.T) {
	const count = 4
	l := engine.ShardLayout{Index: 1, Count: count}
	h := newShardHarness(t, l)
	before := h.snapshot()

	// A run whose workflow id routes elsewhere.
	_, err := h.apply(&engine.CreateJob{WorkflowID: keyOnShard("wf-", 2, count), Type: "t", Queue: "q"})
	crossShard(t, err, 2)
	sameStore(t, before, h.snapshot())

	// A child whose parent lives on another shard.
	foreign := engine.JobIDOf(0, 5)
	_, err = h.apply(&engine.CreateJob{WorkflowID: keyOnShard("c-", 1, count), Type: "t", Queue: "q",
		ParentID: foreign, ParentStep: "s", ParentLease: &engine.LeaseRef{Job: foreign, Attempt: 1}})
	crossShard(t, err, 0)

	// A child beside its parent works, with or without an id of its own.
	// The SDK names a child after its parent ("<parent>/<job>/<step>"),
	// so a parent with a hash tag keeps its children beside it.
	parentWF := "p-{" + keyOnShard("x", 1, count) + "}"
	parent, ref := h.runningParent(parentWF)
	h.must(&engine.CreateJob{Type: "c", Queue: "q", ParentID: parent, ParentStep: "a1", ParentLease: ref})
	childWF := fmt.Sprintf("%s/%d/a2", parentWF, parent)
	h.must(&engine.CreateJob{WorkflowID: childWF, Type: "c", Queue: "q", ParentID: parent, ParentStep: "a2", ParentLease: ref})

	// Terminating a child on behalf of a parent of another shard.
	_, err = h.apply(&engine.Terminate{Target: engine.Target{WorkflowID: childWF},
		ByParent: &engine.LeaseRef{Job: foreign, Attempt: 1}})
	crossShard(t, err, 0)

	// Schedules: one of another shard is refused; one whose runs spread
	// over the shards, one whose runs share its shard through a hash tag
	// and one whose action's id routes them to another shard are taken
	// (their runs elsewhere start through the outbox: schedule_shards.txt).
	spread := keyOnShard("sch-", 1, count)
	h.must(&engine.CreateSchedule{ID: spread, Spec: everySpec(60_000), Action: testAction})
	_, err = h.apply(&engine.CreateSchedule{ID: keyOnShard("sch-", 3, count), Spec: everySpec(60_000), Action: testAction})
	crossShard(t, err, 3)
	tag := keyOnShard("t", 1, count)
	h.must(&engine.CreateSchedule{ID: "report-{" + tag + "}", Spec: everySpec(60_000), Action: testAction, TriggerImmediately: true})
	other := testAction
	other.WorkflowID = "daily-{" + keyOnShard("t", 2, count) + "}"
	h.must(&engine.UpdateSchedule{ID: "report-{" + tag + "}", Spec: everySpec(60_000), Action: other})

	// The resource pool lives on shard 0.
	_, err = h.apply(&engine.AddResource{ID: "gpu", Capacity: 1, Capabilities: []string{"gpu"}})
	crossShard(t, err, engine.ResourceHomeShard)
	// A step here that needs a unit asks the pool's shard for one through
	// the outbox (resource_shards.txt).
	h.must(&engine.LeaseStep{LeaseRef: *ref, Step: "s1", Name: "a", LeaseMS: 1000, Capabilities: []string{"gpu"}})
	h.must(&engine.LeaseStep{LeaseRef: *ref, Step: "s2", Name: "a", LeaseMS: 1000})

	// A review job that routes elsewhere, and a task of a run elsewhere.
	_, err = h.apply(&engine.CreateReview{Job: keyOnShard("rj-", 2, count), Phase: "p", Queue: "q", Type: "w"})
	crossShard(t, err, 2)
	_, err = h.apply(&engine.CreateReview{Job: keyOnShard("rj-", 1, count), Phase: "p", Queue: "q", Type: "w",
		ParentJob: foreign, ParentStep: "s", ParentLease: &engine.LeaseRef{Job: foreign, Attempt: 1}})
	crossShard(t, err, 0)

	h.verifyShard(l)
}

// TestVerifyShardFindsAForeignRun: a store written as another shard's (here
// unsharded, so its runs route anywhere) fails VerifyShard, naming what is
// out of place.
func TestVerifyShardFindsAForeignRun(t *testing.T) {
	h := newHarness(t)
	h.create(keyOnShard("wf-", 2, 4))
	h.must(&engine.AddResource{ID: "gpu", Capacity: 1})
	var errs []error
	viewOK(t, h.db, func(r *storage.Reader) error {
		errs = machine.VerifyShard(r, 0, engine.ShardLayout{Index: 1, Count: 4})
		return nil
	})
	text := fmt.Sprint(errs)
	for _, want := range []string{"carries the index of shard 0", "routes to shard 2", "the pool lives on shard 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("VerifyShard said %s; want it to say %q", text, want)
		}
	}
}

// TestShardMachineRefusesABadLayout: NewShardMachine checks its layout.
func TestShardMachineRefusesABadLayout(t *testing.T) {
	if _, err := machine.NewShardMachine(engine.Limits{}, engine.ShardLayout{Index: 4, Count: 4}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("got %v", err)
	}
}
