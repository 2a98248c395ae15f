package raftfsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// A sharded node (Host) keeps the Raft logs of all its groups, the
// metadata group and every shard it holds, in one log, the node log, as
// CockroachDB and TiKV keep one engine per store for all their ranges.
// Each group appends through its own view (groupLog), which is a
// raft.LogStore and a raft.StableStore. The point is the sync: appends
// that different groups make while one commit is being written and synced
// go together into the next commit, one write and one fdatasync for all
// of them (group commit), where one store per group synced each group's
// appends alone (docs/sharding.md, "Measured").
//
// The log is a directory of append-only segments (nodelog_wal.go has
// their layout). In memory, the node log holds each group's stable values
// and, for each entry, where its bytes are; an entry is read back from
// its segment. Earlier versions kept the node log in a bbolt file, which
// costs two fdatasyncs and a copy-on-write of B-tree pages a commit; such
// a file is moved into segments at open (nodelog_migrate.go).

// Where a sharded node keeps its node log, under its directory: the
// segments are in nodeLogSegments, which is created whole (written under
// nodeLogSegmentsNew, then renamed), and nodeLogBoltFile is the layout of
// earlier versions.
const (
	nodeLogDir          = "raftlog"
	nodeLogSegments     = "wal"
	nodeLogSegmentsNew  = "wal.new"
	nodeLogBoltFile     = "log.db"
	nodeLogLockFileName = "LOCK"
)

// errStableKeyNotFound is what Get and GetUint64 answer for a key never
// set. hashicorp/raft recognizes it by its text, "not found" (as
// raft-boltdb's ErrKeyNotFound and raft's in-memory store give it): on a
// new group's first start, the current term and the last vote are absent,
// and any other error would stop the group from starting.
var errStableKeyNotFound = errors.New("not found")

// errNodeLogFailed is what every write answers once a write or a sync of
// the node log failed: after a failed fdatasync the file's contents are
// unknown (the kernel may have dropped the pages it could not write), so
// the node log takes no more writes until the node is restarted and the
// segments are read again.
var errNodeLogFailed = errors.New("raftfsm: an earlier write of the node log failed; restart the node")

// nodeLog is a node's Raft log, shared by its groups.
type nodeLog struct {
	dir          string
	segmentBytes int64
	unlock       func()

	// state guards segs, groups and failed. The committer holds it to
	// apply what it synced; readers hold it shared while they read.
	state  sync.RWMutex
	segs   []*segment // the oldest first; the newest takes the appends
	groups map[uint32]*groupState
	failed error

	// mu guards queue and committing: the writes waiting for a commit,
	// and whether a caller is committing now (the committer; see submit).
	mu         sync.Mutex
	queue      []*logWrite
	committing bool

	// commits counts the committer's commits (each synced once) and
	// appends the appends (StoreLogs calls) they carried: their ratio is
	// how much group commit gathers (NodeLogCounts).
	commits atomic.Uint64
	appends atomic.Uint64
	// Test hooks, nil outside tests: testQueued is called when a write
	// joins the queue behind a commit in progress, testBeforeCommit with
	// the groups of each batch before its commit, and testYield in place
	// of the committer's yield (what others do meanwhile is the test's to
	// decide, not the Go scheduler's).
	testQueued       func(group uint32)
	testBeforeCommit func(groups []uint32)
	testYield        func()
	// testRemove, when set, removes a segment's file in place of
	// os.Remove (a test makes removals fail).
	testRemove func(path string) error
}

// groupState is what the node log holds of one group.
type groupState struct {
	entries     map[uint64]entryLoc
	first, last uint64 // 0 when entries is empty
	stable      map[string][]byte
}

// entryLoc is where an entry's bytes are.
type entryLoc struct {
	seg *segment
	off int64
	n   uint32
}

// forget takes the entry at loc out of its segment's live counts: it was
// deleted, dropped, or written again elsewhere.
func (loc entryLoc) forget() {
	loc.seg.live--
	loc.seg.liveBytes -= int64(loc.n)
}

// logWrite is one write waiting in the committer's queue: its records,
// framed already by the caller, and the offsets of its entries' bytes in
// them.
type logWrite struct {
	group   uint32
	appends bool // a StoreLogs call
	recs    []walRecord
	framed  []byte
	// entryAt[i] is where recs[i]'s entry starts in framed (recEntry).
	entryAt []int64
	// out receives exactly one logTurn: the outcome of the commit that
	// took this write, or the turn to commit.
	out chan logTurn
}

