package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// HostConfig configures OpenHost, one node of a sharded cluster
// (docs/sharding.md). Its Config is the template of every Raft group the
// node runs (the metadata group and one per shard it holds): ID, Dir,
// RaftAddr (the node's one Raft port), HTTPAddr, TLS, Dial, the timeouts,
// Storage, Limits, Clock and Logger. Its Bootstrap is ignored: a node
// creates its groups on its first start, from Peers. Its Metrics are not
// recorded yet: the engine's metrics of several shards would overwrite
// each other's gauges (phase 3 adds a shard label).
type HostConfig struct {
	Config
	// Peers are the cluster's nodes, this one included, in the order the
	// placement counts them. Every node of a new cluster is started with
	// the same Peers, Shards and Replicas, and places the shards the same
	// way. Once the node's directory holds a placement they may be left
	// out; given, they must agree with it.
	Peers []PlacementNode
	// Shards is the shard count, 1 to engine.MaxShards, fixed when the
	// cluster is created. 0: the count the directory's placement holds.
	Shards int
	// Replicas is the number of replicas of each shard; 0 means
	// min(3, len(Peers)).
	Replicas int
	// DeliverTo sends the node's cross-shard deliveries to another node
	// (deliverer.go), speaking as this node. Nil: the node delivers only to
	// the shards it leads itself, and entries for others wait.
	DeliverTo DeliverFunc
}

// Validate reports the first invalid field.
func (c HostConfig) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	switch {
	case c.Shards < 0 || c.Shards > engine.MaxShards:
		return fmt.Errorf("%w: Shards %d is not in [1, %d]", ErrConfig, c.Shards, engine.MaxShards)
	case c.Replicas < 0 || c.Replicas > MaxReplicas:
		return fmt.Errorf("%w: Replicas %d is not in [1, %d]", ErrConfig, c.Replicas, MaxReplicas)
	case len(c.Peers) > MaxNodes:
		return fmt.Errorf("%w: %d peers, more than %d", ErrConfig, len(c.Peers), MaxNodes)
	}
	return nil
}

// Host is one node of a sharded cluster: the metadata group and a Node per
// shard it holds a replica of, all over one multiplexed Raft port. Each
// shard's Node is a cluster node as Open makes one (its FSM, proposer,
// read-index reads, scheduler on its leader), running the shard's machine
// over the shard's own Badger and Raft state under Dir/shards/NNNN.
type Host struct {
	cfg    HostConfig
	mux    *muxListener
	meta   *metaGroup
	metaFS *metaFSM
	// shards holds this node's replica of each shard, nil where it has
	// none.
	shards []*Node
	// local is the placement this node started with (its directory's);
	// placement the newest the metadata group applied (local until then).
	local     *Placement
	placement atomic.Pointer[Placement]
	// mismatch, when set, says that the metadata group holds another
	// layout than this node's directory: the node is not ready.
	mismatch atomic.Pointer[error]

	changeMu sync.Mutex
	changeCh chan struct{} // closed at every commit or leader change of a local shard
	metaMu   sync.Mutex
	metaCh   chan struct{} // closed at every change of the metadata group's leader

	balanceWake chan struct{}
	// delivery is the deliverer's state (deliverer.go).
	delivery *deliverer
	// failing holds, by shard, the followers whose heartbeats from this
	// node (as the shard's leader) fail: leadership is not handed to them.
	peerMu  sync.Mutex
	failing map[int]map[string]bool
	peerGen map[int]uint64 // counts the changes of failing, by shard

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// placementFile is the name, in a node's directory, of the newest
// placement the node applied.
const placementFile = "placement"

// OpenHost starts a node of a sharded cluster: on its first start it
// computes the placement from cfg.Peers and writes it to its directory,
// then it opens the multiplexed Raft port, the metadata group and the
// groups of the shards it holds, bootstrapping each with its replicas.
func OpenHost(cfg HostConfig) (_ *Host, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Config = cfg.withDefaults()
	if _, err := os.Stat(filepath.Join(cfg.Dir, "raft")); err == nil {
		return nil, fmt.Errorf("%w: %s holds a node of a cluster of one Raft group, not of a sharded cluster", ErrConfig, cfg.Dir)
	}
	p, err := hostPlacement(cfg)
	if err != nil {
		return nil, err
	}
	self, ok := p.node(cfg.ID)
	if !ok {
		return nil, fmt.Errorf("%w: node %q is not one of the cluster's nodes %v", ErrConfig, cfg.ID, nodeIDs(p))
	}
	if self.RaftAddr != cfg.RaftAddr {
		return nil, fmt.Errorf("%w: RaftAddr %q, but the cluster knows node %q at %q", ErrConfig, cfg.RaftAddr, cfg.ID, self.RaftAddr)
	}
	h := &Host{cfg: cfg, local: p, shards: make([]*Node, p.Shards), changeCh: make(chan struct{}), metaCh: make(chan struct{}),
		balanceWake: make(chan struct{}, 1), failing: map[int]map[string]bool{}, peerGen: map[int]uint64{}}
	h.placement.Store(p)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Close())
		}
	}()
	if h.mux, err = newMux(cfg.RaftAddr, cfg.Dial, cfg.TLS, hclogger(cfg.Config, "raft-mux")); err != nil {
		return nil, err
	}
	// Every group's layer exists before any group starts, so a peer's
	// first connection to a group finds it.
	metaLayer := h.mux.layer(metaGroupNumber)
	mine := p.ShardsOf(cfg.ID)
	for _, k := range mine {
		h.mux.layer(uint16(k + 1))
	}
	h.metaFS = &metaFSM{onChange: h.placementApplied}
	if h.meta, err = openMeta(cfg.Config, filepath.Join(cfg.Dir, "meta", "raft"), metaLayer, p, h.metaFS); err != nil {
		return nil, err
	}
	for _, k := range mine {
		if h.shards[k], err = h.openShard(p, k); err != nil {
			return nil, fmt.Errorf("raftfsm: shard %d: %w", k, err)
		}
	}
	h.delivery = &deliverer{h: h, workers: map[pairKey]chan struct{}{}, delivered: map[pairKey]uint64{}, scanned: map[int]uint64{}}
	h.wg.Add(3)
	go h.leadMeta()
	go h.balance()
	go h.deliverLoop()
	h.watchMetaLeader()
	return h, nil
}

