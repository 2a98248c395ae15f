package raftfsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

func openTestNodeLog(t testing.TB, path string) *nodeLog {
	t.Helper()
	l, err := openNodeLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testEntries returns entries first..last of group g with every field set
// in some of them: nil and empty Data, Extensions, AppendedAt set or not,
// every type raft writes.
func testEntries(g uint32, first, last uint64) []*raft.Log {
	var out []*raft.Log
	types := []raft.LogType{raft.LogCommand, raft.LogNoop, raft.LogConfiguration, raft.LogBarrier}
	for i := first; i <= last; i++ {
		l := &raft.Log{Index: i, Term: i/3 + 1, Type: types[i%uint64(len(types))]}
		if i%2 == 0 {
			l.Data = fmt.Appendf(nil, "group %d entry %d", g, i)
		}
		if i%3 == 0 {
			l.Extensions = []byte{byte(g), byte(i)}
		}
		if i%4 != 0 {
			l.AppendedAt = time.Unix(1_700_000_000+int64(i), int64(i)*1000+int64(g))
		}
		out = append(out, l)
	}
	return out
}

func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type && bytes.Equal(a.Data, b.Data) &&
		bytes.Equal(a.Extensions, b.Extensions) && a.AppendedAt.Equal(b.AppendedAt) && a.AppendedAt.IsZero() == b.AppendedAt.IsZero()
}

func wantIndexes(t *testing.T, s raft.LogStore, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("first, last = %d, %d; want %d, %d", f, l, first, last)
	}
}

func wantLog(t *testing.T, s raft.LogStore, want *raft.Log) {
	t.Helper()
	var got raft.Log
	if err := s.GetLog(want.Index, &got); err != nil {
		t.Fatalf("GetLog(%d): %v", want.Index, err)
	}
	if !sameLog(&got, want) {
		t.Fatalf("GetLog(%d) = %+v, want %+v", want.Index, got, *want)
	}
}

func wantNoLog(t *testing.T, s raft.LogStore, i uint64) {
	t.Helper()
	var got raft.Log
	if err := s.GetLog(i, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(%d) of a missing entry: %v, want raft.ErrLogNotFound", i, err)
	}
}

// TestNodeLogGroupContract: a group's view keeps raft.LogStore's and
// raft.StableStore's contract, including what hashicorp/raft expects of a
// new group (no entries, stable keys "not found").
func TestNodeLogGroupContract(t *testing.T) {
	l := openTestNodeLog(t, t.TempDir())
	defer func() { _ = l.Close() }()
	g := l.group(3)

	wantIndexes(t, g, 0, 0)
	wantNoLog(t, g, 1)
	for _, key := range []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"} {
		if _, err := g.Get([]byte(key)); err == nil || err.Error() != "not found" {
			t.Fatalf("Get(%s) of a new group: %v, want raft's \"not found\"", key, err)
		}
		if _, err := g.GetUint64([]byte(key)); err == nil || err.Error() != "not found" {
			t.Fatalf("GetUint64(%s) of a new group: %v, want raft's \"not found\"", key, err)
		}
	}
	snaps := raft.NewInmemSnapshotStore()
	if has, err := raft.HasExistingState(g, g, snaps); err != nil || has {
		t.Fatalf("HasExistingState of a new group: %v, %v", has, err)
	}

	entries := testEntries(3, 1, 10)
	if err := g.StoreLog(entries[0]); err != nil {
		t.Fatal(err)
	}
	if err := g.StoreLogs(entries[1:]); err != nil {
		t.Fatal(err)
	}
	if err := g.StoreLogs(nil); err != nil {
		t.Fatal(err)
	}
	wantIndexes(t, g, 1, 10)
	for _, e := range entries {
		wantLog(t, g, e)
	}
	wantNoLog(t, g, 11)
	wantNoLog(t, g, 0)

	if err := g.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	wantIndexes(t, g, 4, 10)
	wantNoLog(t, g, 3)
	if err := g.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	wantIndexes(t, g, 4, 7)
	wantNoLog(t, g, 8)
	if err := g.DeleteRange(6, 5); err != nil { // empty range
		t.Fatal(err)
	}
	wantIndexes(t, g, 4, 7)
	// An entry stored again replaces the one at its index (a follower
	// overwriting what it had, after a truncation).
	over := &raft.Log{Index: 7, Term: 99, Type: raft.LogCommand, Data: []byte("over")}
	if err := g.StoreLogs([]*raft.Log{over}); err != nil {
		t.Fatal(err)
	}
	wantLog(t, g, over)
	if err := g.DeleteRange(0, 100); err != nil {
		t.Fatal(err)
	}
	wantIndexes(t, g, 0, 0)

	if err := g.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if v, err := g.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("GetUint64 = %d, %v", v, err)
	}
	if err := g.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
	if v, err := g.Get([]byte("LastVoteCand")); err != nil || string(v) != "n2" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := g.GetUint64([]byte("LastVoteCand")); err == nil || !strings.Contains(err.Error(), "not a uint64") {
		t.Fatalf("GetUint64 of a 2-byte value: %v", err)
	}
	if has, err := raft.HasExistingState(g, g, snaps); err != nil || !has {
		t.Fatalf("HasExistingState after a term was set: %v, %v", has, err)
	}

	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.StoreLogs(entries); !errors.Is(err, ErrClosed) {
		t.Fatalf("StoreLogs on a closed view: %v", err)
	}
	if _, err := g.FirstIndex(); !errors.Is(err, ErrClosed) {
		t.Fatalf("FirstIndex on a closed view: %v", err)
	}
}