// add frames r into w.
func (w *logWrite) add(r walRecord) {
	w.entryAt = append(w.entryAt, int64(len(w.framed))+recEntryPrefix)
	w.framed = appendRecord(w.framed, &r)
	w.recs = append(w.recs, r)
}

type logTurn struct {
	lead bool
	err  error
}

// nodeLogOpenOptions are openNodeLogWith's settings; the zero value is
// valid: default segments, and no log of an earlier version to move.
type nodeLogOpenOptions struct {
	// segmentBytes is the size past which a new segment is started;
	// 0 means defaultSegmentBytes.
	segmentBytes int64
	// legacy names, in the node log's directory, the file where an
	// earlier version kept the same log, and readLegacy returns its
	// contents as segment records. When the directory has no segments
	// yet, the file's contents become the first segment; once the
	// segments exist, the file is removed. Empty: there is none.
	legacy     string
	readLegacy func(path string) ([]byte, error)
}

// openNodeLog opens (or creates) a sharded node's node log in dir: it
// takes the directory's lock, moves a bbolt node log of an earlier
// version into segments, and reads the segments back.
func openNodeLog(dir string) (*nodeLog, error) {
	return openNodeLogWith(dir, nodeLogOpenOptions{legacy: nodeLogBoltFile, readLegacy: readBoltNodeLog})
}

func openNodeLogWith(dir string, o nodeLogOpenOptions) (_ *nodeLog, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	// The directory's own name must be durable before the first write in
	// it is acknowledged (a new node's first term and vote).
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return nil, fmt.Errorf("raftfsm: node log %s: %w", dir, err)
	}
	unlock, err := lockNodeLog(dir)
	if err != nil {
		return nil, err
	}
	l := &nodeLog{dir: dir, segmentBytes: o.segmentBytes, unlock: unlock, groups: map[uint32]*groupState{}}
	if l.segmentBytes <= 0 {
		l.segmentBytes = defaultSegmentBytes
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.closeFiles())
		}
	}()
	segs := filepath.Join(dir, nodeLogSegments)
	if !fileExists(segs) {
		if err := l.create(segs, o); err != nil {
			return nil, fmt.Errorf("raftfsm: creating the node log in %s: %w", dir, err)
		}
	}
	// A crash may have left the segments being written, or the earlier
	// version's file moved already: the segments are the log now.
	leftovers := []string{filepath.Join(dir, nodeLogSegmentsNew)}
	unstarted, err := filepath.Glob(filepath.Join(segs, "*.seg"+segmentNewSuffix))
	if err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	leftovers = append(leftovers, unstarted...) // segments a crash cut while they were created
	if o.legacy != "" {
		leftovers = append(leftovers, filepath.Join(dir, o.legacy))
	}
	for _, p := range leftovers {
		if err := os.RemoveAll(p); err != nil {
			return nil, fmt.Errorf("raftfsm: node log %s: removing what an earlier start left: %w", dir, err)
		}
	}
	if err := l.replay(segs); err != nil {
		return nil, err
	}
	return l, nil
}

// create writes a new node log's segments directory: empty, or holding
// what the log of an earlier version holds (o.legacy). It writes it whole
// under another name and renames it, so a crash leaves either no
// segments or all of them.
func (l *nodeLog) create(segs string, o nodeLogOpenOptions) error {
	tmp := filepath.Join(l.dir, nodeLogSegmentsNew)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	var first []byte
	if o.legacy != "" && fileExists(filepath.Join(l.dir, o.legacy)) {
		b, err := o.readLegacy(filepath.Join(l.dir, o.legacy))
		if err != nil {
			return err
		}
		first = b
	}
	s, err := createSegment(tmp, 1, first)
	if err != nil {
		return err
	}
	if err := s.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, segs); err != nil {
		return err
	}
	return syncDir(l.dir)
}

