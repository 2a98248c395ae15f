package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/internal/slogbridge"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// Defaults of the readiness bounds (Config.ReadyMaxLag, ReadyMaxContact).
const (
	DefaultReadyMaxLag = 1024
)

// ErrNotReady: the node is up but should not be sent work (see Node.Ready).
var ErrNotReady = errors.New("raftfsm: not ready")

// observeDefaults fills in what logging needs: with a Logger, Badger logs
// through it too unless Storage names its own logger.
func (c Config) observeDefaults() Config {
	if c.Logger != nil && c.Storage.Logger == nil {
		c.Storage.Logger = slogbridge.Badger(c.Logger)
	}
	if c.ReadyMaxLag == 0 {
		c.ReadyMaxLag = DefaultReadyMaxLag
	}
	if c.ReadyMaxContact == 0 {
		c.ReadyMaxContact = 2 * c.HeartbeatTimeout
	}
	return c
}

// hclogger is the go-hclog logger of one part of Raft (name): through
// Config.Logger when set, else warnings and above to LogOutput.
func hclogger(cfg Config, name string) hclog.Logger {
	if cfg.Logger != nil {
		return slogbridge.Hclog(cfg.Logger, name)
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn, Output: logOutput(cfg.LogOutput)})
}

// observe starts what the node reports to its metrics: the Raft gauges
// read at scrape time, the leader changes, and hashicorp/raft's own
// go-metrics. It returns what undoes it, for Close.
func (n *Node) observe() (stop func()) {
	m := n.cfg.Metrics
	if m == nil {
		return func() {}
	}
	m.SetRaftSource(n.raftStats)
	release := m.BridgeRaft()
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	ctx, cancel := context.WithCancel(n.ctx)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				m.LeaderChange()
			}
		}
	}()
	return func() {
		n.raft.DeregisterObserver(obs)
		cancel()
		release()
		m.SetRaftSource(nil)
	}
}

// raftStats reads the node's Raft state for the metrics.
func (n *Node) raftStats() metrics.RaftStats {
	st := metrics.RaftStats{IsLeader: n.raft.State() == raft.Leader, Term: n.raft.CurrentTerm(),
		CommitIndex: n.raft.CommitIndex(), AppliedIndex: n.fsm.Applied(), LastIndex: n.raft.LastIndex()}
	if first, err := n.store.FirstIndex(); err == nil && first > 0 {
		if last, err := n.store.LastIndex(); err == nil && last >= first {
			st.LogEntries = last - first + 1
		}
	}
	if metas, err := n.snaps.List(); err == nil && len(metas) > 0 {
		st.SnapshotBytes = metas[0].Size
	}
	switch {
	case st.IsLeader:
	case n.raft.LastContact().IsZero():
		st.LastContact = -1
	default:
		st.LastContact = time.Since(n.raft.LastContact())
	}
	return st
}

// Ready reports whether the node should be sent work, as /readyz asks: its
// state database reads, Raft runs and knows a leader, a follower heard
// from that leader within ReadyMaxContact, and the state machine has
// applied the commit index it knows of, give or take ReadyMaxLag entries.
// The error, matching ErrNotReady, says which of these failed.
func (n *Node) Ready(ctx context.Context) error {
	notReady := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrNotReady, fmt.Sprintf(format, a...))
	}
	if n.ctx.Err() != nil {
		return ErrClosed
	}
	if err := n.fsm.View(func(*storage.Reader) error { return nil }); err != nil {
		return notReady("the state database does not read: %v", err)
	}
	state := n.raft.State()
	if state == raft.Shutdown {
		return notReady("Raft is shut down")
	}
	leader, _ := n.Leader()
	if leader == "" {
		return notReady("no leader is known (this node is %s)", state)
	}
	if state != raft.Leader {
		last := n.raft.LastContact()
		if last.IsZero() {
			return notReady("this %s never heard from the leader %s", state, leader)
		}
		if age := time.Since(last); age > n.cfg.ReadyMaxContact {
			return notReady("this %s last heard from the leader %s %v ago (more than %v)",
				state, leader, age.Round(time.Millisecond), n.cfg.ReadyMaxContact)
		}
	}
	if n.logGuard.refused.Load() {
		// The commit index a follower knows stops at its own log, so the
		// lag check below cannot see the entries it refuses.
		if err := n.fsm.checkSpace(); err != nil {
			return notReady("this %s refuses the leader's log entries while its disk is under the reserve: %v", state, err)
		}
	}
	if commit, applied := n.raft.CommitIndex(), n.fsm.Applied(); commit > applied+n.cfg.ReadyMaxLag {
		return notReady("applied index %d is %d behind the commit index %d (more than %d)",
			applied, commit-applied, commit, n.cfg.ReadyMaxLag)
	}
	return ctx.Err()
}
