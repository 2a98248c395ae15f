package raftfsm

import (
	"slices"
	"testing"
)

// TestNodeLogCommitterYields: a caller that finds no commit in progress
// yields before it takes the queue, so an append that comes meanwhile
// joins its commit. The test stands in for the Go scheduler at the yield
// (testYield): there, another group's append arrives and queues, and both
// go into one transaction. Without the yield the first commit would hold
// one group, and the test would find the yield never taken. (It ran with
// one processor and runtime.Gosched before, which a runnable goroutine
// of another test, or the scheduler's fairness check, could take from
// the append it waited for.)
func TestNodeLogCommitterYields(t *testing.T) {
	l := openTestNodeLog(t, t.TempDir())
	defer func() { _ = l.Close() }()
	var batches [][]uint32
	l.testBeforeCommit = func(groups []uint32) { batches = append(batches, slices.Clone(groups)) }
	queued := make(chan uint32, 1)
	l.testQueued = func(g uint32) { queued <- g }
	second := make(chan error, 1)
	yields := 0
	l.testYield = func() {
		yields++
		go func() { second <- l.group(2).StoreLogs(testEntries(2, 1, 2)) }()
		if g := <-queued; g != 2 {
			t.Errorf("group %d queued during the yield, want 2", g)
		}
	}
	if err := l.group(1).StoreLogs(testEntries(1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if yields != 1 {
		t.Fatalf("the committer yielded %d times, want once (commitYields)", yields)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if len(batches) != 1 || len(batches[0]) != 2 {
		t.Fatalf("commits held groups %v; want one commit of both appends", batches)
	}
	for g := uint32(1); g <= 2; g++ {
		wantIndexes(t, l.group(g), 1, 2)
	}
}