// replay reads the segments in dir into memory. A bad record ends the
// newest segment: it is a write a crash cut short, which was never
// acknowledged, and the file is cut back to the record before it. A bad
// record in an older segment is damage, and the node log does not open.
func (l *nodeLog) replay(dir string) error {
	seqs, err := listSegments(dir)
	if err != nil {
		return err
	}
	if len(seqs) == 0 {
		return fmt.Errorf("%w: node log %s holds no segment", ErrBadEntry, dir)
	}
	for i, seq := range seqs {
		newest := i == len(seqs)-1
		path := filepath.Join(dir, segmentName(seq))
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("raftfsm: reading the node log: %w", err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("raftfsm: opening the node log: %w", err)
		}
		s := &segment{seq: seq, path: path, f: f}
		l.segs = append(l.segs, s)
		good, err := parseSegment(b, seq, func(r *walRecord, entryOff int64) error {
			l.apply(r, s, entryOff)
			return nil
		})
		var re *RecordError
		if errors.As(err, &re) && newest && good == 0 && len(seqs) > 1 {
			// A crash came while this segment was being started, before
			// its header was synced: nothing in it was acknowledged.
			l.segs = l.segs[:len(l.segs)-1]
			if err := errors.Join(f.Close(), os.Remove(path), syncDir(dir)); err != nil {
				return fmt.Errorf("raftfsm: node log %s: removing a segment a crash left unstarted: %w", path, err)
			}
			break
		}
		if errors.As(err, &re) && newest && good >= segmentHeaderBytes {
			// Cut short by a crash: what follows the last good record was
			// never synced, so never acknowledged.
			if err := f.Truncate(good); err != nil {
				return fmt.Errorf("raftfsm: node log %s: cutting the end a crash left: %w", path, err)
			}
			if err := datasync(f); err != nil {
				return fmt.Errorf("raftfsm: node log %s: %w", path, err)
			}
			err = nil
		}
		if err != nil {
			if errors.As(err, &re) {
				re.Segment = path
			}
			return err
		}
		s.size = good
	}
	// A segment that cannot be removed now stays, and is tried again at
	// the next commit that frees one: it costs space, not correctness.
	_ = l.removeSegments(l.gc())
	return nil
}

// Close closes the files and lets go of the directory. Every group using
// the node log must be closed first.
func (l *nodeLog) Close() error {
	if err := l.closeFiles(); err != nil {
		return fmt.Errorf("raftfsm: closing the node log %s: %w", l.dir, err)
	}
	return nil
}

func (l *nodeLog) closeFiles() error {
	l.state.Lock()
	defer l.state.Unlock()
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.f.Close())
	}
	l.segs = nil
	if l.unlock != nil {
		l.unlock()
		l.unlock = nil
	}
	return errors.Join(errs...)
}

// apply makes r, stored in s, part of the node log's memory. entryOff is
// where r's entry starts in s (recEntry). The caller holds state.
func (l *nodeLog) apply(r *walRecord, s *segment, entryOff int64) {
	g := l.groups[r.group]
	switch r.kind {
	case recEntry:
		if g == nil {
			g = &groupState{entries: map[uint64]entryLoc{}, stable: map[string][]byte{}}
			l.groups[r.group] = g
		}
		if old, ok := g.entries[r.index]; ok {
			old.forget()
		}
		g.entries[r.index] = entryLoc{seg: s, off: entryOff, n: uint32(len(r.entry))}
		s.live++
		s.liveBytes += int64(len(r.entry))
		if len(g.entries) == 1 || r.index < g.first {
			g.first = r.index
		}
		if len(g.entries) == 1 || r.index > g.last {
			g.last = r.index
		}
	case recDelete:
		if g != nil {
			g.deleteRange(r.min, r.max)
		}
	case recStable:
		if g == nil {
			g = &groupState{entries: map[uint64]entryLoc{}, stable: map[string][]byte{}}
			l.groups[r.group] = g
		}
		g.stable[string(r.key)] = bytes.Clone(r.val)
	case recDrop:
		if g != nil {
			for _, loc := range g.entries {
				loc.forget()
			}
			delete(l.groups, r.group)
		}
	}
}

