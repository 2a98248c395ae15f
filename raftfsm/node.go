package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Node is one member of a heddle cluster. Its Engine is an engine.Service
// like the embedded one: writes go through the Raft log (and fail with
// engine.ErrNotLeader on a follower), reads are linearizable unless the
// context asks for a stale read (engine.WithStaleRead).
type Node struct {
	cfg      Config
	raft     *raft.Raft
	logGuard *spaceGuard // refuses a follower's appends under the disk reserve
	fsm      *FSM
	prop     *proposer
	eng      *embedded.Engine
	store    raftStore
	ownLog   *nodeLog // the node log of a node of one group; nil in a sharded node
	// stopCollect ends the collection of the state's value log, which a
	// node of one group runs (nil in a sharded node's replicas).
	stopCollect func()
	snaps       *raft.FileSnapshotStore
	transport   *raft.NetworkTransport
	// unobserve stops what observe started (metrics).
	unobserve func()

	notify chan bool
	reads  readIndexer
	leadMu sync.Mutex
	sched  atomic.Pointer[embedded.Scheduler] // the leader's scheduler, woken by applies
	// ready is closed once this node, as leader, has applied everything
	// committed before its term (its first barrier); nil when not leader.
	ready chan struct{}
	// term is the context of this node's current term as leader, nil when
	// not leader; stopLeader ends it. It ends when the node steps down,
	// is removed, or closes, so the changes a leader makes (membership, a
	// leadership transfer) stop waiting for answers Raft may never give.
	term       context.Context
	stopLeader context.CancelFunc

	// movedMu guards moved, the channel LeaderChanged hands out: it is
	// closed (and replaced) at every change of the leader this node knows
	// of, as leaderObs and watchLeadership see them.
	movedMu   sync.Mutex
	moved     chan struct{}
	leaderObs *raft.Observer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// raftStore is a node's Raft log and stable store: a view of a node log,
// its own in a cluster of one group (ownLog), the Host's in a sharded
// one.
type raftStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// Open starts a node: it opens (or creates) its directory, starts the Raft
// transport and, with Bootstrap and no existing state, makes itself a
// one-node cluster.
func Open(cfg Config) (_ *Node, err error) {
	// A storage error opening the state (a full disk, a damaged record)
	// matches the contract's sentinel too.
	defer func() { err = machine.MarkStorageError(err) }()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := machine.NewShardMachine(cfg.Limits, cfg.group.shard)
	if err != nil {
		return nil, err
	}
	raftDir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(raftDir, 0o755); err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	var state replicaState
	if cfg.group.store != nil {
		// The state directory of the layout before the node store, which
		// the replica moves into its keyspace at its first start.
		state = cfg.group.store.replica(cfg.group.shard.Index, filepath.Join(cfg.Dir, "state"))
	} else if state, err = newStateDir(filepath.Join(cfg.Dir, "state"), cfg.Storage); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, notify: make(chan bool, 16), moved: make(chan struct{})}
	n.reads.n = n
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if n.fsm, err = newFSM(state, m); err != nil {
		return nil, err
	}
	n.fsm.shard = cfg.group.shard.Index
	n.fsm.meter = embedded.NewMeter(cfg.Metrics)
	if !cfg.DisableQueueView {
		n.fsm.queues = embedded.NewTaskQueues(cfg.Clock)
	}
	fail := func(err error) (*Node, error) {
		// err is the news; a failure to let go of what was opened joins it.
		if n.transport != nil {
			err = errors.Join(err, n.transport.Close())
		}
		if n.store != nil {
			err = errors.Join(err, n.store.Close())
		}
		if n.ownLog != nil {
			err = errors.Join(err, n.ownLog.Close())
		}
		return nil, errors.Join(err, n.fsm.close())
	}
	if cfg.group.log != nil {
		n.store = cfg.group.log.group(cfg.group.logGroup)
	} else {
		// A node of one group keeps a node log of its own, its group as
		// group 0, beside its snapshots: the same log a sharded node
		// keeps, with one sync a commit.
		l, err := openNodeLogWith(raftDir, nodeLogOpenOptions{legacy: raftBoltFile, readLegacy: readRaftBoltLog})
		if err != nil {
			return fail(fmt.Errorf("raftfsm: opening the Raft log: %w", err))
		}
		n.ownLog = l
		n.store = l.group(0)
	}
	if err := n.fsm.meter.Count(n.fsm); err != nil {
		return fail(fmt.Errorf("raftfsm: counting the open jobs for the metrics: %w", err))
	}
	cache, err := raft.NewLogCache(1024, n.store)
	if err != nil {
		return fail(err)
	}
	logs := &spaceGuard{LogStore: cache, check: n.fsm.checkSpace}
	n.logGuard = logs
	snaps, err := raft.NewFileSnapshotStoreWithLogger(raftDir, 2, hclogger(cfg, "raft-snap"))
	if err != nil {
		return fail(err)
	}
	n.snaps = snaps
	n.transport, err = newTransport(cfg)
	if err != nil {
		return fail(err)
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 256
	// The state database persists with its applied index, so a restart
	// resumes from it; restoring the last snapshot at every start would
	// reload the whole state for nothing. Snapshot syncs the database, so
	// it always holds at least what the newest snapshot holds.
	rc.NoSnapshotRestoreOnStart = true
	snapIndex, err := n.stateBehind(snaps)
	if err != nil {
		return fail(err)
	}
	if snapIndex > 0 {
		// The state holds less than the newest snapshot: Raft replays only
		// the log after it, so it must restore the snapshot first.
		rc.NoSnapshotRestoreOnStart = false
	}
	if n.fsm.damaged != "" {
		how := "replaying the Raft log from its start"
		if snapIndex > 0 {
			how = fmt.Sprintf("restoring the newest Raft snapshot (index %d) and replaying the log after it", snapIndex)
		}
		hclogger(cfg, "state").Error("the state database failed its integrity checks and is rebuilt from the cluster; "+
			"until it has caught up, this node is not ready and serves no linearizable read",
			"damage", n.fsm.damaged, "rebuild", how+"; the leader sends its own snapshot if this node is behind its log")
	}
	rc.NotifyCh = n.notify
	rc.Logger = hclogger(cfg, "raft")

	n.prop = newProposer(n, cfg.Clock, cfg.MaxEntryCommands, cfg.MaxEntryBytes, cfg.ApplyTimeout)
	n.eng, err = embedded.New(embedded.Backend{Log: n.prop, Store: n.fsm, ReadBarrier: n.readBarrier, Limits: cfg.Limits,
		TaskQueues: n.fsm.queues, Clock: cfg.Clock})
	if err != nil {
		n.prop.close()
		return fail(err)
	}
	n.fsm.onApply = func(touched, closed []uint64) {
		n.eng.NotifyCommitted(touched, closed)
		if s := n.sched.Load(); s != nil {
			s.Wake()
		}
		if cfg.group.onCommit != nil {
			cfg.group.onCommit()
		}
	}

	hasState, err := raft.HasExistingState(logs, n.store, snaps)
	if err != nil {
		n.prop.close()
		return fail(err)
	}
	n.raft, err = raft.NewRaft(rc, n.fsm, logs, n.store, guardedSnapshots{SnapshotStore: snaps, guard: logs}, n.transport)
	if err != nil {
		n.prop.close()
		return fail(fmt.Errorf("raftfsm: starting Raft: %w", err))
	}
	r := n.raft
	follows := func() bool { return r.State() != raft.Leader }
	logs.follows.Store(&follows)
	if cfg.Bootstrap && !hasState {
		servers := []raft.Server{{ID: rc.LocalID, Address: n.transport.LocalAddr(), Suffrage: raft.Voter}}
		if len(cfg.group.peers) > 0 {
			servers = cfg.group.peers
		}
		f := n.raft.BootstrapCluster(raft.Configuration{Servers: servers})
		if err := f.Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return nil, errors.Join(fmt.Errorf("raftfsm: bootstrap: %w", err), n.Close())
		}
	}
	n.unobserve = n.observe()
	n.watchLeader()
	n.wg.Add(1)
	go n.watchLeadership()
	if cfg.group.store == nil {
		// A node of one group owns its state's database; a sharded node's
		// Host collects the store its replicas share.
		ticks, stopTicks := valueLogTicks(storage.DefaultValueLogInterval)
		stop := storage.CollectOnTicks(ticks, n.fsm.collectValueLog, func(_ int, err error) {
			if err != nil {
				hclogger(cfg, "state").Warn("collecting the state's value log failed", "error", err)
			}
		})
		n.stopCollect = func() { stopTicks(); stop() }
	}
	return n, nil
}

