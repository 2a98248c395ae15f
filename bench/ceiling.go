package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/heddlewf/heddle/storage"
)

// Ceiling is what the storage underneath can do with the workload's write
// pattern, measured in the same run: writes of PayloadBytes from
// Concurrency writers, each waiting for its write to be durable.
type Ceiling struct {
	// Kind names the loop: "badger-synced-batch" (embedded) or
	// "raft3-badger-apply" (cluster).
	Kind         string    `json:"kind"`
	PayloadBytes int       `json:"payload_bytes"`
	Concurrency  int       `json:"concurrency"`
	Writes       int       `json:"writes"`
	WritesPerS   float64   `json:"writes_per_s"`
	LatencyMS    LatencyMS `json:"latency_ms"`
	// DiskBytesPerWrite is du of the loop's directories over its writes.
	DiskBytesPerWrite float64 `json:"disk_bytes_per_write"`
}

// measureCeiling runs the raw loop of mode for about d (or, with
// maxWrites > 0, for exactly maxWrites writes) in a new directory under root.
// A cluster of several shards is set against as many bare groups in
// parallel (groups > 1).
func measureCeiling(mode, root string, payloadBytes, concurrency int, d time.Duration, maxWrites, groups int) (Ceiling, error) {
	payload := make([]byte, payloadBytes)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	switch mode {
	case ModeEmbedded:
		return badgerCeiling(filepath.Join(root, "ceiling"), payload, concurrency, d, maxWrites)
	case ModeCluster, ModeClusterMTLS:
		// The bare loop is the same for both: the ratio of the secured
		// cluster to it includes what TLS costs.
		return raftCeiling(filepath.Join(root, "ceiling"), payload, concurrency, d, maxWrites, max(groups, 1))
	}
	return Ceiling{}, fmt.Errorf("bench: unknown mode %q", mode)
}