// hostPlacement returns the placement this node starts with: its
// directory's, else the one cfg.Peers makes (written to the directory).
func hostPlacement(cfg HostConfig) (*Placement, error) {
	path := filepath.Join(cfg.Dir, placementFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		p, err := decodePlacement(b)
		if err != nil {
			return nil, fmt.Errorf("raftfsm: %s: %w", path, err)
		}
		if cfg.Shards != 0 && cfg.Shards != p.Shards {
			return nil, fmt.Errorf("%w: Shards %d, but %s holds a cluster of %d shards (the count is fixed when a cluster is created)", ErrConfig, cfg.Shards, cfg.Dir, p.Shards)
		}
		if len(cfg.Peers) > 0 {
			want, err := NewPlacement(cfg.Peers, p.Shards, cfg.Replicas)
			if err != nil {
				return nil, err
			}
			if !want.equalLayout(p) {
				return nil, fmt.Errorf("%w: the peers and replicas given place the shards otherwise than %s does (moving them is not supported yet)", ErrConfig, path)
			}
		}
		return p, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	if len(cfg.Peers) == 0 || cfg.Shards == 0 {
		return nil, fmt.Errorf("%w: %s holds no cluster: a new node needs Peers and Shards", ErrConfig, cfg.Dir)
	}
	p, err := NewPlacement(cfg.Peers, cfg.Shards, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	if err := writePlacement(cfg.Dir, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// writePlacement writes p to dir's placement file, atomically: a new file
// synced, then renamed over the old one.
func writePlacement(dir string, p *Placement) error {
	b, err := encodePlacement(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	tmp := filepath.Join(dir, placementFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("raftfsm: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, placementFile)); err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	return errors.Join(d.Sync(), d.Close())
}

func nodeIDs(p *Placement) []string {
	var ids []string
	for _, n := range p.Nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

// openShard opens this node's replica of shard k.
func (h *Host) openShard(p *Placement, k int) (*Node, error) {
	c := h.cfg.Config
	c.Dir = filepath.Join(h.cfg.Dir, "shards", fmt.Sprintf("%04d", k))
	c.Bootstrap = true
	c.Metrics = nil
	if c.Logger != nil {
		c.Logger = c.Logger.With("shard", k)
	}
	var peers []raft.Server
	for _, id := range p.Groups[k].Replicas {
		n, _ := p.node(id) // Validate checked every replica is a node
		peers = append(peers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(n.RaftAddr), Suffrage: raft.Voter})
	}
	c.group = groupOptions{
		layer:    h.mux.layer(uint16(k + 1)),
		shard:    engine.ShardLayout{Index: k, Count: p.Shards},
		peers:    peers,
		onCommit: h.changed,
		onLeader: func() { h.changed(); h.wakeBalancer() },
	}
	n, err := Open(c)
	if err != nil {
		return nil, err
	}
	h.watchPeers(n, k)
	return n, nil
}

// Close stops the node: its shards, the metadata group, the port.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		if h.cancel != nil {
			h.cancel()
		}
		var errs []error
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, n := range h.shards {
			if n == nil {
				continue
			}
			// The shards close in parallel: each waits for its Raft to
			// shut down, which may wait out a timeout of its own.
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := n.Close()
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
		wg.Wait()
		h.wg.Wait()
		if h.meta != nil {
			errs = append(errs, h.meta.close())
		}
		if h.mux != nil {
			errs = append(errs, h.mux.close())
		}
		h.closeErr = errors.Join(errs...)
	})
	return h.closeErr
}

// ID returns the node's id.
func (h *Host) ID() string { return h.cfg.ID }

// RaftAddr returns the node's one Raft address.
func (h *Host) RaftAddr() string { return h.mux.Addr().String() }

// HTTPAddr returns the node's API address.
func (h *Host) HTTPAddr() string { return h.cfg.HTTPAddr }

// Placement returns the newest placement this node knows.
func (h *Host) Placement() Placement { return *h.placement.Load() }

// ShardCount returns the cluster's shard count.
func (h *Host) ShardCount() int { return h.local.Shards }

// Shard returns this node's replica of shard k, or nil when it holds none.
func (h *Host) Shard(k int) *Node {
	if k < 0 || k >= len(h.shards) {
		return nil
	}
	return h.shards[k]
}

// ShardEngine returns the engine of this node's replica of shard k, or
// nil when it holds none. It makes a Host an httpapi.ShardSet.
func (h *Host) ShardEngine(k int) engine.Service {
	if n := h.Shard(k); n != nil {
		return n.Engine()
	}
	return nil
}

// LeadsShard reports whether this node leads shard k now.
func (h *Host) LeadsShard(k int) bool {
	n := h.Shard(k)
	return n != nil && n.IsLeader()
}

// ShardLeader returns the leader of shard k as this node knows it: the
// Raft leader where it holds a replica, else the placement's desired
// leader; with its HTTP address, which the shard's log records (or the
// placement knows).
func (h *Host) ShardLeader(k int) (id, httpAddr string) {
	p := h.placement.Load()
	if k < 0 || k >= p.Shards {
		return "", ""
	}
	if n := h.Shard(k); n != nil {
		id, httpAddr = n.Leader()
	} else {
		id = p.Groups[k].Leader
	}
	if httpAddr == "" && id != "" {
		node, _ := p.node(id)
		httpAddr = node.HTTPAddr
	}
	return id, httpAddr
}

// ShardsChanged returns a channel closed at the next commit, or change of
// leader, of any shard this node holds: a claim waiting over every shard
// the node leads looks again then.
func (h *Host) ShardsChanged() <-chan struct{} {
	h.changeMu.Lock()
	defer h.changeMu.Unlock()
	return h.changeCh
}

func (h *Host) changed() {
	h.changeMu.Lock()
	close(h.changeCh)
	h.changeCh = make(chan struct{})
	h.changeMu.Unlock()
}

// PlacementVersion returns the version of the newest placement this node
// applied.
func (h *Host) PlacementVersion() uint64 { return h.placement.Load().Version }

// ShardMap returns what a client routes by.
func (h *Host) ShardMap() engine.ShardMap {
	p := h.placement.Load()
	m := engine.ShardMap{Version: p.Version, Shards: p.Shards, Leaders: make([]string, p.Shards)}
	for _, n := range p.Nodes {
		m.Nodes = append(m.Nodes, engine.ShardNode{ID: n.ID, HTTPAddr: n.HTTPAddr})
	}
	for k := range m.Leaders {
		m.Leaders[k], _ = h.ShardLeader(k)
	}
	return m
}

// placementApplied runs on the metadata group's applying goroutine with
// each placement it applies.
func (h *Host) placementApplied(p *Placement) {
	if !p.equalLayout(h.local) {
		err := fmt.Errorf("the metadata group holds a placement of %d shards with %d replicas on %v that differs from this node's (%d shards, %d replicas on %v): "+
			"every node of a new cluster must be started with the same peers, shards and replicas", p.Shards, p.Replicas, nodeIDs(p), h.local.Shards, h.local.Replicas, nodeIDs(h.local))
		h.mismatch.Store(&err)
		return
	}
	h.mismatch.Store(nil)
	h.placement.Store(p)
	if err := writePlacement(h.cfg.Dir, p); err != nil && h.cfg.OnSchedulerError != nil {
		h.cfg.OnSchedulerError(err)
	}
	h.changed()
	h.wakeBalancer()
}

// leadMeta writes the first placement when this node wins the metadata
// group's first election, and wakes the metadata leader's watchers.
func (h *Host) leadMeta() {
	defer h.wg.Done()
	for {
		select {
		case <-h.ctx.Done():
			return
		case leads := <-h.meta.notify:
			h.metaMoved()
			if !leads || h.metaFS.placement() != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(h.ctx, h.cfg.ApplyTimeout)
			_, err := h.meta.apply(ctx, metaCreate, h.local)
			cancel()
			if err != nil && h.ctx.Err() == nil && h.cfg.OnSchedulerError != nil {
				h.cfg.OnSchedulerError(fmt.Errorf("raftfsm: writing the cluster's placement: %w", err))
			}
		}
	}
}

// watchMetaLeader wakes LeaderChanged's waiters at every change of the
// metadata group's leader.
func (h *Host) watchMetaLeader() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	h.meta.raft.RegisterObserver(obs)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer h.meta.raft.DeregisterObserver(obs)
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-ch:
				h.metaMoved()
			}
		}
	}()
}

