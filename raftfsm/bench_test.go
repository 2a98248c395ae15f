package raftfsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// Cluster benchmarks, three nodes on loopback with real directories, run
// together so their ratio comes from one run:
//
//	BenchmarkRaftCeiling   bare hashicorp/raft (the same log store, transport
//	                       and timeouts) with a state machine that writes each
//	                       entry's bytes to Badger, one transaction per batch:
//	                       what any Raft + Badger system can do here
//	BenchmarkClusterCreate heddle's node: CreateJob commands of the same size
//	                       through the proposer, Apply and the read path's
//	                       notifications
//
// Both use 32 concurrent proposers on the leader and report commands/s:
//
//	go test ./raftfsm -run '^$' -bench 'RaftCeiling|ClusterCreate' -benchtime 20000x -count 3

const benchProposers = 32

// benchPayload is about the size of one encoded CreateJob of the benchmark.
var benchPayload = make([]byte, 96)

func BenchmarkClusterCreate(b *testing.B) {
	c := newBenchCluster(b)
	l := c.leader()
	runProposers(b, func(i int) error {
		_, err := l.Engine().Create(context.Background(), engine.CreateJob{Type: "bench", Queue: "q", Input: benchPayload[:32]})
		return err
	})
}

func BenchmarkRaftCeiling(b *testing.B) {
	rafts := startBareCluster(b)
	runProposers(b, func(i int) error {
		return rafts[0].Apply(benchPayload, 10*time.Second).Error()
	})
}

func newBenchCluster(b *testing.B) *testCluster {
	return newTestCluster(b, 3, func(cfg *Config) { cfg.LogOutput = io.Discard })
}

// runProposers runs b.N proposals from benchProposers goroutines and reports
// commands/s.
func runProposers(b *testing.B, propose func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	b.ResetTimer()
	for range benchProposers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := propose(int(i)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
}

// bareFSM writes each entry's bytes under its index, one Badger
// transaction per batch, without a sync (as heddle's FSM does).
type bareFSM struct{ db *storage.DB }

func (f *bareFSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

func (f *bareFSM) ApplyBatch(logs []*raft.Log) []any {
	batch := f.db.NewBatch()
	for _, l := range logs {
		tx := batch.Begin()
		var k [9]byte
		k[0] = 'x'
		binary.BigEndian.PutUint64(k[1:], l.Index)
		tx.Set(k[:], l.Data)
		storage.SetAppliedIndex(tx, l.Index)
		if err := batch.Add(tx); err != nil {
			panic(err)
		}
	}
	if err := batch.Commit(); err != nil {
		panic(err)
	}
	return make([]any, len(logs))
}

func (f *bareFSM) Snapshot() (raft.FSMSnapshot, error) {
	return nil, fmt.Errorf("not in the benchmark")
}
func (f *bareFSM) Restore(io.ReadCloser) error { return fmt.Errorf("not in the benchmark") }

// startBareCluster starts three bare Raft nodes configured like heddle's.
func startBareCluster(b *testing.B) []*raft.Raft {
	root := b.TempDir()
	var rafts []*raft.Raft
	var servers []raft.Server
	type parts struct {
		fsm   *bareFSM
		store *raftboltdb.BoltStore
		trans *raft.NetworkTransport
		snaps raft.SnapshotStore
	}
	var ps []parts
	for i := 1; i <= 3; i++ {
		dir := filepath.Join(root, fmt.Sprintf("n%d", i))
		db, err := storage.Open(storage.Options{Dir: filepath.Join(dir, "state"), NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		if err != nil {
			b.Fatal(err)
		}
		snaps, err := raft.NewFileSnapshotStore(dir, 1, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 10*time.Second, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, parts{&bareFSM{db}, store, trans, snaps})
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("n%d", i)), Address: trans.LocalAddr(), Suffrage: raft.Voter})
	}
	for i, p := range ps {
		rc := raft.DefaultConfig()
		rc.LocalID = servers[i].ID
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 300*time.Millisecond, 300*time.Millisecond, 150*time.Millisecond
		rc.BatchApplyCh = true
		rc.MaxAppendEntries = 256
		rc.SnapshotThreshold = 1 << 40
		rc.LogOutput = io.Discard
		logs, _ := raft.NewLogCache(1024, p.store)
		r, err := raft.NewRaft(rc, p.fsm, logs, p.store, p.snaps, p.trans)
		if err != nil {
			b.Fatal(err)
		}
		rafts = append(rafts, r)
	}
	for _, r := range rafts {
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		for i, r := range rafts {
			if err := errors.Join(r.Shutdown().Error(), ps[i].trans.Close(), ps[i].store.Close(), ps[i].fsm.db.Close()); err != nil {
				b.Errorf("stopping node %d: %v", i, err)
			}
		}
	})
	// Put the leader first: the proposers propose there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		for i, r := range rafts {
			if r.State() == raft.Leader {
				rafts[0], rafts[i] = rafts[i], rafts[0]
				if err := rafts[0].Barrier(10 * time.Second).Error(); err != nil {
					b.Fatal(err)
				}
				return rafts
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("no leader")
		}
	}
}
