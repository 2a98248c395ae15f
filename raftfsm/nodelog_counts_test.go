package raftfsm

import (
	"path/filepath"
	"testing"
)

// TestNodeLogCounts: the committer counts its transactions and the
// appends they carried (what bench's log_appends_per_commit divides), and
// a Host reports its node log's.
func TestNodeLogCounts(t *testing.T) {
	l := openTestNodeLog(t, filepath.Join(t.TempDir(), "log.db"))
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
	if got, want := h.NodeLogCounts(), (NodeLogCounts{Commits: 3, Appends: 3}); got != want {
		t.Fatalf("after three appends one after the other and a delete: %+v, want %+v", got, want)
	}
	if err := l.commit([]*logWrite{{group: 1, indexes: []uint64{5}, values: [][]byte{mustEncode(t, 1, 5)}},
		{group: 2, indexes: []uint64{5}, values: [][]byte{mustEncode(t, 2, 5)}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := h.NodeLogCounts(), (NodeLogCounts{Commits: 4, Appends: 5}); got != want {
		t.Fatalf("after a commit of two appends: %+v, want %+v", got, want)
	}
}

func mustEncode(t *testing.T, g uint32, i uint64) []byte {
	t.Helper()
	v, err := encodeLogEntry(testEntries(g, i, i)[0])
	if err != nil {
		t.Fatal(err)
	}
	return v
}