// TestNodeLogGroupsIsolated: groups of one node log see only their own
// entries and stable keys, at the same indexes and under the same keys.
func TestNodeLogGroupsIsolated(t *testing.T) {
	l := openTestNodeLog(t, t.TempDir())
	defer func() { _ = l.Close() }()
	a, b, c := l.group(0), l.group(1), l.group(256)
	ea, eb := testEntries(0, 1, 20), testEntries(1, 5, 30)
	if err := a.StoreLogs(ea); err != nil {
		t.Fatal(err)
	}
	if err := b.StoreLogs(eb); err != nil {
		t.Fatal(err)
	}
	if err := a.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	wantIndexes(t, a, 1, 20)
	wantIndexes(t, b, 5, 30)
	wantIndexes(t, c, 0, 0)
	if _, err := b.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("group 1 sees group 0's term: %v", err)
	}
	if err := b.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	wantIndexes(t, a, 1, 20)
	wantIndexes(t, b, 0, 0)
	for _, e := range ea {
		wantLog(t, a, e)
	}
	wantNoLog(t, c, 1)
}

// TestNodeLogDurableAcrossReopen: what a group stored is there after the
// node log is closed and opened again.
func TestNodeLogDurableAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raftlog")
	l := openTestNodeLog(t, path)
	for g := uint32(0); g < 3; g++ {
		if err := l.group(g).StoreLogs(testEntries(g, 1, 50)); err != nil {
			t.Fatal(err)
		}
		if err := l.group(g).DeleteRange(1, uint64(g)*10); err != nil {
			t.Fatal(err)
		}
		if err := l.group(g).SetUint64([]byte("CurrentTerm"), uint64(g)+5); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestNodeLog(t, path)
	defer func() { _ = l.Close() }()
	for g := uint32(0); g < 3; g++ {
		v := l.group(g)
		first := uint64(g)*10 + 1
		wantIndexes(t, v, first, 50)
		for _, e := range testEntries(g, first, 50) {
			wantLog(t, v, e)
		}
		if term, err := v.GetUint64([]byte("CurrentTerm")); err != nil || term != uint64(g)+5 {
			t.Fatalf("group %d's term after reopening: %d, %v", g, term, err)
		}
	}
}

// TestNodeLogRefusesOtherFiles: a bbolt file that is not a node log, a
// bbolt node log of another layout version, or a segment of another
// layout version is refused at open, and nothing of it is removed.
func TestNodeLogRefusesOtherFiles(t *testing.T) {
	t.Run("bbolt file of another kind", func(t *testing.T) {
		dir := t.TempDir()
		writeBoltNodeLog(t, dir, func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("other"))
			return err
		})
		if _, err := openNodeLog(dir); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "not a heddle node log") {
			t.Fatalf("a bbolt file of another kind: %v", err)
		}
		if !fileExists(filepath.Join(dir, nodeLogBoltFile)) || fileExists(filepath.Join(dir, nodeLogSegments)) {
			t.Fatal("the refused file was removed, or segments were made of it")
		}
	})
	t.Run("bbolt node log of another version", func(t *testing.T) {
		dir := t.TempDir()
		writeBoltNodeLog(t, dir, func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket(boltNodeLogInfoBucket)
			if err != nil {
				return err
			}
			return b.Put([]byte("version"), []byte{9})
		})
		if _, err := openNodeLog(dir); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "version") {
			t.Fatalf("a node log of another version: %v", err)
		}
	})
	t.Run("segment of another version", func(t *testing.T) {
		dir := t.TempDir()
		l := openTestNodeLog(t, dir)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		seg := filepath.Join(dir, nodeLogSegments, segmentName(1))
		b := appendRecord(nil, &walRecord{kind: recHeader, seq: 1})
		b[recFrameBytes+1] = walVersion + 1
		binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[recFrameBytes:], castagnoli))
		if err := os.WriteFile(seg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := openNodeLog(dir); !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), "layout version") {
			t.Fatalf("a segment of another version: %v", err)
		}
	})
}