// stateBehind returns the index of the newest snapshot this node keeps when
// the state database holds less than it (0 otherwise): the database was
// replaced by an empty one (damaged, or lost), and since Raft replays only
// the log after its newest snapshot, the snapshot must be restored first.
// With no snapshot the log must still start at index 1 for a replay to
// rebuild the state; if it does not, the node cannot rebuild on its own.
func (n *Node) stateBehind(snaps raft.SnapshotStore) (uint64, error) {
	metas, err := snaps.List()
	if err != nil {
		return 0, fmt.Errorf("raftfsm: listing snapshots: %w", err)
	}
	applied := n.fsm.Applied()
	if len(metas) > 0 {
		if applied < metas[0].Index {
			return metas[0].Index, nil
		}
		return 0, nil
	}
	first, err := n.store.FirstIndex()
	if err != nil {
		return 0, fmt.Errorf("raftfsm: reading the Raft log: %w", err)
	}
	if first > 1 && applied < first-1 {
		return 0, fmt.Errorf("%w: the state holds entries up to %d, the Raft log starts at %d, and no snapshot holds what lies between: "+
			"remove this node from the cluster, clear its directory and join it again", ErrStateFailed, applied, first)
	}
	return 0, nil
}

// Engine returns the node's engine.Service.
func (n *Node) Engine() *embedded.Engine { return n.eng }

