package raftfsm

import (
	"context"
	"errors"
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
				n.stopLeader, n.ready, n.term = nil, nil, nil
			}
			if isLeader {
				ctx, cancel := context.WithCancel(n.ctx)
				ready := make(chan struct{})
				n.stopLeader, n.ready, n.term = cancel, ready, ctx
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
	if n.cfg.group.onLeader != nil {
		n.cfg.group.onLeader()
	}
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
// then the scheduler, whose lease reclaims wait out the failover grace, and
// the batch runner.
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
	// The batch runner works for this term only, as the scheduler: the
	// next leader's goes on from each batch's record, and the request ids
	// of the runs' commands make the page it repeats a no-op.
	br := embedded.NewBatchRunner(n.eng, n.cfg.Clock, n.cfg.BatchRunsPerSecond)
	br.OnError = n.cfg.OnSchedulerError
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = br.Run(ctx) // returns ctx's error alone, when the leadership ends
	}()
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

// leading returns a context that ends with ctx or with this node's current
// term as leader (it steps down, is removed, or closes), and the function
// that releases it; a node that does not lead gets a not-leader error.
//
// A leader's changes wait on hashicorp/raft futures, and Raft leaves some
// of them unanswered for good when it shuts down: a configuration change
// already handed to its applying goroutine, an entry or a leadership
// transfer still queued in a buffered channel. A wait bound only by the
// request would outlive the node (an HTTP handler stuck after Close); a
// wait bound by the term ends when the node stops leading.
func (n *Node) leading(ctx context.Context) (context.Context, context.CancelFunc, error) {
	n.leadMu.Lock()
	term := n.term
	n.leadMu.Unlock()
	if term == nil || !n.IsLeader() {
		return nil, nil, n.notLeader()
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(term, cancel)
	return ctx, func() { stop(); cancel() }, nil
}

// awaitChange waits for f, a change this node makes as leader, within
// termCtx (from leading, derived from ctx). It returns ctx's error when the
// caller gave up, ErrUnknownOutcome when the term ended first (the change
// may have committed), and f's error as applyError maps it.
func (n *Node) awaitChange(ctx, termCtx context.Context, f raft.Future) error {
	err := futureError(termCtx, f)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case termCtx.Err() != nil && errors.Is(err, termCtx.Err()):
		return fmt.Errorf("%w: this node stopped leading before Raft answered the change", engine.ErrUnknownOutcome)
	}
	return n.applyError(err)
}

// Join adds a voter (through the leader) and records its HTTP address.
func (n *Node) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	if id == "" || raftAddr == "" {
		return fmt.Errorf("%w: join needs an id and a Raft address", engine.ErrInvalidCommand)
	}
	termCtx, stop, err := n.leading(ctx)
	if err != nil {
		return err
	}
	defer stop()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return n.applyError(err)
	}
	member, changed := false, false
	for _, s := range cf.Configuration().Servers {
		switch {
		case s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(raftAddr):
			member = true
		case s.ID == raft.ServerID(id) || s.Address == raft.ServerAddress(raftAddr):
			// Same id at a new address, or a new id at an old address:
			// replace the stale member. If that member is this leader,
			// the next one replaces it (see handOff).
			if s.ID == raft.ServerID(n.cfg.ID) {
				return n.handOff(ctx, termCtx)
			}
			if err := n.awaitChange(ctx, termCtx, n.raft.RemoveServer(s.ID, 0, n.cfg.ApplyTimeout)); err != nil {
				return err
			}
			changed = true
		}
	}
	if !member {
		if err := n.awaitChange(ctx, termCtx, n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout)); err != nil {
			return err
		}
		changed = true
	}
	if httpAddr != "" {
		err := n.applyNode(termCtx, nodeBody{ID: id, HTTPAddr: httpAddr})
		if changed {
			return afterChange(err)
		}
		return err
	}
	return nil
}

// afterChange is the error of the write that follows a committed
// membership change (recording a member's address, or its removal). A
// not-leader error there would tell the caller that nothing was done, and
// a client that then found no node would report a command that never
// left; the change was made, so the outcome is unknown: Join and Remove
// are idempotent, and sending them again finishes the work.
func afterChange(err error) error {
	if errors.Is(err, engine.ErrNotLeader) {
		return fmt.Errorf("%w: the membership change was committed, and this node stopped leading before it wrote what follows it (%v); send the change again", engine.ErrUnknownOutcome, err)
	}
	return err
}

// Remove takes a member out of the cluster (through the leader). Asked to
// remove itself, the leader hands leadership to another voter and answers
// not-leader, so the request goes on to the new leader (see handOff).
func (n *Node) Remove(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: remove needs an id", engine.ErrInvalidCommand)
	}
	termCtx, stop, err := n.leading(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if id == n.cfg.ID {
		return n.handOff(ctx, termCtx)
	}
	if err := n.awaitChange(ctx, termCtx, n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout)); err != nil {
		return err
	}
	return afterChange(n.applyNode(termCtx, nodeBody{ID: id, Remove: true}))
}

// handOff makes another voter the leader and returns a not-leader error
// naming it (when this node already knows it), so that the HTTP API
// forwards the request there and a client retries it there: a leader never
// takes itself out of the configuration. hashicorp/raft shuts a leader down
// as its own removal commits, and may then leave the change's future
// unanswered for ever; the removal of its HTTP address never reached the
// log; and the cluster stood without a leader until an election timed out.
func (n *Node) handOff(ctx, termCtx context.Context) error {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return n.applyError(err)
	}
	others := 0
	for _, s := range cf.Configuration().Servers {
		if s.ID != raft.ServerID(n.cfg.ID) && s.Suffrage == raft.Voter {
			others++
		}
	}
	if others == 0 {
		return fmt.Errorf("%w: %s is the cluster's only voter: a cluster cannot remove its last voter", engine.ErrInvalidCommand, n.cfg.ID)
	}
	if err := n.transfer(ctx, termCtx); err != nil {
		if errors.Is(err, engine.ErrNotLeader) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("raftfsm: %s leads, and handing leadership to another voter before it leaves failed: %w", n.cfg.ID, err)
	}
	return n.notLeader()
}

// transfer hands leadership to another voter and waits until this node no
// longer leads.
func (n *Node) transfer(ctx, termCtx context.Context) error {
	err := futureError(termCtx, n.raft.LeadershipTransfer())
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil, termCtx.Err() != nil:
		// Raft answers once this node has left its leader loop; the end
		// of the term may be seen first. Either way it no longer leads.
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return n.notLeader()
	}
	return err
}

// TransferLeader asks the leader to hand leadership to another voter.
func (n *Node) TransferLeader(ctx context.Context) error {
	termCtx, stop, err := n.leading(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if err := n.transfer(ctx, termCtx); err != nil {
		if errors.Is(err, engine.ErrNotLeader) || ctx.Err() != nil {
			return err
		}
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