// writeLoop runs write from concurrency goroutines until d has passed (or,
// with maxWrites > 0, until maxWrites writes are done) and returns every
// write's latency.
func writeLoop(concurrency int, d time.Duration, maxWrites int, write func(i int64) error) ([]time.Duration, time.Duration, error) {
	var next atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for g := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for maxWrites > 0 || time.Now().Before(deadline) {
				i := next.Add(1)
				if maxWrites > 0 && i > int64(maxWrites) {
					return
				}
				t0 := time.Now()
				if err := write(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				lats[g] = append(lats[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, 0, err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, elapsed, nil
}

func ceilingOf(kind string, payload []byte, concurrency int, lat []time.Duration, elapsed time.Duration, dirs ...string) Ceiling {
	c := Ceiling{Kind: kind, PayloadBytes: len(payload), Concurrency: concurrency, Writes: len(lat),
		WritesPerS: float64(len(lat)) / elapsed.Seconds(), LatencyMS: Summarize(lat)}
	if len(lat) > 0 {
		c.DiskBytesPerWrite = float64(duBytes(dirs...)) / float64(len(lat))
	}
	return c
}

// badgerCeiling is raw Badger opened with heddle's options (storage.Open:
// synced commits, its memtables and value threshold), group-committed by
// hand the way the engine's LocalLog does and no cleverer: writers hand
// their write to one committer goroutine and wait; the committer takes
// every write already waiting, puts them in one transaction and commits it
// with one sync. No reads, no encoding, no state machine.
func badgerCeiling(dir string, payload []byte, concurrency int, d time.Duration, maxWrites int) (_ Ceiling, err error) {
	db, err := storage.Open(storage.Options{Dir: dir, Logger: quietLogger{}})
	if err != nil {
		return Ceiling{}, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	bdb := db.Badger()
	type req struct {
		i    int64
		done chan error
	}
	reqs := make(chan *req, 4096)
	committed := make(chan struct{})
	go func() {
		defer close(committed)
		var batch []*req
		for r := range reqs {
			batch = append(batch[:0], r)
		drain:
			for {
				select {
				case q, ok := <-reqs:
					if !ok {
						break drain
					}
					batch = append(batch, q)
				default:
					break drain
				}
			}
			txn := bdb.NewTransaction(true)
			var err error
			for _, q := range batch {
				var k [9]byte
				k[0] = 'x'
				binary.BigEndian.PutUint64(k[1:], uint64(q.i))
				if err = txn.Set(k[:], payload); err != nil {
					break
				}
			}
			if err == nil {
				err = txn.Commit()
			} else {
				txn.Discard()
			}
			for _, q := range batch {
				q.done <- err
			}
		}
	}()
	lat, elapsed, err := writeLoop(concurrency, d, maxWrites, func(i int64) error {
		r := &req{i: i, done: make(chan error, 1)}
		reqs <- r
		return <-r.done
	})
	close(reqs)
	<-committed
	if err != nil {
		return Ceiling{}, err
	}
	return ceilingOf("badger-synced-batch", payload, concurrency, lat, elapsed, dir), nil
}

// bareFSM writes each entry's bytes under its index, one Badger
// transaction per batch of entries, without a sync, as heddle's FSM does
// (the Raft log is the durable record).
type bareFSM struct{ db *storage.DB }

func (f *bareFSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

func (f *bareFSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	batch := f.db.NewBatch()
	for _, l := range logs {
		tx := batch.Begin()
		var k [9]byte
		k[0] = 'x'
		binary.BigEndian.PutUint64(k[1:], l.Index)
		tx.Set(k[:], l.Data)
		storage.SetAppliedIndex(tx, l.Index)
		if err := batch.Add(tx); err != nil {
			out[0] = err
			return out
		}
	}
	if err := batch.Commit(); err != nil {
		out[0] = err
	}
	return out
}

func (f *bareFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("bench: no snapshots") }
func (f *bareFSM) Restore(io.ReadCloser) error         { return fmt.Errorf("bench: no snapshots") }

// raftCeiling is groups bare Raft groups of three hashicorp/raft nodes on
// loopback, configured like heddle's (the same BoltDB log store, log
// cache, batching and default timeouts), each node applying entries into
// Badger: what any Raft + Badger system can do here. The writers apply on
// the groups' leaders, writer i's writes going to group i mod groups; every
// group runs its own transport, as a deployment of separate groups would.
func raftCeiling(root string, payload []byte, concurrency int, d time.Duration, maxWrites, groups int) (_ Ceiling, err error) {
	var leaders []*raft.Raft
	var dirs []string
	for g := range groups {
		dir := root
		if groups > 1 {
			dir = filepath.Join(root, fmt.Sprintf("g%d", g))
		}
		leader, gdirs, closeGroup, err := bareRaftGroup(dir)
		if closeGroup != nil {
			defer func() { err = errors.Join(err, closeGroup()) }()
		}
		if err != nil {
			return Ceiling{}, err
		}
		leaders = append(leaders, leader)
		dirs = append(dirs, gdirs...)
	}
	lat, elapsed, err := writeLoop(concurrency, d, maxWrites, func(i int64) error {
		f := leaders[int(i%int64(len(leaders)))].Apply(payload, 10*time.Second)
		if err := f.Error(); err != nil {
			return err
		}
		if err, ok := f.Response().(error); ok {
			return err
		}
		return nil
	})
	if err != nil {
		return Ceiling{}, err
	}
	kind := "raft3-badger-apply"
	if groups > 1 {
		kind = fmt.Sprintf("%d-groups-raft3-badger-apply", groups)
	}
	return ceilingOf(kind, payload, concurrency, lat, elapsed, dirs...), nil
}

// bareRaftGroup starts one bare group of three nodes under root and returns
// its leader, its nodes' directories and how to close it (set whenever
// anything was opened).
func bareRaftGroup(root string) (_ *raft.Raft, _ []string, closeAll func() error, err error) {
	type node struct {
		raft  *raft.Raft
		db    *storage.DB
		store *raftboltdb.BoltStore
		trans *raft.NetworkTransport
	}
	var nodes []*node
	closeAll = func() error {
		var errs []error
		for _, n := range nodes {
			if n.raft != nil {
				errs = append(errs, n.raft.Shutdown().Error())
			}
			errs = append(errs, n.trans.Close(), n.store.Close(), n.db.Close())
		}
		return errors.Join(errs...)
	}
	var servers []raft.Server
	var dirs []string
	for i := 1; i <= 3; i++ {
		dir := filepath.Join(root, fmt.Sprintf("n%d", i))
		dirs = append(dirs, dir)
		db, err := storage.Open(storage.Options{Dir: filepath.Join(dir, "state"), NoSync: true, Logger: quietLogger{}})
		if err != nil {
			return nil, nil, closeAll, err
		}
		store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		if err != nil {
			return nil, nil, closeAll, errors.Join(err, db.Close())
		}
		trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 10*time.Second, io.Discard)
		if err != nil {
			return nil, nil, closeAll, errors.Join(err, store.Close(), db.Close())
		}
		nodes = append(nodes, &node{db: db, store: store, trans: trans})
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("n%d", i)), Address: trans.LocalAddr(), Suffrage: raft.Voter})
	}
	for i, n := range nodes {
		snaps, err := raft.NewFileSnapshotStore(dirs[i], 1, io.Discard)
		if err != nil {
			return nil, nil, closeAll, err
		}
		rc := raft.DefaultConfig()
		rc.LocalID = servers[i].ID
		rc.BatchApplyCh = true
		rc.MaxAppendEntries = 256
		rc.SnapshotThreshold = 1 << 40
		rc.LogOutput = io.Discard
		logs, err := raft.NewLogCache(1024, n.store)
		if err != nil {
			return nil, nil, closeAll, err
		}
		if n.raft, err = raft.NewRaft(rc, &bareFSM{n.db}, logs, n.store, snaps, n.trans); err != nil {
			return nil, nil, closeAll, err
		}
	}
	for _, n := range nodes {
		if err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			return nil, nil, closeAll, err
		}
	}
	var leader *raft.Raft
	for deadline := time.Now().Add(time.Minute); leader == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, nil, closeAll, fmt.Errorf("bench: the bare Raft cluster elected no leader")
		}
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				leader = n.raft
			}
		}
	}
	if err := leader.Barrier(10 * time.Second).Error(); err != nil {
		return nil, nil, closeAll, err
	}
	return leader, dirs, closeAll, nil
}
