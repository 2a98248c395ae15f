package raftfsm

import "testing"

// TestNodeLogCounts: the committer counts its commits (a delete is one
// too) and the appends they carried (what bench's log_appends_per_commit
// divides), and a Host reports its node log's.
func TestNodeLogCounts(t *testing.T) {
	l := openTestNodeLog(t, t.TempDir())
	defer func() { _ = l.Close() }()
	for g := uint32(0); g < 3; g++ {
		if err := l.group(g).StoreLogs(testEntries(g, 1, 4)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.group(0).DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	h := &Host{log: l}
	if got, want := h.NodeLogCounts(), (NodeLogCounts{Commits: 4, Appends: 3}); got != want {
		t.Fatalf("after three appends one after the other and a delete: %+v, want %+v", got, want)
	}
	if err := l.commit([]*logWrite{appendWrite(t, 1, 5), appendWrite(t, 2, 5)}); err != nil {
		t.Fatal(err)
	}
	if got, want := h.NodeLogCounts(), (NodeLogCounts{Commits: 5, Appends: 5}); got != want {
		t.Fatalf("after a commit of two appends: %+v, want %+v", got, want)
	}
}

// appendWrite is the write StoreLogs makes of entry i of group g.
func appendWrite(t *testing.T, g uint32, i uint64) *logWrite {
	t.Helper()
	v, err := encodeLogEntry(testEntries(g, i, i)[0])
	if err != nil {
		t.Fatal(err)
	}
	w := &logWrite{group: g, appends: true}
	w.add(walRecord{kind: recEntry, group: g, index: i, entry: v})
	return w
}
