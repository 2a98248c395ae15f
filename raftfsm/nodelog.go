package raftfsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// A sharded node (Host) keeps the Raft logs of all its groups, the
// metadata group and every shard it holds, in one bbolt file, the node
// log, as CockroachDB and TiKV keep one engine per store for all their
// ranges. Each group appends through its own view (groupLog), which is a
// raft.LogStore and a raft.StableStore over buckets of its own. The point
// is the sync: appends that different groups make while one commit is
// being written and synced go together into the next transaction, one
// commit and one sync for all of them (group commit), where one store per
// group synced each group's appends alone (docs/sharding.md, "Measured").
//
// The file holds a top-level bucket nodeLogInfoBucket, with the layout's
// version, and one top-level bucket per group, named by groupBucketName,
// holding two buckets: logBucket (the big-endian index → the entry in the
// layout of nodelog_codec.go) and stableBucket (raft's stable keys → their
// values).

// Where a sharded node keeps its node log, under its directory.
const (
	nodeLogDir  = "raftlog"
	nodeLogFile = "log.db"
)

// nodeLogVersion is the version of the node log's bucket layout, stored
// under nodeLogInfoBucket/"version".
const nodeLogVersion = 1

var (
	nodeLogInfoBucket = []byte("heddle-node-log")
	logBucket         = []byte("logs")
	stableBucket      = []byte("stable")
)

// errStableKeyNotFound is what Get and GetUint64 answer for a key never
// set. hashicorp/raft recognizes it by its text, "not found" (as
// raft-boltdb's ErrKeyNotFound and raft's in-memory store give it): on a
// new group's first start, the current term and the last vote are absent,
// and any other error would stop the group from starting.
var errStableKeyNotFound = errors.New("not found")

// nodeLogOpenTimeout bounds the wait for the file's lock: a second process
// opening the same directory fails with a clear error instead of waiting
// for ever.
const nodeLogOpenTimeout = 2 * time.Second

// nodeLog is a node's Raft log database, shared by its groups.
type nodeLog struct {
	db   *bolt.DB
	path string

	// mu guards queue and committing: the appends waiting for a commit,
	// and whether a caller is committing now (the committer; see submit).
	mu         sync.Mutex
	queue      []*logWrite
	committing bool

	// commits counts the committer's transactions and appends the
	// appends (StoreLogs calls) they carried: their ratio is how much
	// group commit gathers (NodeLogCounts).
	commits atomic.Uint64
	appends atomic.Uint64
	// Test hooks, nil outside tests: testQueued is called when an append
	// joins the queue behind a commit in progress, testBeforeCommit with
	// the groups of each batch before its transaction, and testYield in
	// place of the committer's yield (what others do meanwhile is the
	// test's to decide, not the Go scheduler's).
	testQueued       func(group uint32)
	testBeforeCommit func(groups []uint32)
	testYield        func()
}

// logWrite is one StoreLogs call waiting in the committer's queue.
type logWrite struct {
	group   uint32
	indexes []uint64
	values  [][]byte
	// out receives exactly one logTurn: the outcome of the commit that
	// took this write, or the turn to commit.
	out chan logTurn
}

type logTurn struct {
	lead bool
	err  error
}

// openNodeLog opens (or creates) the node log at path.
func openNodeLog(path string) (*nodeLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	// The freelist is not written at each commit (bbolt rebuilds it by
	// scanning the file at open): a log's commits free pages all the
	// time, and writing the list back each time is a share of every
	// append's I/O, for an open that only a restart pays.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: nodeLogOpenTimeout, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("raftfsm: opening the node log %s: another process holds it (is another heddle node running in this directory?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("raftfsm: opening the node log %s: %w", path, err)
	}
	l := &nodeLog{db: db, path: path}
	if err := db.Update(l.initialize); err != nil {
		return nil, errors.Join(fmt.Errorf("raftfsm: node log %s: %w", path, err), db.Close())
	}
	return l, nil
}