// writeBoltNodeLog writes a bbolt file where a node log of an earlier
// version was kept, with fn's buckets.
func writeBoltNodeLog(t *testing.T, dir string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, nodeLogBoltFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// nodeLogModel is the reference a node log is checked against: each
// group's entries by index, and its stable keys.
type nodeLogModel struct {
	logs   map[uint32]map[uint64]*raft.Log
	stable map[uint32]map[string]uint64
}

// TestNodeLogMatchesModel: random appends, deletes, stable writes, drops
// and reopenings over several groups leave the node log as a map per group
// says. Segments are small, so the log starts new ones and removes old
// ones all along; some reopenings come after a crash that left half a
// record at the end. The seed is printed; HEDDLE_SEED replays one.
func TestNodeLogMatchesModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HEDDLE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	t.Logf("seed %d (HEDDLE_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	path := t.TempDir()
	open := func() *nodeLog {
		t.Helper()
		l, err := openNodeLogWith(path, nodeLogOpenOptions{segmentBytes: 2 << 10})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return l
	}
	l := open()
	defer func() { _ = l.Close() }()
	var reopens, torn int
	const groups = 4
	m := nodeLogModel{logs: map[uint32]map[uint64]*raft.Log{}, stable: map[uint32]map[string]uint64{}}
	next := map[uint32]uint64{}
	for g := uint32(0); g < groups; g++ {
		m.logs[g], m.stable[g], next[g] = map[uint64]*raft.Log{}, map[string]uint64{}, 1
	}
	check := func(step int) {
		t.Helper()
		for g := uint32(0); g < groups; g++ {
			v := l.group(g)
			var first, last uint64
			for i := range m.logs[g] {
				if first == 0 || i < first {
					first = i
				}
				last = max(last, i)
			}
			f, err1 := v.FirstIndex()
			la, err2 := v.LastIndex()
			if err := errors.Join(err1, err2); err != nil || f != first || la != last {
				t.Fatalf("seed %d step %d group %d: first, last = %d, %d (%v); the model says %d, %d", seed, step, g, f, la, err, first, last)
			}
			for i := first; i <= last+1 && last > 0; i++ {
				var got raft.Log
				err := v.GetLog(i, &got)
				want, ok := m.logs[g][i]
				switch {
				case !ok && !errors.Is(err, raft.ErrLogNotFound):
					t.Fatalf("seed %d step %d group %d: GetLog(%d) = %v, the model has no entry", seed, step, g, i, err)
				case ok && (err != nil || !sameLog(&got, want)):
					t.Fatalf("seed %d step %d group %d: GetLog(%d) = %+v, %v; the model has %+v", seed, step, g, i, got, err, *want)
				}
			}
			for _, key := range []string{"CurrentTerm", "LastVoteTerm"} {
				got, err := v.GetUint64([]byte(key))
				want, ok := m.stable[g][key]
				if ok != (err == nil) || got != want {
					t.Fatalf("seed %d step %d group %d: GetUint64(%s) = %d, %v; the model has %d, %v", seed, step, g, key, got, err, want, ok)
				}
			}
		}
	}
	for step := range 400 {
		g := uint32(rng.IntN(groups))
		v := l.group(g)
		switch op := rng.IntN(10); {
		case op < 5: // append, sometimes over a suffix (a follower's rewrite)
			start := next[g]
			if start > 1 && rng.IntN(4) == 0 {
				start -= uint64(rng.IntN(int(min(start-1, 5)))) + 1
			}
			n := uint64(rng.IntN(20)) + 1
			es := testEntries(g, start, start+n-1)
			for _, e := range es {
				e.Term = uint64(step)
			}
			if err := v.StoreLogs(es); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			for _, e := range es {
				m.logs[g][e.Index] = e
			}
			next[g] = max(next[g], start+n)
		case op < 7: // delete a range, a prefix most often (compaction)
			lo := uint64(rng.IntN(int(next[g]) + 1))
			hi := lo + uint64(rng.IntN(30))
			if rng.IntN(3) > 0 {
				lo = 0
			}
			if err := v.DeleteRange(lo, hi); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			for i := range m.logs[g] {
				if i >= lo && i <= hi {
					delete(m.logs[g], i)
				}
			}
		case op < 9:
			key := []string{"CurrentTerm", "LastVoteTerm"}[rng.IntN(2)]
			val := rng.Uint64()
			if err := v.SetUint64([]byte(key), val); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			m.stable[g][key] = val
		case op < 10 && rng.IntN(3) > 0:
			if err := l.dropGroup(g); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			m.logs[g], m.stable[g] = map[uint64]*raft.Log{}, map[string]uint64{}
		default:
			newest := l.segs[len(l.segs)-1].path
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			reopens++
			if rng.IntN(2) == 0 {
				// A crash in the middle of a commit's write: the start of
				// a record, cut anywhere.
				rec := appendRecord(nil, &walRecord{kind: recEntry, group: g, index: 1 << 40, entry: mustEncode(t, g, 1<<40)})
				f, err := os.OpenFile(newest, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(rec[:1+rng.IntN(len(rec)-1)]); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				torn++
			}
			l = open()
		}
		if step%20 == 0 {
			check(step)
		}
	}
	check(400)
	seq := l.segs[len(l.segs)-1].seq
	files, err := listSegments(filepath.Join(path, nodeLogSegments))
	if err != nil {
		t.Fatal(err)
	}
	if seq < 10 || len(files) >= int(seq) || len(files) != len(l.segs) {
		t.Fatalf("seed %d: %d segments were started and %d are left (%d open): the test did not start and remove segments as it should", seed, seq, len(files), len(l.segs))
	}
	t.Logf("%d segments started, %d left; %d reopenings, %d after a torn write", seq, len(files), reopens, torn)
}

func mustEncode(t *testing.T, g uint32, i uint64) []byte {
	t.Helper()
	v, err := encodeLogEntry(testEntries(g, i, i)[0])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNodeLogGroupCommit: appends of several groups that arrive while a
// commit is in progress are committed together, in the next transaction,
// and each caller returns once its entries are stored. A test hook holds
// the first commit until the others have queued behind it.
func TestNodeLogGroupCommit(t *testing.T) {
	l := openTestNodeLog(t, t.TempDir())
	defer func() { _ = l.Close() }()
	const others = 5
	entered, release := make(chan struct{}), make(chan struct{})
	queued := make(chan uint32, others)
	var batches [][]uint32
	l.testQueued = func(g uint32) { queued <- g }
	l.testBeforeCommit = func(groups []uint32) {
		batches = append(batches, slices.Clone(groups))
		if len(batches) == 1 {
			close(entered)
			<-release
		}
	}
	before := l.commits.Load()
	errs := make(chan error, others+1)
	go func() { errs <- l.group(0).StoreLogs(testEntries(0, 1, 3)) }()
	<-entered
	var wg sync.WaitGroup
	for g := uint32(1); g <= others; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.group(g).StoreLogs(testEntries(g, 1, uint64(g)))
		}()
	}
	for range others {
		<-queued
	}
	select {
	case err := <-errs:
		t.Fatalf("an append returned before its commit could run: %v", err)
	default:
	}
	close(release)
	wg.Wait()
	for range others + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := l.commits.Load() - before; n != 2 {
		t.Fatalf("%d commits for one append and %d queued behind it, want 2; batches %v", n, others, batches)
	}
	second := slices.Clone(batches[1])
	slices.Sort(second)
	if want := []uint32{1, 2, 3, 4, 5}; !slices.Equal(second, want) {
		t.Fatalf("the second commit held groups %v, want %v", second, want)
	}
	for g := uint32(0); g <= others; g++ {
		last := uint64(g)
		if g == 0 {
			last = 3
		}
		wantIndexes(t, l.group(g), 1, last)
		for _, e := range testEntries(g, 1, last) {
			wantLog(t, l.group(g), e)
		}
	}
}

// TestNodeLogConcurrentGroups: groups appending at once each find all of
// their entries, whatever commits took them (run with -race).
func TestNodeLogConcurrentGroups(t *testing.T) {
	l := openTestNodeLog(t, t.TempDir())
	defer func() { _ = l.Close() }()
	const groups, rounds = 6, 30
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	for g := uint32(0); g < groups; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := l.group(g)
			for r := uint64(0); r < rounds; r++ {
				if err := v.StoreLogs(testEntries(g, r*4+1, r*4+4)); err != nil {
					errs <- err
					return
				}
				var got raft.Log
				if err := v.GetLog(r*4+4, &got); err != nil {
					errs <- fmt.Errorf("group %d: entry %d not readable once stored: %w", g, r*4+4, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for g := uint32(0); g < groups; g++ {
		wantIndexes(t, l.group(g), 1, rounds*4)
	}
	if c := l.commits.Load(); c > groups*rounds {
		t.Fatalf("%d commits for %d appends", c, groups*rounds)
	}
}

func TestLogEntryCodec(t *testing.T) {
	for _, e := range append(testEntries(7, 1, 8), &raft.Log{}, &raft.Log{Index: 1<<64 - 1, Term: 1<<64 - 1, Type: 255,
		AppendedAt: time.Unix(-62135596800, 0)}) {
		b, err := encodeLogEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		var got raft.Log
		if err := decodeLogEntry(b, &got); err != nil {
			t.Fatalf("decode of %+v: %v", *e, err)
		}
		if !sameLog(&got, e) {
			t.Fatalf("decoded %+v, encoded %+v", got, *e)
		}
	}
	good, err := encodeLogEntry(&raft.Log{Index: 3, Term: 2, Data: []byte("abc"), Extensions: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"empty":       nil,
		"truncated":   good[:len(good)-1],
		"too long":    append(slices.Clone(good), 0),
		"version":     func() []byte { b := slices.Clone(good); b[0] = 2; return b }(),
		"flags":       func() []byte { b := slices.Clone(good); b[2] = 2; return b }(),
		"checksum":    func() []byte { b := slices.Clone(good); b[41] ^= 1; return b }(),
		"data length": func() []byte { b := slices.Clone(good); b[32] = 0xff; return b }(),
		"over bound":  make([]byte, maxLogEntryBytes+1),
	}
	for name, b := range bad {
		var got raft.Log
		if err := decodeLogEntry(b, &got); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: decode gave %v, want ErrBadEntry", name, err)
		}
	}
	if _, err := encodeLogEntry(&raft.Log{Data: make([]byte, maxLogEntryBytes)}); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("an entry over the bound encoded: %v", err)
	}
}

// FuzzDecodeLogEntry: the node log's entry decoder never panics, allocates
// within the entry's size, and what it accepts encodes back to the same
// bytes (the layout has one encoding per entry).
func FuzzDecodeLogEntry(f *testing.F) {
	for _, e := range testEntries(1, 1, 4) {
		b, _ := encodeLogEntry(e)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, logEntryHeaderBytes+logEntryCRCBytes))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if err := decodeLogEntry(b, &l); err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("an error that is not ErrBadEntry: %v", err)
			}
			return
		}
		if len(l.Data)+len(l.Extensions) > len(b) {
			t.Fatalf("decoded %d bytes of payload from %d", len(l.Data)+len(l.Extensions), len(b))
		}
		again, err := encodeLogEntry(&l)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding gave %x, %v; decoded from %x", again, err, b)
		}
	})
}

