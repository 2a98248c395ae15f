package raftfsm

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestNodeLogCommitterYields: a caller that finds no commit in progress
// yields before it takes the queue, so an append that was ready to run
// joins its commit. With one processor, the second append's goroutine is
// ready (started, not yet run) when the first caller becomes the
// committer: it runs during the yield, queues, and both go into one
// transaction. Without the yield the first commit would hold one group.
func TestNodeLogCommitterYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := openTestNodeLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer func() { _ = l.Close() }()
	var batches [][]uint32
	l.testBeforeCommit = func(groups []uint32) { batches = append(batches, slices.Clone(groups)) }
	errs := make(chan error, 2)
	go func() {
		go func() { errs <- l.group(2).StoreLogs(testEntries(2, 1, 2)) }()
		errs <- l.group(1).StoreLogs(testEntries(1, 1, 2))
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(batches) != 1 || len(batches[0]) != 2 {
		t.Fatalf("commits held groups %v; want one commit of both appends", batches)
	}
	for g := uint32(1); g <= 2; g++ {
		wantIndexes(t, l.group(g), 1, 2)
	}
}