// deleteRange removes the entries from lo to hi, both included.
func (g *groupState) deleteRange(lo, hi uint64) {
	if len(g.entries) == 0 || lo > hi || hi < g.first || lo > g.last {
		return
	}
	lo, hi = max(lo, g.first), min(hi, g.last)
	if hi-lo < uint64(len(g.entries)) {
		for i := lo; ; i++ {
			if loc, ok := g.entries[i]; ok {
				loc.forget()
				delete(g.entries, i)
			}
			if i == hi {
				break
			}
		}
	} else {
		// A range wider than the entries (the log has a gap, after a
		// snapshot was installed): walk the entries instead.
		for i, loc := range g.entries {
			if i >= lo && i <= hi {
				loc.forget()
				delete(g.entries, i)
			}
		}
	}
	g.first, g.last = 0, 0
	for i := range g.entries {
		if g.first == 0 || i < g.first {
			g.first = i
		}
		if i > g.last {
			g.last = i
		}
	}
}

// gc takes the oldest segments out of the node log while no live entry
// is left in them (never the newest, which takes the appends), and
// returns them, for removeSegments. The caller holds state.
func (l *nodeLog) gc() []*segment {
	var dead []*segment
	for len(l.segs) > 1 && l.segs[0].live <= 0 {
		dead = append(dead, l.segs[0])
		l.segs = l.segs[1:]
	}
	return dead
}

// removeSegments removes the files of segments gc took out, oldest first,
// each removal durable before the next: the segments left are always
// consecutive, so a segment missing between two is damage (listSegments).
// A segment that a crash brings back (its removal was not yet durable) is
// replayed before the segments whose deletes and drops emptied it, which
// empty it again, and it is removed again.
//
// When a removal fails, the segments not removed go back to the front of
// the node log's segments, in order, and the next gc tries them again
// first: a newer segment is never removed while an older one is left.
//
// Only the committer, or openNodeLog before anyone else, calls it.
func (l *nodeLog) removeSegments(dead []*segment) error {
	remove := os.Remove
	if l.testRemove != nil {
		remove = l.testRemove
	}
	for i, s := range dead {
		err := remove(s.path)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			// Once this sync returns, the removal is durable, and so is
			// every earlier one.
			err = syncDir(filepath.Dir(s.path))
			if err == nil {
				_ = s.f.Close() // nothing reads it: it held no live entry
				continue
			}
			i++ // its name is gone; a crash may bring it back, as the oldest
			_ = s.f.Close()
		}
		l.state.Lock()
		l.segs = append(slices.Clone(dead[i:]), l.segs...)
		l.state.Unlock()
		return fmt.Errorf("raftfsm: node log %s: removing a segment no entry needs: %w", l.dir, err)
	}
	return nil
}

// dropGroup removes every entry and stable value of group g (a replica
// that left the node); none of its views may be in use. A group with
// nothing stored is no error.
func (l *nodeLog) dropGroup(g uint32) error {
	w := &logWrite{group: g}
	w.add(walRecord{kind: recDrop, group: g})
	if err := l.submit(w); err != nil {
		return fmt.Errorf("raftfsm: node log %s: removing group %d: %w", l.dir, g, err)
	}
	return nil
}

// group returns the view of group g (0 the metadata group, k+1 shard k, as
// the multiplexer numbers them).
func (l *nodeLog) group(g uint32) *groupLog {
	return &groupLog{log: l, group: g}
}

// commitYields is how many times a caller that finds no commit in progress
// yields the processor before it commits (see submit). Measured with seq3
// on four shards (docs/sharding.md, "Measured"): one yield made commits
// carry more appends and cut the CPU a workflow costs.
const commitYields = 1

// submit commits w with whatever other groups' appends are waiting, and
// returns w's outcome once the transaction holding it is synced.
//
// There is no timer. A caller that finds no commit in progress becomes the
// committer: it yields (commitYields), then takes the whole queue (its own write and any that came
// before it took it) into one transaction. Callers that arrive while it
// writes and syncs wait in the queue; when its commit ends, it hands the
// turn to the first of them, which commits all of them together, and so
// on. A lone append thus costs one commit, as in a store of its own, and
// appends arriving under load share one.
func (l *nodeLog) submit(w *logWrite) error {
	w.out = make(chan logTurn, 1)
	l.mu.Lock()
	l.queue = append(l.queue, w)
	lead := !l.committing
	l.committing = true
	queued := l.testQueued
	l.mu.Unlock()
	if !lead {
		if queued != nil {
			queued(w.group)
		}
		t := <-w.out
		if !t.lead {
			return t.err
		}
	}
	if lead {
		// Before taking the queue, the new committer lets the goroutines
		// that are ready to run go first: under load they are often other
		// groups' Raft loops on their way to an append, which then join
		// this commit instead of waiting for the next one. A yield is not
		// a timer: with nothing else ready it returns at once, so a lone
		// append on an idle node still commits without delay.
		for range commitYields {
			if l.testYield != nil {
				l.testYield()
				continue
			}
			runtime.Gosched()
		}
	}
	// w commits. The queue holds w: a caller that leads either found no
	// commit in progress, or was handed the turn as the queue's first,
	// and only the committer empties the queue.
	l.mu.Lock()
	batch := l.queue
	l.queue = nil
	l.mu.Unlock()
	err := l.commit(batch)
	for _, o := range batch {
		if o != w {
			o.out <- logTurn{err: err}
		}
	}
	l.mu.Lock()
	if len(l.queue) > 0 {
		l.queue[0].out <- logTurn{lead: true}
	} else {
		l.committing = false
	}
	l.mu.Unlock()
	return err
}