// groupStored reports whether the node log holds anything of group g.
func groupStored(l *nodeLog, g uint32) bool {
	l.state.RLock()
	defer l.state.RUnlock()
	return l.groups[g] != nil
}

// dropGroup removes one group's log and stable values and nothing of the
// others'; dropping it again, or a group never stored, is no error.
func TestNodeLogDropGroup(t *testing.T) {
	l, err := openNodeLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, g := range []uint32{1, 2} {
		v := l.group(g)
		if err := v.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Data: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		if err := v.SetUint64([]byte("CurrentTerm"), 7); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.dropGroup(1); err != nil {
		t.Fatal(err)
	}
	if groupStored(l, 1) || !groupStored(l, 2) {
		t.Fatalf("after dropping group 1: group 1 stored %v, group 2 stored %v", groupStored(l, 1), groupStored(l, 2))
	}
	if last, err := l.group(1).LastIndex(); err != nil || last != 0 {
		t.Fatalf("group 1's last index %d, %v; want 0", last, err)
	}
	if _, err := l.group(1).GetUint64([]byte("CurrentTerm")); err == nil {
		t.Fatal("group 1's term survived the drop")
	}
	if term, err := l.group(2).GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
		t.Fatalf("group 2's term %d, %v; want 7", term, err)
	}
	if err := l.dropGroup(1); err != nil {
		t.Fatal(err)
	}
	if err := l.dropGroup(9); err != nil {
		t.Fatal(err)
	}
}