// initialize writes the layout's version into a new file and checks it in
// an existing one.
func (l *nodeLog) initialize(tx *bolt.Tx) error {
	if info := tx.Bucket(nodeLogInfoBucket); info != nil {
		v := info.Get([]byte("version"))
		if len(v) != 1 || v[0] != nodeLogVersion {
			return fmt.Errorf("%w: the node log's layout version is %v, this node reads %d", ErrConfig, v, nodeLogVersion)
		}
		return nil
	}
	if k, _ := tx.Cursor().First(); k != nil {
		return fmt.Errorf("%w: the file is a bbolt database but not a heddle node log (it has a bucket %q)", ErrConfig, k)
	}
	info, err := tx.CreateBucket(nodeLogInfoBucket)
	if err != nil {
		return err
	}
	return info.Put([]byte("version"), []byte{nodeLogVersion})
}

// Close closes the file. Every group using it must be closed first.
func (l *nodeLog) Close() error {
	if err := l.db.Close(); err != nil {
		return fmt.Errorf("raftfsm: closing the node log %s: %w", l.path, err)
	}
	return nil
}

// dropGroup removes every entry and stable value of group g (a replica
// that left the node); none of its views may be in use. A group with
// nothing stored is no error.
func (l *nodeLog) dropGroup(g uint32) error {
	err := l.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(groupBucketName(g)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("raftfsm: node log %s: removing group %d: %w", l.path, g, err)
	}
	return nil
}

// group returns the view of group g (0 the metadata group, k+1 shard k, as
// the multiplexer numbers them).
func (l *nodeLog) group(g uint32) *groupLog {
	return &groupLog{log: l, group: g, name: groupBucketName(g)}
}

func groupBucketName(g uint32) []byte {
	b := []byte("group-....")
	binary.BigEndian.PutUint32(b[len(b)-4:], g)
	return b
}

func indexKey(i uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], i)
	return k[:]
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