func (h *Host) metaMoved() {
	h.metaMu.Lock()
	close(h.metaCh)
	h.metaCh = make(chan struct{})
	h.metaMu.Unlock()
}

// LeaderChanged returns a channel closed at the next change of the
// metadata group's leader, which is the cluster's leader as Status
// reports it (the query broker meets there). It makes a Host an
// httpapi.LeaderWatcher.
func (h *Host) LeaderChanged() <-chan struct{} {
	h.metaMu.Lock()
	defer h.metaMu.Unlock()
	return h.metaCh
}

// metaLeader returns the metadata group's leader and its HTTP address.
func (h *Host) metaLeader() (id, httpAddr string) {
	_, lid := h.meta.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	n, _ := h.placement.Load().node(string(lid))
	return string(lid), n.HTTPAddr
}

func (h *Host) metaNotLeader() error {
	id, httpAddr := h.metaLeader()
	if id == h.cfg.ID {
		id, httpAddr = "", ""
	}
	return &engine.NotLeaderError{LeaderID: id, LeaderHTTP: httpAddr}
}

// Status implements httpapi.Cluster: the metadata group's state as this
// node sees it, and each shard this node holds a replica of.
func (h *Host) Status(ctx context.Context) (engine.ClusterStatus, error) {
	r := h.meta.raft
	p := h.placement.Load()
	st := engine.ClusterStatus{ID: h.cfg.ID, State: r.State().String(), Term: r.CurrentTerm(), CommitIndex: r.CommitIndex(),
		AppliedIndex: r.AppliedIndex(), LastIndex: r.LastIndex(), ShardCount: p.Shards, PlacementVersion: p.Version}
	st.LeaderID, st.LeaderHTTP = h.metaLeader()
	cf := r.GetConfiguration()
	if err := cf.Error(); err != nil {
		return st, err
	}
	for _, s := range cf.Configuration().Servers {
		n, _ := p.node(string(s.ID))
		st.Members = append(st.Members, engine.ClusterMember{ID: string(s.ID), RaftAddr: string(s.Address), HTTPAddr: n.HTTPAddr,
			Voter: s.Suffrage == raft.Voter, Leader: string(s.ID) == st.LeaderID})
	}
	for k, n := range h.shards {
		if n == nil {
			continue
		}
		ss := engine.ShardStatus{Shard: k, State: n.raft.State().String(), Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(),
			AppliedIndex: n.fsm.Applied(), LastIndex: n.raft.LastIndex(), Replicas: slices.Clone(p.Groups[k].Replicas),
			DesiredLeader: p.Groups[k].Leader}
		ss.LeaderID, ss.LeaderHTTP = h.ShardLeader(k)
		st.Shards = append(st.Shards, ss)
	}
	return st, ctx.Err()
}

