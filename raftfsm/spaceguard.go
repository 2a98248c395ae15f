package raftfsm

import (
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// spaceGuard is the Raft log store of a node, refusing new entries while
// the node follows and its disk is under the storage reserve.
//
// A follower cannot refuse an entry once it is in its log: applying it is
// not optional, and a state database that fails a write stops the node
// (see FSM.ApplyBatch). What a follower can refuse is the append itself.
// Raft then answers the leader's AppendEntries with a failure, the leader
// backs off and retries, and the entries stay committed on the quorum
// without this node. Once space is freed the next retry succeeds and the
// node catches up from the leader's log (or its snapshot), losing nothing.
// The leader enforces the reserve at Propose instead: refusing its own
// append would make it step down with proposals in flight.
type spaceGuard struct {
	raft.LogStore
	// follows reports whether the node is not the leader now; nil until
	// Raft runs (appends before that are the bootstrap's, checked too).
	follows atomic.Pointer[func() bool]
	// check is the FSM's reserve check (FSM.checkSpace).
	check func() error
	// refused is set while the last append was refused, for readiness.
	refused atomic.Bool
	// snapshotsRefused counts the snapshots refused, for tests and logs.
	snapshotsRefused atomic.Int64
}

// guard returns an error while appends must be refused.
func (g *spaceGuard) guard() error {
	if f := g.follows.Load(); f != nil && !(*f)() {
		g.refused.Store(false)
		return nil
	}
	err := g.check()
	g.refused.Store(err != nil)
	return err
}

// StoreLog implements raft.LogStore.
func (g *spaceGuard) StoreLog(l *raft.Log) error {
	if err := g.guard(); err != nil {
		return err
	}
	return g.LogStore.StoreLog(l)
}

// StoreLogs implements raft.LogStore.
func (g *spaceGuard) StoreLogs(logs []*raft.Log) error {
	if err := g.guard(); err != nil {
		return err
	}
	return g.LogStore.StoreLogs(logs)
}

// guardedSnapshots is the node's snapshot store as Raft sees it: a
// follower under the reserve also refuses to write a snapshot, whether the
// leader sends one (Raft answers the leader with the failure, and it
// retries) or the node takes its own (Raft tries again at its next
// interval), since restoring or writing one fills the disk further.
type guardedSnapshots struct {
	raft.SnapshotStore
	guard *spaceGuard
}

// Create implements raft.SnapshotStore.
func (s guardedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	if err := s.guard.guard(); err != nil {
		s.guard.snapshotsRefused.Add(1)
		return nil, err
	}
	return s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
}
