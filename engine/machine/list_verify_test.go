package machine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// TestVerifyChecksTheListsGround: Verify reports a chain link that does
// not agree at both ends, a run that starts before the run before it (the
// start order lists walk by id), and a missing entry of the list's new
// indexes.
func TestVerifyChecksTheListsGround(t *testing.T) {
	chain := func(t *testing.T) (*harness, engine.JobID, engine.JobID) {
		h := newHarness(t)
		first := h.create("wf")
		c := h.claimOne(60_000)
		next := h.must(&engine.ContinueAsNew{LeaseRef: c.Lease()}).(*engine.CreateResult).Job
		h.verify()
		if j := h.job(first); j.NextRunID != next || j.NextRunReason != engine.ReasonContinuedAsNew || !j.ContinuedAsNew() || j.ExecutionStatus() != "ContinuedAsNew" {
			t.Fatalf("the continued run: %+v", j)
		}
		if j := h.job(next); j.PrevRunID != first || j.ExecutionStatus() != "Running" {
			t.Fatalf("the next run: %+v", j)
		}
		return h, first, next
	}
	for _, tc := range []struct {
		name   string
		tamper func(h *harness, first, next engine.JobID)
		want   string
	}{
		{"a next run that does not name it back", func(h *harness, first, next engine.JobID) {
			j := h.job(next)
			j.PrevRunID = 0
			h.put(j)
		}, "does not continue it"},
		{"a previous run that does not name it", func(h *harness, first, next engine.JobID) {
			j := h.job(first)
			j.NextRunID, j.NextRunReason = 0, ""
			h.put(j)
		}, "does not name it as its next"},
		{"a reason without a next run", func(h *harness, first, next engine.JobID) {
			j := h.job(next)
			j.NextRunReason = engine.ReasonRetried
			h.put(j)
		}, "no next run, but a reason"},
		{"an open run that names a next", func(h *harness, first, next engine.JobID) {
			j := h.job(next)
			j.NextRunID, j.NextRunReason = first, engine.ReasonRetried
			h.put(j)
		}, "record names next run"},
		{"a run that starts before the one before it", func(h *harness, first, next engine.JobID) {
			j := h.job(next)
			j.CreatedMS = h.job(first).CreatedMS - 1
			h.put(j)
		}, "start order is not id order"},
		{"a missing entry among the runs of an id", func(h *harness, first, next engine.JobID) {
			h.del(storage.RunsKey("wf", uint64(first)))
		}, `W workflow=wf job=1`},
		{"a missing closing-time entry", func(h *harness, first, next engine.JobID) {
			h.del(storage.ClosedKey(h.job(first).ClosedMS, uint64(first)))
		}, "is missing (C closed="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, first, next := chain(t)
			tc.tamper(h, first, next)
			var errs []error
			viewOK(t, h.db, func(r *storage.Reader) error { errs = machine.Verify(r, 10); return nil })
			got := errors.Join(errs...)
			if got == nil || !strings.Contains(got.Error(), tc.want) {
				t.Fatalf("Verify found %v, want %q", errs, tc.want)
			}
		})
	}
}

// del deletes a key (a test's corruption).
func (h *harness) del(key []byte) {
	h.t.Helper()
	b := h.db.NewBatch()
	defer b.Discard()
	tx := b.Begin()
	tx.Delete(key)
	if err := b.Add(tx); err != nil {
		h.t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		h.t.Fatal(err)
	}
}