// Raft exposes the Raft instance, for status and tests.
func (n *Node) Raft() *raft.Raft { return n.raft }

// ID returns the node's server id.
func (n *Node) ID() string { return n.cfg.ID }

// RaftAddr returns the address the transport listens on.
func (n *Node) RaftAddr() string { return string(n.transport.LocalAddr()) }

// HTTPAddr returns the configured API address.
func (n *Node) HTTPAddr() string { return n.cfg.HTTPAddr }

// FSM exposes the state machine (its applied index and reads).
func (n *Node) FSM() *FSM { return n.fsm }

// ProposedCommands returns how many commands this node has handed to Raft
// as leader since it started.
func (n *Node) ProposedCommands() uint64 { return n.prop.commands.Load() }

// IsLeader reports whether this node is the Raft leader now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the leader's server id and HTTP address, empty if unknown.
func (n *Node) Leader() (id, httpAddr string) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	return string(lid), n.fsm.nodeHTTP(string(lid))
}

func (n *Node) notLeader() error {
	id, http := n.Leader()
	if id == n.cfg.ID { // leadership moved in between; let the caller retry
		id, http = "", ""
	}
	return &engine.NotLeaderError{LeaderID: id, LeaderHTTP: http}
}

// Close stops the node: the scheduler, the proposer, Raft, the transport
// and the stores. It is safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.cancel()
		n.leadMu.Lock()
		if n.stopLeader != nil {
			n.stopLeader()
		}
		n.leadMu.Unlock()
		var errs []error
		if n.unobserve != nil {
			n.unobserve()
		}
		if n.leaderObs != nil {
			n.raft.DeregisterObserver(n.leaderObs)
		}
		if n.raft != nil {
			errs = append(errs, n.raft.Shutdown().Error())
		}
		if n.eng != nil {
			// Whoever waits for a commit (a create waiting for its
			// child's acknowledgement) gives up.
			n.eng.StopWaiting()
		}
		n.prop.close()
		n.wg.Wait()
		// The transport's Close leaves the connections it dialed open in
		// its pool; closing them ends the peers' goroutines serving them.
		n.transport.CloseStreams()
		if n.stopCollect != nil {
			n.stopCollect()
		}
		errs = append(errs, n.transport.Close(), n.store.Close(), n.fsm.close())
		if n.ownLog != nil {
			errs = append(errs, n.ownLog.Close())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// WaitLeader blocks until some node is known as leader, and returns its id.
func (n *Node) WaitLeader(ctx context.Context) (string, error) {
	for {
		if id, _ := n.Leader(); id != "" {
			return id, nil
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
	}
}