// Join implements httpapi.Cluster: nodes do not join a sharded cluster yet.
func (h *Host) Join(context.Context, string, string, string) error {
	return fmt.Errorf("%w: nodes cannot join a sharded cluster yet: its nodes are fixed when it is created (docs/sharding.md)", engine.ErrInvalidCommand)
}

// Remove implements httpapi.Cluster: nodes do not leave a sharded cluster
// yet.
func (h *Host) Remove(context.Context, string) error {
	return fmt.Errorf("%w: nodes cannot leave a sharded cluster yet: its nodes are fixed when it is created (docs/sharding.md)", engine.ErrInvalidCommand)
}

// TransferLeader implements httpapi.Cluster: it hands the metadata group's
// leadership to another voter. A shard's leadership follows its desired
// leader (SetShardLeader).
func (h *Host) TransferLeader(ctx context.Context) error {
	if h.meta.raft.State() != raft.Leader {
		return h.metaNotLeader()
	}
	if err := futureError(ctx, h.meta.raft.LeadershipTransfer()); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return h.metaNotLeader()
		}
		return fmt.Errorf("raftfsm: leadership transfer of the metadata group: %w", err)
	}
	return nil
}

// SetShardLeader makes node the desired leader of shard (through the
// metadata group's leader; another node answers not-leader naming it).
// The shard's current leader then hands leadership over. It returns the
// new placement version.
func (h *Host) SetShardLeader(ctx context.Context, shard int, node string) (uint64, error) {
	v, err := h.meta.apply(ctx, metaSetLeader, &setLeaderBody{Shard: shard, Leader: node})
	if errors.Is(err, engine.ErrNotLeader) {
		return 0, h.metaNotLeader()
	}
	return v, err
}

