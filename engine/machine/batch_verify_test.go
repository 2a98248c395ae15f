package machine_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Verify checks each batch record's invariants: each broken record below
// is reported, and a sound one is not.
func TestVerifyBatches(t *testing.T) {
	sound := engine.Batch{ID: "b", BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate}, State: engine.BatchRunning,
		MaxJob: 10, Total: 5, Done: 2, Failed: 1, Cursor: 6, Pending: []engine.JobID{5, 6}, CreatedMS: 1, UpdatedMS: 1}
	for _, tc := range []struct {
		name   string
		change func(b *engine.Batch)
		want   string // "" for a sound record
	}{
		{"sound", func(*engine.Batch) {}, ""},
		{"over total", func(b *engine.Batch) { b.Done = 4 }, "over its total"},
		{"cursor past max", func(b *engine.Batch) { b.Cursor, b.Pending = 11, nil }, "after its last run"},
		{"pending after cursor", func(b *engine.Batch) { b.Pending = []engine.JobID{5, 7} }, "out of order or after its cursor"},
		{"pending out of order", func(b *engine.Batch) { b.Pending = []engine.JobID{6, 5} }, "out of order"},
		{"running closed", func(b *engine.Batch) { b.ClosedMS = 5 }, "closed_ms"},
		{"completed open", func(b *engine.Batch) { b.State = engine.BatchCompleted }, "closed_ms"},
		{"completed pending", func(b *engine.Batch) { b.State, b.ClosedMS = engine.BatchCompleted, 5 }, "completed with 2 pending"},
		{"completed short", func(b *engine.Batch) {
			b.State, b.ClosedMS, b.Pending, b.Skipped = engine.BatchCompleted, 5, nil, 1
		}, "completed with 0 pending"},
		{"stopped pending", func(b *engine.Batch) { b.State, b.ClosedMS = engine.BatchTerminated, 5 }, "stopped with 2 runs pending"},
		{"unknown state", func(b *engine.Batch) { b.State = 9 }, "unknown state"},
		{"id", func(b *engine.Batch) { b.ID = "other" }, `holds id "other"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			b := sound
			b.Pending = append([]engine.JobID(nil), sound.Pending...)
			tc.change(&b)
			batch := h.db.NewBatch()
			defer batch.Discard()
			tx := batch.Begin()
			tx.Set(storage.BatchKey("b"), machine.EncodeBatch(&b))
			if err := batch.Add(tx); err != nil {
				t.Fatal(err)
			}
			if err := batch.Commit(); err != nil {
				t.Fatal(err)
			}
			var errs []error
			viewOK(t, h.db, func(r *storage.Reader) error {
				errs = machine.Verify(r, 10)
				return nil
			})
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("a sound batch: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Fatalf("Verify = %v, want one error with %q", errs, tc.want)
			}
		})
	}
}

// FuzzDecodeBatch: a stored batch record decodes into a value that
// encodes again to the same bytes, or fails as corrupt; never a panic.
func FuzzDecodeBatch(f *testing.F) {
	for _, b := range []*engine.Batch{
		{ID: "b1", BatchSpec: engine.BatchSpec{Operation: engine.BatchSignal, Query: `WorkflowType = "x"`, SignalName: "go",
			SignalPayload: []byte(`1`), RunsPerSecond: 5}, State: engine.BatchRunning, MaxJob: 9, Total: 4, Done: 1,
			Cursor: 3, Pending: []engine.JobID{2, 3}, CreatedMS: 1, UpdatedMS: 2},
		{ID: "b2", BatchSpec: engine.BatchSpec{Operation: engine.BatchReset, ResetType: engine.ResetLastWorkflowTask},
			State: engine.BatchCompleted, Total: 1, Skipped: 1, ClosedMS: 3},
	} {
		f.Add(machine.EncodeBatch(b))
	}
	for _, b := range fuzzGarbage(storage.KindBatch) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := machine.DecodeBatch(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeBatch", err)
			return
		}
		enc := machine.EncodeBatch(b)
		b2, err := machine.DecodeBatch(enc)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *b, err)
		}
		fuzzSameValue(t, "the batch", b, b2)
		if enc2 := machine.EncodeBatch(b2); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: % x, then % x", enc, enc2)
		}
	})
}