// commit writes a batch of writes with one write and one fdatasync, then
// makes them part of the node log's memory.
func (l *nodeLog) commit(batch []*logWrite) error {
	if l.testBeforeCommit != nil {
		groups := make([]uint32, len(batch))
		for i, w := range batch {
			groups[i] = w.group
		}
		l.testBeforeCommit(groups)
	}
	l.commits.Add(1)
	size := 0
	for _, w := range batch {
		if w.appends {
			l.appends.Add(1)
		}
		size += len(w.framed)
	}
	l.state.RLock()
	failed := l.failed
	cur := l.segs[len(l.segs)-1]
	l.state.RUnlock()
	if failed != nil {
		return fmt.Errorf("%w (%w)", errNodeLogFailed, failed)
	}
	if cur.size > segmentHeaderBytes && cur.size+int64(size) > l.segmentBytes {
		var err error
		if cur, err = l.rotate(cur); err != nil {
			return l.fail(fmt.Errorf("raftfsm: node log %s: starting a segment: %w", l.dir, err))
		}
	}
	buf := batch[0].framed
	if len(batch) > 1 {
		buf = make([]byte, 0, size)
		for _, w := range batch {
			buf = append(buf, w.framed...)
		}
	}
	base := cur.size
	if _, err := cur.f.WriteAt(buf, base); err != nil {
		return l.fail(fmt.Errorf("raftfsm: appending to the node log %s: %w", cur.path, err))
	}
	if err := datasync(cur.f); err != nil {
		return l.fail(fmt.Errorf("raftfsm: syncing the node log %s: %w", cur.path, err))
	}
	l.state.Lock()
	cur.size += int64(len(buf))
	at := base
	for _, w := range batch {
		for i := range w.recs {
			l.apply(&w.recs[i], cur, at+w.entryAt[i])
		}
		at += int64(len(w.framed))
	}
	// Deletes, drops and a rotation's copies empty segments; gc looks at
	// the oldest alone, so asking at every commit costs nothing.
	dead := l.gc()
	l.state.Unlock()
	// The writes are durable and applied; a segment that could not be
	// removed costs space, not correctness, so its error is not theirs.
	// It is removed again at the next start.
	_ = l.removeSegments(dead)
	return nil
}

// rotate starts the segment after cur, beginning with every group's
// stable values (so that no older segment is needed for them) and, when
// they are few, copies of the oldest segment's live entries (so that it
// empties; see the layout in nodelog_wal.go), and returns it.
func (l *nodeLog) rotate(cur *segment) (*segment, error) {
	l.state.RLock()
	first, copied, err := l.rotationRecords()
	l.state.RUnlock()
	if err != nil {
		return nil, err
	}
	s, err := createSegment(filepath.Dir(cur.path), cur.seq+1, first)
	if err != nil {
		return nil, err
	}
	l.state.Lock()
	defer l.state.Unlock()
	l.segs = append(l.segs, s)
	for _, c := range copied {
		l.apply(&c.rec, s, c.entryAt)
	}
	return s, nil
}

// copyShare bounds the live bytes of the oldest segment that a rotation
// copies forward, as a share of a segment: a segment held by a few
// entries of an idle group is copied, one most of whose entries are still
// live (a busy group that has not compacted yet) waits.
const copyShare = 4

// copiedEntry is an entry a rotation copies, and where it starts in the
// new segment.
type copiedEntry struct {
	rec     walRecord
	entryAt int64
}

