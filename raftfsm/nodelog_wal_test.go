package raftfsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestNodeLogMovesABoltNodeLog: a node log kept in a bbolt file by an
// earlier version is moved into segments at open, every entry and stable
// value of every group with it, and the file is removed; a crash that
// left the segments half written before the move ended is moved again.
func TestNodeLogMovesABoltNodeLog(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		dir := t.TempDir()
		writeBoltNodeLog(t, dir, func(tx *bolt.Tx) error {
			info, err := tx.CreateBucket(boltNodeLogInfoBucket)
			if err != nil {
				return err
			}
			if err := info.Put([]byte("version"), []byte{boltNodeLogVersion}); err != nil {
				return err
			}
			for g := uint32(0); g < 3; g++ {
				top, err := tx.CreateBucket(append([]byte("group-"), binary.BigEndian.AppendUint32(nil, g)...))
				if err != nil {
					return err
				}
				logs, err := top.CreateBucket(boltLogBucket)
				if err != nil {
					return err
				}
				for _, e := range testEntries(g, 5, 40) {
					v, err := encodeLogEntry(e)
					if err != nil {
						return err
					}
					if err := logs.Put(binary.BigEndian.AppendUint64(nil, e.Index), v); err != nil {
						return err
					}
				}
				stable, err := top.CreateBucket(boltStableBucket)
				if err != nil {
					return err
				}
				if err := stable.Put([]byte("CurrentTerm"), binary.BigEndian.AppendUint64(nil, uint64(g)+11)); err != nil {
					return err
				}
			}
			return nil
		})
		if crashed {
			// What a crash in the middle of the move leaves: the segments
			// being written, under their temporary name.
			tmp := filepath.Join(dir, nodeLogSegmentsNew)
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, segmentName(1)), []byte("half"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for round := range 2 { // the move, then a plain open of what it made
			l := openTestNodeLog(t, dir)
			for g := uint32(0); g < 3; g++ {
				v := l.group(g)
				last := uint64(40)
				if g == 1 && round == 1 {
					last = 41 // appended after the move
				}
				wantIndexes(t, v, 5, last)
				for _, e := range testEntries(g, 5, last) {
					wantLog(t, v, e)
				}
				if term, err := v.GetUint64([]byte("CurrentTerm")); err != nil || term != uint64(g)+11 {
					t.Fatalf("crashed %v, round %d: group %d's term: %d, %v", crashed, round, g, term, err)
				}
			}
			if round == 0 {
				if err := l.group(1).StoreLogs(testEntries(1, 41, 41)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if fileExists(filepath.Join(dir, nodeLogBoltFile)) || fileExists(filepath.Join(dir, nodeLogSegmentsNew)) {
				t.Fatalf("crashed %v: the bbolt file or the half-written segments are left after the move", crashed)
			}
		}
	}
}

// TestNodeLogDamage: a bad record at the end of the newest segment is a
// write a crash cut short and is cut away; one in an older segment, or a
// missing segment between two, is damage, and the node log does not open,
// naming the segment. A newest segment whose header never reached the
// disk is removed.
func TestNodeLogDamage(t *testing.T) {
	// fill writes groups 0 and 1 across several small segments and
	// returns the directory.
	fill := func(t *testing.T) string {
		dir := t.TempDir()
		l, err := openNodeLogWith(dir, nodeLogOpenOptions{segmentBytes: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(1); i <= 60; i += 4 {
			for g := uint32(0); g < 2; g++ {
				if err := l.group(g).StoreLogs(testEntries(g, i, i+3)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(l.segs) < 3 {
			t.Fatalf("%d segments; the test needs at least 3", len(l.segs))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	segs := func(t *testing.T, dir string) []string {
		seqs, err := listSegments(filepath.Join(dir, nodeLogSegments))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range seqs {
			out = append(out, filepath.Join(dir, nodeLogSegments, segmentName(s)))
		}
		return out
	}
	flip := func(t *testing.T, path string, at int64) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if at < 0 {
			at += int64(len(b))
		}
		b[at] ^= 0x40
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reopen := func(dir string) (*nodeLog, error) {
		return openNodeLogWith(dir, nodeLogOpenOptions{segmentBytes: 1 << 10})
	}

	t.Run("torn end of the newest", func(t *testing.T) {
		dir := fill(t)
		s := segs(t, dir)
		newest := s[len(s)-1]
		before, _ := os.Stat(newest)
		flip(t, newest, -1) // the last record's last byte
		l, err := reopen(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		after, _ := os.Stat(newest)
		if after.Size() >= before.Size() {
			t.Fatalf("the newest segment is %d bytes, it was %d: the bad record was not cut", after.Size(), before.Size())
		}
		// The cut record was the last one, group 1's entry 60.
		wantIndexes(t, l.group(0), 1, 60)
		wantIndexes(t, l.group(1), 1, 59)
		if err := l.group(1).StoreLogs(testEntries(1, 60, 60)); err != nil {
			t.Fatal(err)
		}
		for _, e := range testEntries(1, 55, 60) {
			wantLog(t, l.group(1), e)
		}
	})
	t.Run("damage in an older segment", func(t *testing.T) {
		dir := fill(t)
		s := segs(t, dir)
		flip(t, s[1], segmentHeaderBytes+recFrameBytes+3)
		_, err := reopen(dir)
		var re *RecordError
		if !errors.As(err, &re) || !errors.Is(err, ErrBadEntry) || re.Segment != s[1] || re.Offset != segmentHeaderBytes {
			t.Fatalf("a damaged record in an older segment: %v", err)
		}
		if !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("the error does not say what is wrong: %v", err)
		}
	})
	t.Run("missing segment", func(t *testing.T) {
		dir := fill(t)
		s := segs(t, dir)
		if err := os.Remove(s[1]); err != nil {
			t.Fatal(err)
		}
		if _, err := reopen(dir); !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("a segment missing between two: %v", err)
		}
	})
	t.Run("unstarted newest", func(t *testing.T) {
		dir := fill(t)
		s := segs(t, dir)
		next := filepath.Join(dir, nodeLogSegments, segmentName(uint64(len(s))+1))
		if err := os.WriteFile(next, appendRecord(nil, &walRecord{kind: recHeader, seq: uint64(len(s)) + 1})[:5], 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := reopen(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		if fileExists(next) {
			t.Fatal("the unstarted segment is still there")
		}
		wantIndexes(t, l.group(1), 1, 60)
	})
}

// TestNodeLogRemovedSegmentComesBack: a removed segment that a crash
// brings back (its removal, the last, was not yet durable) changes
// nothing: the deletes that emptied it come after it and empty it again.
func TestNodeLogRemovedSegmentComesBack(t *testing.T) {
	dir := t.TempDir()
	l, err := openNodeLogWith(dir, nodeLogOpenOptions{segmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.group(0).SetUint64([]byte("CurrentTerm"), 9); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 80; i += 10 {
		if err := l.group(0).StoreLogs(testEntries(0, i, i+9)); err != nil {
			t.Fatal(err)
		}
	}
	saved := map[string][]byte{}
	for _, s := range l.segs {
		b, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatal(err)
		}
		saved[s.path] = b
	}
	if err := l.group(0).DeleteRange(1, 50); err != nil {
		t.Fatal(err)
	}
	oldest := l.segs[0].seq
	if oldest < 3 {
		t.Fatalf("segment %d is the oldest left after the delete; the test needs two removed", oldest)
	}
	last := filepath.Join(dir, nodeLogSegments, segmentName(oldest-1))
	if fileExists(last) {
		t.Fatalf("segment %s still exists after every entry in it was deleted", last)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(last, saved[last], 0o600); err != nil {
		t.Fatal(err)
	}
	l = openTestNodeLog(t, dir)
	defer func() { _ = l.Close() }()
	if fileExists(last) {
		t.Fatalf("segment %s, brought back, was not removed again", last)
	}
	wantIndexes(t, l.group(0), 51, 80)
	wantNoLog(t, l.group(0), 20)
	if term, err := l.group(0).GetUint64([]byte("CurrentTerm")); err != nil || term != 9 {
		t.Fatalf("the term: %d, %v; want 9", term, err)
	}
}

// TestNodeLogFailedWriteStops: once a write of the node log fails, every
// later write fails too, naming the first failure, until the node log is
// opened again; what was synced before stays.
func TestNodeLogFailedWriteStops(t *testing.T) {
	dir := t.TempDir()
	l := openTestNodeLog(t, dir)
	if err := l.group(0).StoreLogs(testEntries(0, 1, 5)); err != nil {
		t.Fatal(err)
	}
	// Closing the file under the committer makes its next write fail.
	if err := l.segs[0].f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.group(0).StoreLogs(testEntries(0, 6, 6)); err == nil {
		t.Fatal("a write to a closed file succeeded")
	}
	err := l.group(1).SetUint64([]byte("CurrentTerm"), 3)
	if !errors.Is(err, errNodeLogFailed) || !strings.Contains(err.Error(), "appending to the node log") {
		t.Fatalf("a write after a failed one: %v", err)
	}
	_ = l.Close() // the file was closed already
	l = openTestNodeLog(t, dir)
	defer func() { _ = l.Close() }()
	wantIndexes(t, l.group(0), 1, 5)
	if err := l.group(0).StoreLogs(testEntries(0, 6, 6)); err != nil {
		t.Fatal(err)
	}
}

// TestNodeLogLocked: a second open of the same directory fails at once,
// with an error that says why.
func TestNodeLogLocked(t *testing.T) {
	dir := t.TempDir()
	l := openTestNodeLog(t, dir)
	defer func() { _ = l.Close() }()
	if _, err := openNodeLog(dir); err == nil || !strings.Contains(err.Error(), "another process holds it") {
		t.Fatalf("a second open: %v", err)
	}
}

// FuzzNodeLogSegment: any bytes as a segment are read without a panic,
// what parses frames back to exactly those bytes, and replaying it keeps
// the node log's memory consistent: each group's first and last index are
// its smallest and largest entry, and the segment's live count is the
// number of entries pointing into it.
func FuzzNodeLogSegment(f *testing.F) {
	var good []byte
	good = appendRecord(good, &walRecord{kind: recHeader, seq: 1})
	for _, e := range testEntries(3, 1, 4) {
		v, err := encodeLogEntry(e)
		if err != nil {
			f.Fatal(err)
		}
		good = appendRecord(good, &walRecord{kind: recEntry, group: 3, index: e.Index, entry: v})
	}
	good = appendRecord(good, &walRecord{kind: recDelete, group: 3, min: 1, max: 2})
	good = appendRecord(good, &walRecord{kind: recStable, group: 3, key: []byte("CurrentTerm"), val: []byte{0, 0, 0, 0, 0, 0, 0, 7}})
	good = appendRecord(good, &walRecord{kind: recDrop, group: 4})
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(good[:segmentHeaderBytes])
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<20 {
			return // a segment's size is not what this explores
		}
		l := &nodeLog{groups: map[uint32]*groupState{}}
		seg := &segment{seq: 1}
		var again []byte
		again = appendRecord(again, &walRecord{kind: recHeader, seq: 1})
		good, err := parseSegment(b, 1, func(r *walRecord, entryOff int64) error {
			if r.kind == recEntry && !bytes.Equal(b[entryOff:entryOff+int64(len(r.entry))], r.entry) {
				t.Fatalf("entry offset %d does not point at the entry", entryOff)
			}
			again = appendRecord(again, r)
			l.apply(r, seg, entryOff)
			return nil
		})
		if good < 0 || good > int64(len(b)) || err == nil && good != int64(len(b)) || err != nil && good == int64(len(b)) && len(b) > 0 {
			t.Fatalf("parsed to %d of %d bytes with %v", good, len(b), err)
		}
		if good > 0 && !bytes.Equal(again, b[:good]) {
			t.Fatalf("the records framed again differ from the bytes they came from")
		}
		entries := 0
		for g, st := range l.groups {
			var lo, hi uint64
			for i, loc := range st.entries {
				if loc.seg != seg || loc.off+int64(loc.n) > good {
					t.Fatalf("group %d's entry %d points at %+v, outside the %d bytes read", g, i, loc, good)
				}
				if lo == 0 || i < lo {
					lo = i
				}
				hi = max(hi, i)
			}
			if len(st.entries) > 0 && (st.first != lo || st.last != hi) || len(st.entries) == 0 && (st.first != 0 || st.last != 0) {
				t.Fatalf("group %d: first, last = %d, %d; its entries span %d to %d (%d of them)", g, st.first, st.last, lo, hi, len(st.entries))
			}
			entries += len(st.entries)
		}
		if seg.live != entries {
			t.Fatalf("the segment's live count is %d, and %d entries point into it", seg.live, entries)
		}
	})
}

// TestNodeLogIdleGroupHoldsNoSegments: a group that stopped writing (an
// idle shard) does not keep the oldest segment, and every one after it,
// while a busy group writes and compacts: a new segment begins with copies
// of the oldest one's few live entries, and the oldest empties. The idle
// group's entries and term survive, also across a reopening.
func TestNodeLogIdleGroupHoldsNoSegments(t *testing.T) {
	dir := t.TempDir()
	open := func() *nodeLog {
		l, err := openNodeLogWith(dir, nodeLogOpenOptions{segmentBytes: 2 << 10})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open()
	idle, busy := l.group(1), l.group(2)
	if err := idle.StoreLogs(testEntries(1, 1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := idle.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatal(err)
	}
	most := 0
	for i := uint64(1); i <= 2000; i += 10 {
		if err := busy.StoreLogs(testEntries(2, i, i+9)); err != nil {
			t.Fatal(err)
		}
		if i > 100 {
			if err := busy.DeleteRange(1, i-100); err != nil { // compaction, keeping 100
				t.Fatal(err)
			}
		}
		most = max(most, len(l.segs))
	}
	started := l.segs[len(l.segs)-1].seq
	if started < 20 || most > 8 {
		t.Fatalf("%d segments started, at most %d at once: the idle group held them (or the test wrote too little)", started, most)
	}
	check := func(l *nodeLog) {
		t.Helper()
		wantIndexes(t, l.group(1), 1, 3)
		for _, e := range testEntries(1, 1, 3) {
			wantLog(t, l.group(1), e)
		}
		if term, err := l.group(1).GetUint64([]byte("CurrentTerm")); err != nil || term != 4 {
			t.Fatalf("the idle group's term: %d, %v", term, err)
		}
		wantIndexes(t, l.group(2), 1892, 2000) // the last compaction kept from 1991-99
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open()
	defer func() { _ = l.Close() }()
	check(l)
	files, err := listSegments(filepath.Join(dir, nodeLogSegments))
	if err != nil || len(files) > 8 {
		t.Fatalf("%d segment files after reopening (%v)", len(files), err)
	}
}

// TestNodeLogUnstartedSegmentIgnored: a segment a crash cut while it was
// being created (still under its temporary name) is not read, and is
// removed at open.
func TestNodeLogUnstartedSegmentIgnored(t *testing.T) {
	dir := t.TempDir()
	l := openTestNodeLog(t, dir)
	if err := l.group(0).StoreLogs(testEntries(0, 1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, nodeLogSegments, segmentName(2)+segmentNewSuffix)
	if err := os.WriteFile(cut, appendRecord(nil, &walRecord{kind: recHeader, seq: 2})[:7], 0o600); err != nil {
		t.Fatal(err)
	}
	l = openTestNodeLog(t, dir)
	defer func() { _ = l.Close() }()
	if fileExists(cut) {
		t.Fatal("the cut segment is still there")
	}
	wantIndexes(t, l.group(0), 1, 5)
	if err := l.group(0).StoreLogs(testEntries(0, 6, 6)); err != nil {
		t.Fatal(err)
	}
}

// TestNodeLogFailedRemovalKeepsOrder: when the removal of an empty segment
// fails, it and the empty segments after it stay in the node log, and the
// next removals take them first: no newer segment is removed while an
// older one is left, so the segments on disk stay consecutive and the
// node log opens again.
func TestNodeLogFailedRemovalKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	l, err := openNodeLogWith(dir, nodeLogOpenOptions{segmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	g := l.group(0)
	for i := uint64(1); i <= 80; i += 10 {
		if err := g.StoreLogs(testEntries(0, i, i+9)); err != nil {
			t.Fatal(err)
		}
	}
	failing := true
	var tried []string
	l.testRemove = func(path string) error {
		tried = append(tried, filepath.Base(path))
		if failing {
			return errors.New("injected: the disk refused")
		}
		return os.Remove(path)
	}
	oldest := l.segs[0].seq
	if err := g.DeleteRange(1, 60); err != nil {
		t.Fatalf("a delete whose segments could not be removed: %v", err)
	}
	if len(tried) != 1 || l.segs[0].seq != oldest {
		t.Fatalf("after a failed removal: tried %v, the oldest segment is %d (was %d)", tried, l.segs[0].seq, oldest)
	}
	failing = false
	if err := g.StoreLogs(testEntries(0, 81, 81)); err != nil {
		t.Fatal(err)
	}
	if len(tried) < 3 || tried[1] != segmentName(oldest) {
		t.Fatalf("removals after the failure: %v; the first must be segment %d again", tried, oldest)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestNodeLog(t, dir)
	defer func() { _ = l.Close() }()
	wantIndexes(t, l.group(0), 61, 81)
}
