package machine_test

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func (h stepH) waiters(limit int) []engine.ResourceWaiter {
	h.t.Helper()
	var out []engine.ResourceWaiter
	viewOK(h.t, h.db, func(rd *storage.Reader) error {
		var err error
		out, err = machine.ReadResourceWaiters(rd, limit)
		return err
	})
	return out
}

func waiterJobs(ws []engine.ResourceWaiter) []engine.JobID {
	var out []engine.JobID
	for _, w := range ws {
		out = append(out, w.Job)
	}
	return out
}

// The waiter list is the queue in the order it is served: an entry leaves
// it when its step is leased a unit or its job ends, though the stored
// entry may stay behind until a freed unit passes it.
func TestResourceWaitersInQueueOrder(t *testing.T) {
	h := newStepH(t)
	if got := h.waiters(engine.MaxPage); len(got) != 0 {
		t.Fatalf("an empty pool has waiters: %+v", got)
	}
	h.addResource("b1", 1, "browser")
	a, b, c, d := h.running("a"), h.running("b"), h.running("c"), h.running("d")
	wantState(t, h.lease(a, "1", "browser"), engine.StepLeased, true, "b1")
	for _, ref := range []engine.LeaseRef{b, c, d} {
		if r := h.lease(ref, "1", "browser"); !r.Queued {
			t.Fatalf("job %d was not queued: %+v", ref.Job, r)
		}
	}
	got := h.waiters(engine.MaxPage)
	if want := []engine.JobID{b.Job, c.Job, d.Job}; !equalJobs(waiterJobs(got), want) {
		t.Fatalf("waiters %v, want %v", waiterJobs(got), want)
	}
	if w := got[0]; w.Step != "1" || w.Activity != "Fetch" || len(w.Capabilities) != 1 || w.Capabilities[0] != "browser" ||
		w.Seq == 0 || got[0].Seq >= got[1].Seq || got[1].Seq >= got[2].Seq {
		t.Fatalf("first waiter %+v (seqs %d %d %d)", w, got[0].Seq, got[1].Seq, got[2].Seq)
	}
	if got := h.waiters(2); !equalJobs(waiterJobs(got), []engine.JobID{b.Job, c.Job}) {
		t.Fatalf("limit 2: %v", waiterJobs(got))
	}
	// c's job ends while it waits: its entry is skipped though stored.
	h.must(&engine.Complete{LeaseRef: c})
	if got := h.waiters(engine.MaxPage); !equalJobs(waiterJobs(got), []engine.JobID{b.Job, d.Job}) {
		t.Fatalf("after c's job ended: %v", waiterJobs(got))
	}
	// a's commit frees the unit for b, the first in line.
	h.must(&engine.CommitStep{LeaseRef: a, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 1})
	if got := h.waiters(engine.MaxPage); !equalJobs(waiterJobs(got), []engine.JobID{d.Job}) {
		t.Fatalf("after a's commit: %v", waiterJobs(got))
	}
	h.verify()
}

func equalJobs(a, b []engine.JobID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The engine's read refuses a limit out of range by name.
func TestResourceWaitersLimit(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	for _, limit := range []int{-1, engine.MaxPage + 1} {
		if _, err := e.ResourceWaiters(t.Context(), limit); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Fatalf("limit %d: %v", limit, err)
		}
	}
	ws, err := e.ResourceWaiters(t.Context(), 0)
	if err != nil || ws == nil || len(ws) != 0 {
		t.Fatalf("no waiters: %v %v", ws, err)
	}
}
