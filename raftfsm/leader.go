package raftfsm

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// watchLeadership starts the leader's duties when this node wins an
// election and stops them when it loses leadership.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case isLeader := <-n.notify:
			n.leadMu.Lock()
			if n.stopLeader != nil {
				n.stopLeader()
				n.stopLeader, n.ready = nil, nil
			}
			if isLeader {
				ctx, cancel := context.WithCancel(n.ctx)
				ready := make(chan struct{})
				n.stopLeader, n.ready = cancel, ready
				n.wg.Add(1)
				go n.lead(ctx, ready)
			}
			n.leadMu.Unlock()
			// Raft clears the leader it knows of without an observation
			// when this node steps down.
			n.leaderMoved()
		}
	}
}

// LeaderChanged returns a channel that is closed the next time the leader
// this node knows of changes: another node elected, this node gaining or
// losing leadership, or the leader becoming unknown. Whoever waits on it
// reads the new leader with Leader or Status. It makes a Node an
// httpapi.LeaderWatcher, so that the query broker's long polls parked on a
// node that stopped leading go to the new leader at once.
func (n *Node) LeaderChanged() <-chan struct{} {
	n.movedMu.Lock()
	defer n.movedMu.Unlock()
	return n.moved
}

// leaderMoved wakes everyone waiting on LeaderChanged.
func (n *Node) leaderMoved() {
	n.movedMu.Lock()
	close(n.moved)
	n.moved = make(chan struct{})
	n.movedMu.Unlock()
}

// watchLeader wakes LeaderChanged's waiters at every change of leader Raft
// observes. Raft drops an observation when the channel is full; the
// wake-ups still queued there come after the dropped change, so a waiter
// that reads the leader on waking never misses the last one.
func (n *Node) watchLeader() {
	ch := make(chan raft.Observation, 16)
	n.leaderObs = raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(n.leaderObs)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-ch:
				n.leaderMoved()
			}
		}
	}()
}

// lead runs while this node leads: a barrier first (so reads see all that
// earlier leaders committed), then the node's HTTP address into the log,
// then the scheduler, whose lease reclaims wait out the failover grace.
func (n *Node) lead(ctx context.Context, ready chan struct{}) {
	defer n.wg.Done()
	if err := futureError(ctx, n.raft.Barrier(n.cfg.ApplyTimeout)); err != nil {
		return // leadership lost, or the node closes; the next election starts over
	}
	close(ready)
	if n.cfg.HTTPAddr != "" && n.fsm.nodeHTTP(n.cfg.ID) != n.cfg.HTTPAddr {
		// Without its address in the log, followers answer "not the
		// leader" with no address to forward to, and clients look for
		// the leader themselves; the next term registers it again.
		err := n.applyNode(ctx, nodeBody{ID: n.cfg.ID, HTTPAddr: n.cfg.HTTPAddr})
		if err != nil && ctx.Err() == nil && n.cfg.OnSchedulerError != nil {
			n.cfg.OnSchedulerError(fmt.Errorf("raftfsm: recording this leader's HTTP address: %w", err))
		}
	}
	if n.cfg.DisableScheduler {
		return
	}
	batch, _ := embedded.SchedulerBatch(n.cfg.SchedulerBatch, n.cfg.Limits) // Config.Validate checked it
	s := embedded.NewScheduler(n.prop, n.fsm, n.cfg.Clock, batch)
	s.OnError = n.cfg.OnSchedulerError
	s.Metrics = n.cfg.Metrics
	s.ReclaimNotBeforeMS = n.cfg.Clock.Now().Add(n.cfg.FailoverGrace).UnixMilli()
	n.sched.Store(s)
	defer n.sched.CompareAndSwap(s, nil)
	_ = s.Run(ctx) // returns ctx's error alone, when the leadership ends

}

// applyNode replicates a member's HTTP address (or its removal).
func (n *Node) applyNode(ctx context.Context, b nodeBody) error {
	data, err := encodeEntry(entryNode, &b)
	if err != nil {
		return err
	}
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	if err := futureError(ctx, f); err != nil {
		return n.applyError(err)
	}
	if out, ok := f.Response().(*entryOutcome); ok && len(out.errs) > 0 && out.errs[0] != nil {
		return out.errs[0]
	}
	return nil
}