// RebalanceLeaders sets every shard's desired leader back to the spread a
// new cluster starts with, through the metadata group's leader.
func (h *Host) RebalanceLeaders(ctx context.Context) (uint64, error) {
	v, err := h.meta.apply(ctx, metaRebalance, struct{}{})
	if errors.Is(err, engine.ErrNotLeader) {
		return 0, h.metaNotLeader()
	}
	return v, err
}

// Ready reports whether the node should be sent work: the metadata group
// knows a leader and agrees with this node's placement, and every shard
// this node holds passes its Node's Ready.
func (h *Host) Ready(ctx context.Context) error {
	if h.ctx.Err() != nil {
		return ErrClosed
	}
	if e := h.mismatch.Load(); e != nil {
		return fmt.Errorf("%w: %v", ErrNotReady, *e)
	}
	if id, _ := h.metaLeader(); id == "" {
		return fmt.Errorf("%w: the metadata group knows no leader (this node is %s in it)", ErrNotReady, h.meta.raft.State())
	}
	for k, n := range h.shards {
		if n == nil {
			continue
		}
		if err := n.Ready(ctx); err != nil {
			return fmt.Errorf("shard %d: %w", k, err)
		}
	}
	return nil
}

// Engines returns the engine of each shard this node holds, by shard (nil
// where it holds none), for tests and in-process tools.
func (h *Host) Engines() []*embedded.Engine {
	out := make([]*embedded.Engine, len(h.shards))
	for k, n := range h.shards {
		if n != nil {
			out[k] = n.Engine()
		}
	}
	return out
}

func (h *Host) wakeBalancer() {
	select {
	case h.balanceWake <- struct{}{}:
	default:
	}
}

