package storage

import (
	"slices"
	"testing"
)

// A batch lists the job records its commands wrote (for the waiters on a
// job's changes) and the jobs they closed, known by the entry in the index
// by closing time (for the waiters on a job's end). Deleting such an entry
// (a run reset, a record pruned) closes nothing, and other keys list
// nothing.
func TestBatchListsTouchedAndClosedJobs(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	defer b.Discard()
	if got := b.TouchedJobs(); got == nil || len(got) != 0 {
		t.Fatalf("TouchedJobs of an empty batch = %#v, want empty and not nil", got)
	}
	if got := b.ClosedJobs(); got == nil || len(got) != 0 {
		t.Fatalf("ClosedJobs of an empty batch = %#v, want empty and not nil", got)
	}

	tx := b.Begin() // job 7 turns: its record is written, it stays open
	tx.Set(JobKey(7), []byte("open"))
	tx.Set(StatusKey(1, 7), nil)
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	tx = b.Begin() // job 9 closes
	tx.Set(JobKey(9), []byte("closed"))
	tx.Set(ClosedKey(1_000, 9), nil)
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	tx = b.Begin() // job 5's closing entry is deleted: nothing closes
	tx.Delete(ClosedKey(500, 5))
	tx.Set(ClosedPrefix, nil) // a key under the prefix that is no entry
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if got, want := b.TouchedJobs(), []uint64{7, 9}; !slices.Equal(got, want) {
		t.Errorf("TouchedJobs = %v, want %v", got, want)
	}
	if got, want := b.ClosedJobs(), []uint64{9}; !slices.Equal(got, want) {
		t.Errorf("ClosedJobs = %v, want %v", got, want)
	}
}