// readBarrier makes a read linearizable (Raft's read-index): only the
// leader answers; it confirms it still leads after noting the commit index,
// then waits until its state machine has applied that index. Entries that
// never reach the state machine (no-ops, barriers) are not waited for.
func (n *Node) readBarrier(ctx context.Context) error {
	n.leadMu.Lock()
	ready := n.ready
	n.leadMu.Unlock()
	if ready == nil || n.raft.State() != raft.Leader {
		return n.notLeader()
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	commit, err := n.reads.confirm(ctx)
	if err != nil {
		return err
	}
	target := n.lastStateIndex(commit)
	for {
		changed := n.fsm.appliedChanged()
		if n.fsm.Applied() >= target {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lastStateIndex returns the highest index at or below commit whose entry
// the state machine sees (a command or a configuration change).
func (n *Node) lastStateIndex(commit uint64) uint64 {
	applied := n.fsm.Applied()
	for i := commit; i > applied; i-- {
		var l raft.Log
		if err := n.store.GetLog(i, &l); err != nil {
			// Compacted away: it is inside a snapshot, which is applied.
			return applied
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return i
		}
	}
	return applied
}

// Join adds a voter (through the leader) and records its HTTP address.
func (n *Node) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	if id == "" || raftAddr == "" {
		return fmt.Errorf("%w: join needs an id and a Raft address", engine.ErrInvalidCommand)
	}
	if !n.IsLeader() {
		return n.notLeader()
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return n.applyError(err)
	}
	member := false
	for _, s := range cf.Configuration().Servers {
		switch {
		case s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(raftAddr):
			member = true
		case s.ID == raft.ServerID(id) || s.Address == raft.ServerAddress(raftAddr):
			// Same id at a new address, or a new id at an old address:
			// replace the stale member.
			if err := n.raft.RemoveServer(s.ID, 0, n.cfg.ApplyTimeout).Error(); err != nil {
				return n.applyError(err)
			}
		}
	}
	if !member {
		if err := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout).Error(); err != nil {
			return n.applyError(err)
		}
	}
	if httpAddr != "" {
		return n.applyNode(ctx, nodeBody{ID: id, HTTPAddr: httpAddr})
	}
	return nil
}

// Remove takes a member out of the cluster (through the leader).
func (n *Node) Remove(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: remove needs an id", engine.ErrInvalidCommand)
	}
	if !n.IsLeader() {
		return n.notLeader()
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout).Error(); err != nil {
		return n.applyError(err)
	}
	return n.applyNode(ctx, nodeBody{ID: id, Remove: true})
}

// TransferLeader asks the leader to hand leadership to another voter.
func (n *Node) TransferLeader(ctx context.Context) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		return fmt.Errorf("raftfsm: leadership transfer: %w", err)
	}
	return nil
}

// ReadState says what a read served now from this node's own state comes
// from: its id, its current term, the last log index it has applied, and
// the leader it knows of ("" when none: a follower cut off from the others
// soon knows of none). The HTTP API puts it in the headers of stale reads.
func (n *Node) ReadState() (nodeID string, term, appliedIndex uint64, leaderID string) {
	_, lid := n.raft.LeaderWithID()
	return n.cfg.ID, n.raft.CurrentTerm(), n.fsm.Applied(), string(lid)
}

// Status reports this node's view of the cluster.
func (n *Node) Status(ctx context.Context) (engine.ClusterStatus, error) {
	st := engine.ClusterStatus{ID: n.cfg.ID, State: n.raft.State().String(), Term: n.raft.CurrentTerm(),
		CommitIndex: n.raft.CommitIndex(), AppliedIndex: n.fsm.Applied(), LastIndex: n.raft.LastIndex()}
	st.LeaderID, st.LeaderHTTP = n.Leader()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return st, err
	}
	for _, s := range cf.Configuration().Servers {
		st.Members = append(st.Members, engine.ClusterMember{ID: string(s.ID), RaftAddr: string(s.Address),
			HTTPAddr: n.fsm.nodeHTTP(string(s.ID)), Voter: s.Suffrage == raft.Voter, Leader: string(s.ID) == st.LeaderID})
	}
	return st, nil
}