// watchPeers keeps, for the balancer, which followers of shard k fail to
// answer n's heartbeats while n leads it, and wakes the balancer when one
// answers again: a desired leader that came back takes its shard back at
// once, and one that is down is not handed a leadership it cannot take
// (a transfer holds the shard's writes until it times out).
func (h *Host) watchPeers(n *Node, k int) {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer n.raft.DeregisterObserver(obs)
		for {
			select {
			case <-h.ctx.Done():
				return
			case o := <-ch:
				h.peerMu.Lock()
				if h.failing[k] == nil {
					h.failing[k] = map[string]bool{}
				}
				switch d := o.Data.(type) {
				case raft.FailedHeartbeatObservation:
					h.failing[k][string(d.PeerID)] = true
				case raft.ResumedHeartbeatObservation:
					delete(h.failing[k], string(d.PeerID))
				}
				h.peerGen[k]++
				h.peerMu.Unlock()
				h.wakeBalancer()
			}
		}
	}()
}

// peerFailing reports whether shard k's follower id fails to answer this
// node's heartbeats, and how many times the failing followers of k changed.
func (h *Host) peerFailing(k int, id string) (bool, uint64) {
	h.peerMu.Lock()
	defer h.peerMu.Unlock()
	return h.failing[k][id], h.peerGen[k]
}

// Bounds of the balancer's backoff after a leadership transfer failed
// (the desired leader down, or behind).
const (
	minBalanceBackoff = 500 * time.Millisecond
	maxBalanceBackoff = 30 * time.Second
)

// balance hands the leadership of each shard this node leads to the shard's
// desired leader, when that is another node (docs/sharding.md,
// "Placement"). It looks when woken: at a change of leader of a local
// shard or of the placement, when a follower's heartbeats fail or answer
// again, and when a wait below ends; it never polls. A node that just won
// a shard waits one heartbeat timeout before handing it on, so that a
// desired leader that is down shows as failing first, and it does not hand
// a shard to a follower that fails its heartbeats.
func (h *Host) balance() {
	defer h.wg.Done()
	type shardState struct {
		backoff  time.Duration
		retryAt  time.Time
		inflight bool
		leading  bool
		ledSince time.Time
		peerGen  uint64 // peerFailing's count when last looked at
	}
	st := make([]shardState, len(h.shards))
	type result struct {
		shard int
		err   error
	}
	results := make(chan result, len(h.shards))
	settle := h.cfg.HeartbeatTimeout
	log := hclogger(h.cfg.Config, "balance")
	for {
		select {
		case <-h.ctx.Done():
			return
		case r := <-results:
			s := &st[r.shard]
			s.inflight = false
			if r.err == nil {
				s.backoff, s.retryAt = 0, time.Time{}
				continue
			}
			s.backoff = min(max(2*s.backoff, minBalanceBackoff), maxBalanceBackoff)
			s.retryAt = time.Now().Add(s.backoff)
			log.Warn("handing a shard's leadership to its desired leader failed", "shard", r.shard,
				"to", h.placement.Load().Groups[r.shard].Leader, "error", r.err, "retry_in", s.backoff)
			time.AfterFunc(s.backoff, h.wakeBalancer)
			continue
		case <-h.balanceWake:
		}
		p := h.placement.Load()
		now := time.Now()
		for k, n := range h.shards {
			if n == nil {
				continue
			}
			s := &st[k]
			leads := n.IsLeader()
			if leads && !s.leading {
				s.ledSince = now
				time.AfterFunc(settle, h.wakeBalancer)
			}
			s.leading = leads
			want := p.Groups[k].Leader
			if want == h.cfg.ID || !leads {
				s.backoff, s.retryAt = 0, time.Time{}
				continue
			}
			failing, gen := h.peerFailing(k, want)
			if gen != s.peerGen {
				// A follower failed or came back: what held the transfer
				// back may be over.
				s.peerGen, s.backoff, s.retryAt = gen, 0, time.Time{}
			}
			if s.inflight || now.Before(s.retryAt) || now.Sub(s.ledSince) < settle || failing {
				continue
			}
			to, _ := p.node(want)
			s.inflight = true
			go func() {
				f := n.raft.LeadershipTransferToServer(raft.ServerID(to.ID), raft.ServerAddress(to.RaftAddr))
				results <- result{shard: k, err: futureError(h.ctx, f)}
			}()
		}
	}
}