// rotationRecords returns the records a new segment begins with, after
// its header: every group's stable values, then the oldest segment's live
// entries when they are at most 1/copyShare of a segment (and that
// segment is not the newest), with where each copied entry starts in the
// new segment. The caller holds state, shared.
func (l *nodeLog) rotationRecords() ([]byte, []copiedEntry, error) {
	groups := make([]uint32, 0, len(l.groups))
	for g := range l.groups {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	var first []byte
	for _, g := range groups {
		st := l.groups[g].stable
		keys := make([]string, 0, len(st))
		for k := range st {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			first = appendRecord(first, &walRecord{kind: recStable, group: g, key: []byte(k), val: st[k]})
		}
	}
	oldest := l.segs[0]
	if len(l.segs) < 2 || oldest.live == 0 || oldest.liveBytes > l.segmentBytes/copyShare {
		return first, nil, nil
	}
	var copied []copiedEntry
	for _, g := range groups {
		st := l.groups[g]
		indexes := make([]uint64, 0)
		for i, loc := range st.entries {
			if loc.seg == oldest {
				indexes = append(indexes, i)
			}
		}
		slices.Sort(indexes)
		for _, i := range indexes {
			loc := st.entries[i]
			v := make([]byte, loc.n)
			if _, err := loc.seg.f.ReadAt(v, loc.off); err != nil {
				return nil, nil, fmt.Errorf("reading entry %d of group %d from %s to copy it: %w", i, g, loc.seg.path, err)
			}
			r := walRecord{kind: recEntry, group: g, index: i, entry: v}
			copied = append(copied, copiedEntry{rec: r, entryAt: segmentHeaderBytes + int64(len(first)) + recEntryPrefix})
			first = appendRecord(first, &r)
		}
	}
	return first, copied, nil
}

// fail makes err the node log's last write: see errNodeLogFailed.
func (l *nodeLog) fail(err error) error {
	l.state.Lock()
	l.failed = err
	l.state.Unlock()
	return err
}

// NodeLogCounts is what a node log's committer has done since the node
// opened it: its transactions (each synced once) and the appends they
// carried, one per StoreLogs call of any of the node's groups.
type NodeLogCounts struct {
	Commits uint64
	Appends uint64
}

// NodeLogCounts reports the node log's commits and appends so far, to
// measure how much group commit gathers (bench prints appends per commit).
func (h *Host) NodeLogCounts() NodeLogCounts {
	return NodeLogCounts{Commits: h.log.commits.Load(), Appends: h.log.appends.Load()}
}

// groupLog is one group's view of the node log: its raft.LogStore and
// raft.StableStore. A group sees only its own entries and values.
type groupLog struct {
	log    *nodeLog
	group  uint32
	closed atomic.Bool
}

var (
	_ raft.LogStore    = (*groupLog)(nil)
	_ raft.StableStore = (*groupLog)(nil)
)

// Close ends the view (the node log stays open for the node's other
// groups; the Host closes it after them).
func (g *groupLog) Close() error {
	g.closed.Store(true)
	return nil
}

func (g *groupLog) check() error {
	if g.closed.Load() {
		return ErrClosed
	}
	return nil
}

// read runs fn over the group's state (nil when the node log holds
// nothing of it), with the node log's state held shared.
func (g *groupLog) read(fn func(st *groupState) error) error {
	if err := g.check(); err != nil {
		return err
	}
	g.log.state.RLock()
	defer g.log.state.RUnlock()
	return fn(g.log.groups[g.group])
}

// FirstIndex implements raft.LogStore: 0 when the log is empty.
func (g *groupLog) FirstIndex() (uint64, error) {
	var i uint64
	err := g.read(func(st *groupState) error {
		if st != nil {
			i = st.first
		}
		return nil
	})
	return i, err
}

// LastIndex implements raft.LogStore: 0 when the log is empty.
func (g *groupLog) LastIndex() (uint64, error) {
	var i uint64
	err := g.read(func(st *groupState) error {
		if st != nil {
			i = st.last
		}
		return nil
	})
	return i, err
}

// GetLog implements raft.LogStore: raft.ErrLogNotFound when the group has
// no entry at index.
func (g *groupLog) GetLog(index uint64, out *raft.Log) error {
	var v []byte
	err := g.read(func(st *groupState) error {
		var loc entryLoc
		ok := false
		if st != nil {
			loc, ok = st.entries[index]
		}
		if !ok {
			return raft.ErrLogNotFound
		}
		v = make([]byte, loc.n)
		if _, err := loc.seg.f.ReadAt(v, loc.off); err != nil {
			return fmt.Errorf("raftfsm: reading entry %d of group %d from %s: %w", index, g.group, loc.seg.path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return decodeStoredEntry(index, v, out)
}

// decodeStoredEntry decodes v, stored at index, into out: an entry that
// does not decode, or that says another index, is an *EntryError naming
// index.
func decodeStoredEntry(index uint64, v []byte, out *raft.Log) error {
	if err := decodeLogEntry(v, out); err != nil {
		var ee *EntryError
		if errors.As(err, &ee) {
			ee.Index = index
		}
		return err
	}
	if out.Index != index {
		return &EntryError{Index: index, Reason: fmt.Sprintf("node log entry stored at index %d says index %d", index, out.Index)}
	}
	return nil
}

// StoreLog implements raft.LogStore.
func (g *groupLog) StoreLog(l *raft.Log) error {
	return g.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore: the entries are encoded and framed
// here, on the caller's goroutine, then committed with other groups'
// writes (submit). It returns once they are synced, or with the error of
// their commit.
func (g *groupLog) StoreLogs(logs []*raft.Log) error {
	if err := g.check(); err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	w := &logWrite{group: g.group, appends: true, recs: make([]walRecord, 0, len(logs)), entryAt: make([]int64, 0, len(logs))}
	for _, l := range logs {
		v, err := encodeLogEntry(l)
		if err != nil {
			return err
		}
		w.add(walRecord{kind: recEntry, group: g.group, index: l.Index, entry: v})
	}
	return g.log.submit(w)
}

// DeleteRange implements raft.LogStore: it removes the entries from min to
// max, both included. Like an append, it returns once synced, so a
// follower's delete-then-append stays in that order on disk (the
// committer writes in the order it was handed writes).
func (g *groupLog) DeleteRange(minIndex, maxIndex uint64) error {
	if err := g.check(); err != nil {
		return err
	}
	if minIndex > maxIndex {
		return nil
	}
	w := &logWrite{group: g.group}
	w.add(walRecord{kind: recDelete, group: g.group, min: minIndex, max: maxIndex})
	return g.log.submit(w)
}

// maxStableKeyBytes bounds a stable key (its length is two bytes in a
// record); Raft's keys are a few bytes.
const maxStableKeyBytes = 1 << 10

// Set implements raft.StableStore. Raft's current term and vote, written
// at elections, are durable when it returns, as Raft needs.
func (g *groupLog) Set(key, val []byte) error {
	if err := g.check(); err != nil {
		return err
	}
	if len(key) > maxStableKeyBytes || len(val) > maxRecordBytes/2 {
		return fmt.Errorf("%w: a stable key of %d bytes with a value of %d bytes (limits %d and %d)", ErrConfig, len(key), len(val), maxStableKeyBytes, maxRecordBytes/2)
	}
	w := &logWrite{group: g.group}
	w.add(walRecord{kind: recStable, group: g.group, key: key, val: val})
	if err := g.log.submit(w); err != nil {
		return fmt.Errorf("raftfsm: node log %s, group %d: %w", g.log.dir, g.group, err)
	}
	return nil
}

// Get implements raft.StableStore: errStableKeyNotFound for a key never
// set.
func (g *groupLog) Get(key []byte) ([]byte, error) {
	var out []byte
	err := g.read(func(st *groupState) error {
		v, ok := []byte(nil), false
		if st != nil {
			v, ok = st.stable[string(key)]
		}
		if !ok {
			return errStableKeyNotFound
		}
		out = bytes.Clone(v)
		if out == nil {
			out = []byte{}
		}
		return nil
	})
	return out, err
}

// SetUint64 implements raft.StableStore.
func (g *groupLog) SetUint64(key []byte, val uint64) error {
	return g.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 implements raft.StableStore: errStableKeyNotFound for a key
// never set.
func (g *groupLog) GetUint64(key []byte) (uint64, error) {
	v, err := g.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftfsm: node log %s, group %d: stable key %q holds %d bytes, not a uint64's 8", g.log.dir, g.group, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