// commit writes a batch of appends in one transaction, synced once.
func (l *nodeLog) commit(batch []*logWrite) error {
	if l.testBeforeCommit != nil {
		groups := make([]uint32, len(batch))
		for i, w := range batch {
			groups[i] = w.group
		}
		l.testBeforeCommit(groups)
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		for _, w := range batch {
			b, err := groupBucket(tx, w.group, logBucket, true)
			if err != nil {
				return err
			}
			// A log appends at its end: full pages waste less of the
			// file than bbolt's default half-full split.
			b.FillPercent = 0.9
			for i, v := range w.values {
				if err := b.Put(indexKey(w.indexes[i]), v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	l.commits.Add(1)
	l.appends.Add(uint64(len(batch)))
	if err != nil {
		return fmt.Errorf("raftfsm: appending to the node log %s: %w", l.path, err)
	}
	return nil
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

// groupBucket returns group g's bucket sub (logBucket or stableBucket),
// creating it when create is set and tx writable; nil when absent.
func groupBucket(tx *bolt.Tx, g uint32, sub []byte, create bool) (*bolt.Bucket, error) {
	name := groupBucketName(g)
	if !create {
		top := tx.Bucket(name)
		if top == nil {
			return nil, nil
		}
		return top.Bucket(sub), nil
	}
	top, err := tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	return top.CreateBucketIfNotExists(sub)
}

// groupLog is one group's view of the node log: its raft.LogStore and
// raft.StableStore. A group sees only its own buckets.
type groupLog struct {
	log    *nodeLog
	group  uint32
	name   []byte
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

// view runs fn over the group's bucket sub, nil when it does not exist.
func (g *groupLog) view(sub []byte, fn func(*bolt.Bucket) error) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.log.db.View(func(tx *bolt.Tx) error {
		b, _ := groupBucket(tx, g.group, sub, false)
		return fn(b)
	})
}

// FirstIndex implements raft.LogStore: 0 when the log is empty.
func (g *groupLog) FirstIndex() (uint64, error) {
	var i uint64
	err := g.view(logBucket, func(b *bolt.Bucket) error {
		if b != nil {
			if k, _ := b.Cursor().First(); len(k) == 8 {
				i = binary.BigEndian.Uint64(k)
			}
		}
		return nil
	})
	return i, err
}

// LastIndex implements raft.LogStore: 0 when the log is empty.
func (g *groupLog) LastIndex() (uint64, error) {
	var i uint64
	err := g.view(logBucket, func(b *bolt.Bucket) error {
		if b != nil {
			if k, _ := b.Cursor().Last(); len(k) == 8 {
				i = binary.BigEndian.Uint64(k)
			}
		}
		return nil
	})
	return i, err
}

// GetLog implements raft.LogStore: raft.ErrLogNotFound when the group has
// no entry at index.
func (g *groupLog) GetLog(index uint64, out *raft.Log) error {
	return g.view(logBucket, func(b *bolt.Bucket) error {
		var v []byte
		if b != nil {
			v = b.Get(indexKey(index))
		}
		if v == nil {
			return raft.ErrLogNotFound
		}
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
	})
}

// StoreLog implements raft.LogStore.
func (g *groupLog) StoreLog(l *raft.Log) error {
	return g.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore: the entries are encoded here, on the
// caller's goroutine, then committed with other groups' appends (submit).
// It returns once they are synced, or with the error of their commit.
func (g *groupLog) StoreLogs(logs []*raft.Log) error {
	if err := g.check(); err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	w := &logWrite{group: g.group, indexes: make([]uint64, len(logs)), values: make([][]byte, len(logs))}
	for i, l := range logs {
		v, err := encodeLogEntry(l)
		if err != nil {
			return err
		}
		w.indexes[i], w.values[i] = l.Index, v
	}
	return g.log.submit(w)
}

// DeleteRange implements raft.LogStore: it removes the entries from min to
// max, both included.
//
// It is a transaction of its own, not the committer's: Raft deletes
// rarely (compacting after a snapshot, or a follower dropping a
// conflicting suffix before it appends the leader's entries), so there is
// nothing to gain from batching it, and since it returns only once synced,
// a follower's delete-then-append stays in that order on disk. bbolt runs
// one write transaction at a time, so it simply waits for a commit in
// progress.
func (g *groupLog) DeleteRange(minIndex, maxIndex uint64) error {
	if err := g.check(); err != nil {
		return err
	}
	if minIndex > maxIndex {
		return nil
	}
	return g.update(logBucket, func(b *bolt.Bucket) error {
		// The keys are gathered first and then deleted: deleting under a
		// moving cursor is where bbolt's cursors have skipped keys.
		var keys [][]byte
		c := b.Cursor()
		maxKey := indexKey(maxIndex)
		for k, _ := c.Seek(indexKey(minIndex)); k != nil && bytes.Compare(k, maxKey) <= 0; k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// update runs fn in a transaction of its own over the group's bucket sub,
// created if absent.
//
// The stable store's writes (Raft's current term and vote, written at
// elections) take this path too rather than the committer's: they are
// rare, Raft needs each durable before it goes on, and keeping them out
// of the committer keeps its queue to appends alone.
func (g *groupLog) update(sub []byte, fn func(*bolt.Bucket) error) error {
	err := g.log.db.Update(func(tx *bolt.Tx) error {
		b, err := groupBucket(tx, g.group, sub, true)
		if err != nil {
			return err
		}
		return fn(b)
	})
	if err != nil {
		return fmt.Errorf("raftfsm: node log %s, group %d: %w", g.log.path, g.group, err)
	}
	return nil
}

// Set implements raft.StableStore.
func (g *groupLog) Set(key, val []byte) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.update(stableBucket, func(b *bolt.Bucket) error { return b.Put(key, val) })
}

// Get implements raft.StableStore: errStableKeyNotFound for a key never
// set.
func (g *groupLog) Get(key []byte) ([]byte, error) {
	var out []byte
	err := g.view(stableBucket, func(b *bolt.Bucket) error {
		var v []byte
		if b != nil {
			v = b.Get(key)
		}
		if v == nil {
			return errStableKeyNotFound
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// SetUint64 implements raft.StableStore.
func (g *groupLog) SetUint64(key []byte, val uint64) error {
	return g.Set(key, indexKey(val))
}

// GetUint64 implements raft.StableStore: errStableKeyNotFound for a key
// never set.
func (g *groupLog) GetUint64(key []byte) (uint64, error) {
	v, err := g.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftfsm: node log %s, group %d: stable key %q holds %d bytes, not a uint64's 8", g.log.path, g.group, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
