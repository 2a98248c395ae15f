package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/storage"
)

// HostConfig configures OpenHost, one node of a sharded cluster
// (docs/sharding.md). Its Config is the template of every Raft group the
// node runs (the metadata group and one per shard it holds): ID, Dir,
// RaftAddr (the node's one Raft port), HTTPAddr, TLS, Dial, the timeouts,
// Storage, Limits, Clock and Logger. Its Bootstrap is ignored: a node
// creates its groups on its first start, from Peers. Its Metrics, if set,
// must be made with metrics.Options.Sharded: each shard records the
// engine's and its Raft group's families with a shard label
// (metrics.Metrics.ForShard), and the Host bridges hashicorp/raft's
// process-wide timings into the node's own.
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
	// Join makes a new node of a cluster that runs already: it starts no
	// group, holds no shard, and learns the placement from the metadata
	// group once an admin added it (AddNode, POST /v1/cluster/members)
	// and the group's leader made it a member. It needs Shards, the
	// cluster's count; Peers are not needed. Ignored once the node's
	// directory holds a placement that names it.
	Join bool
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
	// log holds the Raft logs of every group of the node (nodelog.go).
	log *nodeLog
	// store is the state store of every shard replica the node holds,
	// and stopTicks stops the ticks of its value-log collection.
	store     *nodeStore
	stopTicks func()
	// shards holds this node's replica of each shard, nil where it has
	// none. Only OpenHost and reconcile store into it (a replica arrives
	// or leaves with a move); everything else loads.
	shards []atomic.Pointer[Node]
	// learned holds, for each shard this node holds no replica of, the
	// node last seen leading it (NoteShardLeader); nil until one was, and
	// again after each new placement.
	learned []atomic.Pointer[string]
	// rpc is the multiplexer's layer of host calls (hostrpc.go).
	rpc *groupLayer
	// local is the placement this node started with (its directory's);
	// placement the newest the metadata group applied (local until then).
	local     *Placement
	placement atomic.Pointer[Placement]
	// releaseBridge undoes the bridge of hashicorp/raft's own timings into
	// the node's Metrics (nil until OpenHost succeeded).
	releaseBridge func()
	// mismatch, when set, says that the metadata group holds another
	// layout than this node's directory: the node is not ready.
	mismatch atomic.Pointer[error]
	// metaWake wakes leadMeta to add the placement's new nodes to the
	// metadata group, when this node leads it.
	metaWake chan struct{}

	changeMu sync.Mutex
	changeCh chan struct{} // closed at every commit or leader change of a local shard
	metaMu   sync.Mutex
	metaCh   chan struct{} // closed at every change of the metadata group's leader

	balanceWake   chan struct{}
	reconcileWake chan struct{}
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
	if err := refuseGroupLogs(cfg.Dir); err != nil {
		return nil, err
	}
	restart := fileExists(filepath.Join(cfg.Dir, placementFile))
	p, err := hostPlacement(cfg) // a new node's checks its replicas' files
	if err != nil {
		return nil, err
	}
	self, ok := p.node(cfg.ID)
	if !ok {
		return nil, fmt.Errorf("%w: node %q is not one of the cluster's nodes %v (a new node is started with Join, --join, until the cluster added it)", ErrConfig, cfg.ID, nodeIDs(p))
	}
	if err := checkHostFiles(len(p.ShardsOf(cfg.ID))); err != nil && restart {
		// A node that holds these replicas already starts anyway: refusing
		// would only keep it down (moves may have brought it past the
		// limit since it started). Its operator is told how to make room.
		hclogger(cfg.Config, "host").Warn("this node holds more shard replicas than its process's open files may carry; "+
			"raise the limit (ulimit -n, LimitNOFILE=) or move replicas to other nodes (heddle cluster move-shard)", "error", err)
	}
	if self.RaftAddr != cfg.RaftAddr {
		return nil, fmt.Errorf("%w: RaftAddr %q, but the cluster knows node %q at %q", ErrConfig, cfg.RaftAddr, cfg.ID, self.RaftAddr)
	}
	h := &Host{cfg: cfg, local: p, shards: make([]atomic.Pointer[Node], p.Shards), learned: make([]atomic.Pointer[string], p.Shards), changeCh: make(chan struct{}), metaCh: make(chan struct{}),
		balanceWake: make(chan struct{}, 1), reconcileWake: make(chan struct{}, 1), metaWake: make(chan struct{}, 1), failing: map[int]map[string]bool{}, peerGen: map[int]uint64{}}
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
	h.rpc = h.mux.layer(hostRPCGroup)
	mine := p.ShardsOf(cfg.ID)
	for _, k := range mine {
		h.mux.layer(uint16(k + 1))
	}
	if h.log, err = openNodeLog(filepath.Join(cfg.Dir, nodeLogDir)); err != nil {
		return nil, err
	}
	if h.store, err = openNodeStore(filepath.Join(cfg.Dir, "state"), cfg.Storage, len(mine)); err != nil {
		return nil, err
	}
	storeLog := hclogger(cfg.Config, "state")
	var ticks <-chan time.Time
	ticks, h.stopTicks = valueLogTicks(storage.DefaultValueLogInterval)
	h.store.collect(ticks, func(_ int, err error) {
		if err != nil {
			storeLog.Warn("collecting the state store's value log failed", "error", err)
		}
	})
	if err := h.removeLeftShards(p); err != nil {
		return nil, err
	}
	h.metaFS = &metaFSM{onChange: h.placementApplied}
	if h.meta, err = openMeta(cfg.Config, filepath.Join(cfg.Dir, "meta", "raft"), h.log, metaLayer, p, h.metaFS); err != nil {
		return nil, err
	}
	for _, k := range mine {
		n, err := h.openShard(p, k)
		if err != nil {
			return nil, fmt.Errorf("raftfsm: shard %d: %w", k, err)
		}
		h.shards[k].Store(n)
	}
	h.releaseBridge = cfg.Metrics.BridgeRaft()
	h.delivery = &deliverer{h: h, workers: map[pairKey]chan struct{}{}, delivered: map[pairKey]uint64{}, scanned: map[int]uint64{},
		gauged: map[pairKey]bool{}, releasing: map[int]bool{}, holds: map[int]seenHold{}, heldCh: make(chan struct{})}
	h.wg.Add(5)
	go h.leadMeta()
	go h.balance()
	go h.reconcile()
	go h.serveHostCalls(h.rpc)
	go h.deliverLoop()
	h.watchMetaLeader()
	return h, nil
}

// refuseGroupLogs returns an error when dir holds a Raft log of a group
// of its own (a raft.db under meta/raft or shards/NNNN/raft): the layout
// of sharded nodes before they kept one node log for all their groups.
// Sharded clusters were not released with that layout, so it is refused
// rather than migrated.
func refuseGroupLogs(dir string) error {
	found, err := filepath.Glob(filepath.Join(dir, "shards", "*", "raft", "raft.db"))
	if err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	if meta := filepath.Join(dir, "meta", "raft", "raft.db"); fileExists(meta) {
		found = append([]string{meta}, found...)
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s is a Raft log of one group, from an earlier development version of sharded clusters: "+
		"the layout changed, and a sharded node now keeps the logs of all its groups in %s; "+
		"this directory cannot be opened (there is no migration): create the cluster again in empty directories",
		ErrConfig, found[0], filepath.Join(dir, nodeLogDir))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// shardDir is the directory of this node's replica of shard k.
func (h *Host) shardDir(k int) string {
	return filepath.Join(h.cfg.Dir, "shards", fmt.Sprintf("%04d", k))
}

// removeLeftShards removes the directories and the state of the shards p
// does not place on this node: a replica moved away, whose node stopped
// after it applied the move's end and before it removed the replica.
func (h *Host) removeLeftShards(p *Placement) error {
	entries, err := os.ReadDir(filepath.Join(h.cfg.Dir, "shards"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("raftfsm: %w", err)
	}
	for _, e := range entries {
		var k int
		if _, err := fmt.Sscanf(e.Name(), "%04d", &k); err != nil || len(e.Name()) != 4 || k < 0 || k >= p.Shards || p.Groups[k].holds(h.cfg.ID) {
			continue
		}
		if err := h.removeReplica(k); err != nil {
			return fmt.Errorf("raftfsm: removing the replica of shard %d that moved away: %w", k, err)
		}
	}
	// State in the store with no directory left: a removal whose deletes
	// a crash took back after the directory went.
	held, err := h.store.shards()
	if err != nil {
		return err
	}
	for _, k := range held {
		if int(k) < p.Shards && p.Groups[k].holds(h.cfg.ID) {
			continue
		}
		if err := h.store.dropReplica(k); err != nil {
			return fmt.Errorf("raftfsm: removing the state of shard %d, which moved away: %w", k, err)
		}
	}
	return nil
}

// removeReplica removes what this node kept of its closed replica of
// shard k: the group's Raft log and stable state in the node log first,
// then the shard's directory (its state and snapshots). In that order, a
// stop between the two leaves the directory, which removeLeftShards finds
// at the next start and removes again. A replica that moves back later
// starts from nothing, as a replica a move brings must: a log or a vote
// left from its earlier time in the group would contradict the group.
func (h *Host) removeReplica(k int) error {
	if err := h.log.dropGroup(uint32(k + 1)); err != nil {
		return err
	}
	if err := h.store.dropReplica(uint32(k)); err != nil {
		return err
	}
	return os.RemoveAll(h.shardDir(k))
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
		if _, ok := p.node(cfg.ID); !ok && cfg.Join {
			// Stopped while it learned the placements before the one that
			// added it.
			return joiningPlacement(cfg, p.Shards), nil
		}
		if len(cfg.Peers) > 0 {
			// The shards' replicas may have moved since the cluster was
			// created: the peers and replicas given must name the same
			// nodes and replica count, and the directory says where the
			// replicas are now.
			want, err := NewPlacement(cfg.Peers, p.Shards, cfg.Replicas)
			if err != nil {
				return nil, err
			}
			added := len(want.Nodes) <= len(p.Nodes) && slices.Equal(want.Nodes, p.Nodes[:len(want.Nodes)])
			if want.Replicas != p.Replicas || !added {
				return nil, fmt.Errorf("%w: the peers and replicas given differ from the cluster's in %s: %s",
					ErrConfig, path, layoutDifference(&want, p))
			}
		}
		return p, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	if cfg.Join {
		if cfg.Shards == 0 {
			return nil, fmt.Errorf("%w: a node joining a sharded cluster needs Shards, the cluster's shard count", ErrConfig)
		}
		return joiningPlacement(cfg, cfg.Shards), nil
	}
	if len(cfg.Peers) == 0 || cfg.Shards == 0 {
		return nil, fmt.Errorf("%w: %s holds no cluster: a new node needs Peers and Shards", ErrConfig, cfg.Dir)
	}
	p, err := NewPlacement(cfg.Peers, cfg.Shards, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	// Checked before the placement is written, so that a refused layout
	// leaves no cluster behind (a restart is only warned: OpenHost).
	if err := checkHostFiles(len(p.ShardsOf(cfg.ID))); err != nil {
		return nil, err
	}
	if err := writePlacement(cfg.Dir, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// joiningPlacement is what a joining node starts with (HostConfig.Join):
// version 0, which every placement of the metadata group replaces, this
// node alone, and no shard. It is neither valid nor written.
func joiningPlacement(cfg HostConfig, shards int) *Placement {
	return &Placement{Shards: shards, Nodes: []PlacementNode{{ID: cfg.ID, RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr}},
		Groups: make([]ShardPlacement, shards)}
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

// layoutDifference says how the peers and replicas given (want) differ
// from a directory's placement (have): the first thing that differs,
// named as --peers and --replicas name it. Two layouts whose node ids
// agree may differ in an address only (a restored cluster started on other
// ports than it was restored for), and a message showing the ids alone
// would show two equal layouts.
func layoutDifference(want, have *Placement) string {
	if want.Replicas != have.Replicas {
		return fmt.Sprintf("%d replicas given, %d there", want.Replicas, have.Replicas)
	}
	if len(want.Nodes) > len(have.Nodes) {
		return fmt.Sprintf("%d nodes given (%v), %d there (%v)", len(want.Nodes), nodeIDs(want), len(have.Nodes), nodeIDs(have))
	}
	for i, n := range want.Nodes {
		h := have.Nodes[i]
		if n.ID != h.ID {
			return fmt.Sprintf("node %d is %s given, %s there (the nodes there: %v)", i+1, n.ID, h.ID, nodeIDs(have))
		}
		if n != h {
			return fmt.Sprintf("node %s is %s/%s given, %s/%s there (raft-addr/http-addr)", n.ID, n.RaftAddr, n.HTTPAddr, h.RaftAddr, h.HTTPAddr)
		}
	}
	return "they agree" // not reached: the caller found a difference
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
	c.Dir = h.shardDir(k)
	// Only the replicas a shard was created with start its group; a
	// replica a move brings joins the group when its leader adds it.
	c.Bootstrap = p.Groups[k].Moves == 0 && slices.Contains(p.Groups[k].Replicas, h.cfg.ID)
	// Each shard records the engine's and its group's metrics with its
	// shard label (metrics.Metrics.ForShard); the Host's own Metrics must
	// be a sharded node's.
	m, err := h.cfg.Metrics.ForShard(strconv.Itoa(k))
	if err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	c.Metrics = m
	if c.Logger != nil {
		c.Logger = c.Logger.With("shard", k)
	}
	var peers []raft.Server
	for _, id := range p.Groups[k].Replicas {
		n, _ := p.node(id) // Validate checked every replica is a node
		peers = append(peers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(n.RaftAddr), Suffrage: raft.Voter})
	}
	c.group = groupOptions{
		log:      h.log,
		logGroup: uint32(k + 1),
		store:    h.store,
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
		if h.releaseBridge != nil {
			h.releaseBridge()
		}
		// The node's goroutines stop first: reconcile opens and closes
		// replicas, and no host call is answered past this point.
		if h.rpc != nil {
			_ = h.rpc.Close()
		}
		h.wg.Wait()
		var errs []error
		var wg sync.WaitGroup
		var mu sync.Mutex
		for k := range h.shards {
			n := h.shards[k].Load()
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
		if h.meta != nil {
			errs = append(errs, h.meta.close())
		}
		if h.mux != nil {
			errs = append(errs, h.mux.close())
		}
		// Last: every group that appends to the node log, and every
		// replica whose state is in the node's store, is closed.
		if h.store != nil {
			h.stopTicks()
			errs = append(errs, h.store.close())
		}
		if h.log != nil {
			errs = append(errs, h.log.Close())
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
	return h.shards[k].Load()
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
	} else if l := h.learned[k].Load(); l != nil && slices.Contains(p.Groups[k].Replicas, *l) {
		id = *l
	} else {
		id = p.Groups[k].Leader
	}
	if httpAddr == "" && id != "" {
		node, _ := p.node(id)
		httpAddr = node.HTTPAddr
	}
	return id, httpAddr
}

// NoteShardLeader implements httpapi.ShardSet: the node at httpAddr
// applied, as the leader, a command this node forwarded for shard k. A node that
// holds a replica of k knows its leader from Raft, and an address that
// names no node of the placement is not kept. ShardLeader names the
// learned node only while the placement keeps it a replica of k.
func (h *Host) NoteShardLeader(k int, httpAddr string) {
	p := h.placement.Load()
	if k < 0 || k >= len(h.learned) || h.Shard(k) != nil {
		return
	}
	for _, n := range p.Nodes {
		if n.HTTPAddr == httpAddr && slices.Contains(p.Groups[k].Replicas, n.ID) {
			id := n.ID
			h.learned[k].Store(&id)
			return
		}
	}
}

// ShardReplicas implements httpapi.ShardSet: the HTTP addresses of the
// nodes holding shard k, the leader ShardLeader names first, this node
// left out.
func (h *Host) ShardReplicas(k int) []string {
	id, addr := h.ShardLeader(k)
	var out []string
	if addr != "" && id != h.ID() {
		out = append(out, addr)
	}
	for _, n := range h.otherReplicas(k, id) {
		if n.HTTPAddr != "" {
			out = append(out, n.HTTPAddr)
		}
	}
	return out
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
//
// A placement older than the one this node holds is one the group replays
// at start, before it reaches the newest: it is passed over, so that a
// replica that moved here is not closed, nor one that moved away opened,
// for the time of the replay. One of the same version must be the same
// placement: another means that this node was started with other peers,
// shards or replicas than the node that created the cluster, and the node
// stays not ready.
func (h *Host) placementApplied(p *Placement) {
	select {
	case h.metaWake <- struct{}{}:
	default:
	}
	if h.mismatch.Load() != nil {
		return
	}
	cur := h.placement.Load()
	switch {
	case p.Shards != h.local.Shards:
		// Only a node started with Join can see this: the others wrote
		// the cluster's count in their directory, or made the placement.
		err := fmt.Errorf("the cluster has %d shards, but this node was started with %d: start it again with the cluster's count", p.Shards, h.local.Shards)
		h.mismatch.Store(&err)
		h.changed() // Ready's watchers look again
		return
	case p.Version < cur.Version:
		return
	case p.Version == cur.Version && !p.equalLayout(cur):
		err := fmt.Errorf("the metadata group holds a placement of %d shards with %d replicas on %v that differs from this node's (%d shards, %d replicas on %v): "+
			"every node of a new cluster must be started with the same peers, shards and replicas", p.Shards, p.Replicas, nodeIDs(p), cur.Shards, cur.Replicas, nodeIDs(cur))
		h.mismatch.Store(&err)
		h.changed() // Ready's watchers look again
		return
	}
	h.placement.Store(p)
	if p.Version > cur.Version {
		// A new placement moves replicas or desired leaders, which a
		// learned leader predates: the placement speaks until the next
		// forward teaches this node again.
		for k := range h.learned {
			h.learned[k].Store(nil)
		}
	}
	if err := writePlacement(h.cfg.Dir, p); err != nil && h.cfg.OnSchedulerError != nil {
		h.cfg.OnSchedulerError(err)
	}
	h.changed()
	h.wakeBalancer()
	h.wakeReconcile()
}

// leadMeta writes the first placement when this node wins the metadata
// group's first election, and wakes the metadata leader's watchers.
func (h *Host) leadMeta() {
	defer h.wg.Done()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.metaWake:
			if err := h.addMetaMembers(); err != nil && h.ctx.Err() == nil {
				hclogger(h.cfg.Config, "meta").Warn("adding a new node to the metadata group failed; trying again", "error", err)
				time.AfterFunc(time.Second, func() {
					select {
					case h.metaWake <- struct{}{}:
					default:
					}
				})
			}
			continue
		case leads := <-h.meta.notify:
			h.metaMoved()
			if leads && h.metaFS.placement() != nil {
				select {
				case h.metaWake <- struct{}{}:
				default:
				}
			}
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

// addMetaMembers makes the metadata group's members the placement's nodes,
// when this node leads it: it adds the nodes it does not have yet (added
// by AddNode), as voters while the group has fewer than five, else as
// non-voters, as a new cluster's group is made; it promotes a non-voter
// that is now among the first five; and it removes the members that are no
// longer nodes (RemoveNode), itself last, once the others are done (a
// leader that removes itself steps down, and the next leader goes on).
func (h *Host) addMetaMembers() error {
	if err := h.addMetaNodes(); err != nil {
		return err
	}
	return h.removeMetaNodes()
}

// removeMetaNodes removes from the metadata group, when this node leads it,
// the members the placement no longer lists.
func (h *Host) removeMetaNodes() error {
	p := h.metaFS.placement()
	if p == nil || h.meta.raft.State() != raft.Leader {
		return nil
	}
	f := h.meta.raft.GetConfiguration()
	if err := futureError(h.ctx, f); err != nil {
		return err
	}
	var gone []raft.ServerID
	for _, s := range f.Configuration().Servers {
		if _, ok := p.node(string(s.ID)); !ok {
			gone = append(gone, s.ID)
		}
	}
	// Itself last: after that it leads no more.
	slices.SortStableFunc(gone, func(a, b raft.ServerID) int {
		switch {
		case a == raft.ServerID(h.cfg.ID):
			return 1
		case b == raft.ServerID(h.cfg.ID):
			return -1
		}
		return 0
	})
	for _, id := range gone {
		if err := futureError(h.ctx, h.meta.raft.RemoveServer(id, 0, h.cfg.ApplyTimeout)); err != nil {
			return fmt.Errorf("removing node %s from the metadata group: %w", id, err)
		}
	}
	return nil
}

// addMetaNodes is addMetaMembers' adding and promoting.
func (h *Host) addMetaNodes() error {
	p := h.metaFS.placement()
	if p == nil || h.meta.raft.State() != raft.Leader {
		return nil
	}
	f := h.meta.raft.GetConfiguration()
	if err := futureError(h.ctx, f); err != nil {
		return err
	}
	in := map[string]raft.ServerSuffrage{}
	for _, s := range f.Configuration().Servers {
		in[string(s.ID)] = s.Suffrage
	}
	for i, n := range p.Nodes {
		suffrage, member := in[n.ID]
		voter := i < p.metaVoters()
		if member && (suffrage == raft.Voter || !voter) {
			continue
		}
		add := h.meta.raft.AddVoter // adds, or promotes a non-voter
		if !voter {
			add = h.meta.raft.AddNonvoter
		}
		if err := futureError(h.ctx, add(raft.ServerID(n.ID), raft.ServerAddress(n.RaftAddr), 0, h.cfg.ApplyTimeout)); err != nil {
			return fmt.Errorf("adding node %s to the metadata group: %w", n.ID, err)
		}
	}
	return nil
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
	for k := range h.shards {
		n := h.Shard(k)
		if n == nil {
			continue
		}
		ss := engine.ShardStatus{Shard: k, State: n.raft.State().String(), Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(),
			AppliedIndex: n.fsm.Applied(), LastIndex: n.raft.LastIndex(), Replicas: slices.Clone(p.Groups[k].Replicas),
			DesiredLeader: p.Groups[k].Leader}
		if m := p.Groups[k].Move; m != nil {
			ss.MoveFrom, ss.MoveTo, ss.MoveCancelling = m.From, m.To, m.Cancel
		}
		ss.LeaderID, ss.LeaderHTTP = h.ShardLeader(k)
		st.Shards = append(st.Shards, ss)
	}
	return st, ctx.Err()
}

// Join implements httpapi.Cluster: it adds a node to a sharded cluster
// (AddNode). The node was started with HostConfig.Join.
func (h *Host) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	_, err := h.AddNode(ctx, PlacementNode{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr})
	return err
}

// AddNode adds a node to the cluster's nodes, through the metadata group's
// leader (another node answers not-leader naming it), and returns the new
// placement version. The node holds no replica until one moves to it
// (MoveReplica); the group's leader makes it a member of the metadata
// group, from which it learns the placement. Adding the same node again
// changes nothing.
func (h *Host) AddNode(ctx context.Context, n PlacementNode) (uint64, error) {
	if err := checkNodeNames("ClusterMember", nodeName{"id", n.ID, maxNodeIDBytes},
		nodeName{"raft_addr", n.RaftAddr, maxAddrBytes}, nodeName{"http_addr", n.HTTPAddr, maxAddrBytes}); err != nil {
		return 0, err
	}
	v, err := h.meta.apply(ctx, metaAddNode, &n)
	if errors.Is(err, engine.ErrNotLeader) {
		return 0, h.metaNotLeader()
	}
	return v, err
}

// Remove implements httpapi.Cluster: RemoveNode.
func (h *Host) Remove(ctx context.Context, id string) error {
	_, err := h.RemoveNode(ctx, id)
	return err
}

// checkNodeNames refuses, before anything is proposed, a node id or
// address of an admin command that is longer than a placement holds.
// Proposed, such a value went into every node's metadata log, and the
// entry decoder then refused the entry as malformed (an internal error,
// HDL-RAFT-0001), or, for a set-leader's node, carried megabytes into the
// log before the placement refused it. The value is not echoed: it may be
// megabytes.
func checkNodeNames(cmd string, names ...nodeName) error {
	for _, n := range names {
		if len(n.value) > n.maxBytes {
			return fmt.Errorf("%w: %s.%s is %d bytes, more than %d", engine.ErrInvalidCommand, cmd, n.field, len(n.value), n.maxBytes)
		}
	}
	return nil
}

// nodeName is a node id or address an admin command carries, with the
// request field that carries it and its bound.
type nodeName struct {
	field, value string
	maxBytes     int
}

// RemoveNode takes a node out of the cluster's nodes, through the metadata
// group's leader (another node answers not-leader naming it), and returns
// the new placement version. The node must hold no replica: its replicas
// move first (MoveReplica). The group's leader then removes it from the
// metadata group.
func (h *Host) RemoveNode(ctx context.Context, id string) (uint64, error) {
	if err := checkNodeNames("RemoveNode", nodeName{"id", id, maxNodeIDBytes}); err != nil {
		return 0, err
	}
	v, err := h.meta.apply(ctx, metaRemoveNode, &removeNodeBody{ID: id})
	if errors.Is(err, engine.ErrNotLeader) {
		return 0, h.metaNotLeader()
	}
	return v, err
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
	if err := checkNodeNames("ShardLeaderRequest", nodeName{"node", node, maxNodeIDBytes}); err != nil {
		return 0, err
	}
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
// this node holds passes its Node's Ready, but for a replica a move brings
// here, which is still catching up.
func (h *Host) Ready(ctx context.Context) error {
	if h.ctx.Err() != nil {
		return ErrClosed
	}
	if e := h.mismatch.Load(); e != nil {
		return fmt.Errorf("%w: %v", ErrNotReady, *e)
	}
	// A node removed from the cluster says so first: the metadata group
	// shut its replica down when it left, and knows no leader here.
	p := h.placement.Load()
	if _, ok := p.node(h.cfg.ID); !ok {
		return fmt.Errorf("%w: node %s is not one of the cluster's nodes %v: it is joining, or it was removed (heddle cluster remove) and can be stopped",
			ErrNotReady, h.cfg.ID, nodeIDs(p))
	}
	if h.meta.raft.State() == raft.Shutdown {
		// hashicorp/raft shuts a member down once a configuration without
		// it is committed, which may reach it before the placement does.
		return fmt.Errorf("%w: node %s was removed from the metadata group (heddle cluster remove) and can be stopped", ErrNotReady, h.cfg.ID)
	}
	if id, _ := h.metaLeader(); id == "" {
		return fmt.Errorf("%w: the metadata group knows no leader (this node is %s in it)", ErrNotReady, h.meta.raft.State())
	}
	for k := range h.shards {
		n := h.Shard(k)
		if n == nil {
			continue
		}
		if m := p.Groups[k].Move; m != nil && m.To == h.cfg.ID {
			// A replica moving here catches up from nothing, and serves
			// nobody until it has: the node's other shards are ready.
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
	for k := range h.shards {
		if n := h.Shard(k); n != nil {
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
// (a transfer holds the shard's writes until it times out). A member
// added to or removed from the group wakes ShardsChanged's watchers.
func (h *Host) watchPeers(n *Node, k int) {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.PeerObservation:
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
			case <-n.ctx.Done(): // the replica moved away
				return
			case o := <-ch:
				if _, ok := o.Data.(raft.PeerObservation); ok {
					// A member joined or left the group (a move's step):
					// the shard's status changed, which no commit of its
					// state says.
					h.changed()
					continue
				}
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
		move  bool // a step of a move, not a leadership transfer
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
			if r.err == nil || errors.Is(r.err, errMoveCancelled) {
				// A cancelled move's driver runs again at once, to undo it.
				s.backoff, s.retryAt = 0, time.Time{}
				if r.err != nil {
					h.wakeBalancer()
				}
				continue
			}
			s.backoff = min(max(2*s.backoff, minBalanceBackoff), maxBalanceBackoff)
			s.retryAt = time.Now().Add(s.backoff)
			if r.move {
				log.Warn("moving a shard's replica failed; it resumes where it stopped", "shard", r.shard,
					"error", r.err, "retry_in", s.backoff)
			} else {
				log.Warn("handing a shard's leadership to its desired leader failed", "shard", r.shard,
					"to", h.placement.Load().Groups[r.shard].Leader, "error", r.err, "retry_in", s.backoff)
			}
			time.AfterFunc(s.backoff, h.wakeBalancer)
			continue
		case <-h.balanceWake:
		}
		p := h.placement.Load()
		now := time.Now()
		for k := range h.shards {
			n := h.Shard(k)
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
			if m := p.Groups[k].Move; m != nil {
				// The shard's leader carries a move out; leadership
				// follows the move, not the desired leader, until it ends.
				if leads && !s.inflight && !now.Before(s.retryAt) {
					s.inflight = true
					mv := *m
					go func() { results <- result{shard: k, move: true, err: h.driveMove(n, k, mv)} }()
				}
				continue
			}
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

func (h *Host) wakeReconcile() {
	select {
	case h.reconcileWake <- struct{}{}:
	default:
	}
}

// reconcile opens this node's replica of each shard the placement puts
// here and does not run yet (a move brings one), and closes and removes
// each one it no longer puts here (a move ended, taking it away). It runs
// at every new placement; the metadata group's applying goroutine only
// wakes it, since opening and closing a group takes a while.
func (h *Host) reconcile() {
	defer h.wg.Done()
	log := hclogger(h.cfg.Config, "placement")
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.reconcileWake:
		}
		p := h.placement.Load()
		for k := range h.shards {
			n := h.Shard(k)
			switch holds := p.Groups[k].holds(h.cfg.ID); {
			case holds && n == nil:
				n, err := h.openShard(p, k)
				if err != nil {
					log.Error("opening a replica that moves to this node failed; trying again", "shard", k, "error", err)
					time.AfterFunc(time.Second, h.wakeReconcile)
					continue
				}
				h.shards[k].Store(n)
				h.changed()
				h.wakeBalancer()
			case !holds && n != nil:
				// The move's end is committed, so the shard's group no
				// longer counts this replica: closing it loses nothing.
				h.shards[k].Store(nil)
				h.changed()
				err := n.Close()
				if err == nil {
					err = h.removeReplica(k)
				}
				if err != nil {
					log.Error("removing a replica that moved away", "shard", k, "error", err)
				} else {
					log.Info("removed a replica that moved away", "shard", k)
				}
				h.changed()
			}
		}
	}
}

// Bounds of a move's wait for the arriving replica to catch up.
const (
	catchUpPoll    = 50 * time.Millisecond
	catchUpTimeout = 10 * time.Minute
)

// driveMove carries out a move of shard k's replica on n, which leads the
// shard (docs/sharding.md, "Moving a replica"). Every step looks at the
// group's configuration first, so that a move stopped anywhere (a crash,
// a lost leadership) resumes at the step it had reached, on whichever
// node leads the shard next: add the arriving node as a non-voter, wait
// until it has applied what the leader had when it was added, make it a
// voter, hand leadership over if this node is the one leaving, remove the
// leaving node, and commit the move's end in the metadata group.
func (h *Host) driveMove(n *Node, k int, m ShardMove) error {
	ctx := h.ctx
	if m.Cancel {
		return h.driveCancel(n, k, m)
	}
	if hook := moveStepHook.Load(); hook != nil {
		(*hook)(ctx, h.cfg.ID, k, "start")
	}
	to, ok := h.placement.Load().node(m.To)
	if !ok {
		return fmt.Errorf("raftfsm: node %q is not in the placement", m.To)
	}
	member := func() (raft.Server, bool, error) {
		f := n.raft.GetConfiguration()
		if err := futureError(ctx, f); err != nil {
			return raft.Server{}, false, err
		}
		for _, s := range f.Configuration().Servers {
			if string(s.ID) == m.To {
				return s, true, nil
			}
		}
		return raft.Server{}, false, nil
	}
	s, in, err := member()
	if err != nil {
		return err
	}
	if !in {
		if err := futureError(ctx, n.raft.AddNonvoter(raft.ServerID(to.ID), raft.ServerAddress(to.RaftAddr), 0, h.cfg.ApplyTimeout)); err != nil {
			return fmt.Errorf("adding %s to shard %d's group as a non-voter: %w", m.To, k, err)
		}
		s.Suffrage = raft.Nonvoter
	}
	if hook := moveStepHook.Load(); hook != nil {
		(*hook)(ctx, h.cfg.ID, k, "nonvoter")
	}
	if s.Suffrage != raft.Voter {
		if err := h.awaitCaughtUp(ctx, n, k, m); err != nil {
			return err
		}
		if err := futureError(ctx, n.raft.AddVoter(raft.ServerID(to.ID), raft.ServerAddress(to.RaftAddr), 0, h.cfg.ApplyTimeout)); err != nil {
			return fmt.Errorf("making %s a voter of shard %d: %w", m.To, k, err)
		}
	}
	f := n.raft.GetConfiguration()
	if err := futureError(ctx, f); err != nil {
		return err
	}
	leaving := false
	for _, s := range f.Configuration().Servers {
		leaving = leaving || string(s.ID) == m.From
	}
	if leaving && m.From == h.cfg.ID {
		// The leaving node leads: the arriving one, caught up, takes over
		// and goes on with the move.
		if err := futureError(ctx, n.raft.LeadershipTransferToServer(raft.ServerID(to.ID), raft.ServerAddress(to.RaftAddr))); err != nil {
			return fmt.Errorf("handing shard %d's leadership to %s: %w", k, m.To, err)
		}
		return nil
	}
	if leaving {
		if err := futureError(ctx, n.raft.RemoveServer(raft.ServerID(m.From), 0, h.cfg.ApplyTimeout)); err != nil {
			return fmt.Errorf("removing %s from shard %d's group: %w", m.From, k, err)
		}
	}
	if _, err := h.proposeMeta(ctx, metaMoveDone, &moveBody{Shard: k, From: m.From, To: m.To}); err != nil {
		return fmt.Errorf("committing the end of shard %d's move: %w", k, err)
	}
	return nil
}

// driveCancel undoes move m of shard k's replica, cancelled by an
// operator, on n, which leads the shard: it takes the arriving node out of
// the group (handing leadership to the leaving one first if the arriving
// one leads) and commits the move's end with the replicas as they were.
// A move whose leaving node is out of the group already cannot be undone
// (its replicas are the move's): it is completed instead. Like driveMove,
// each step reads the group's configuration first, so a driver stopped
// anywhere resumes on the shard's next leader.
func (h *Host) driveCancel(n *Node, k int, m ShardMove) error {
	ctx := h.ctx
	log := hclogger(h.cfg.Config, "balance")
	f := n.raft.GetConfiguration()
	if err := futureError(ctx, f); err != nil {
		return err
	}
	var from, to bool
	for _, s := range f.Configuration().Servers {
		from = from || string(s.ID) == m.From
		to = to || string(s.ID) == m.To
	}
	if !from {
		log.Warn("a move's cancel came after the leaving node left the shard's group; the move ends as a move",
			"shard", k, "from", m.From, "to", m.To)
		if _, err := h.proposeMeta(ctx, metaMoveDone, &moveBody{Shard: k, From: m.From, To: m.To}); err != nil {
			return fmt.Errorf("committing the end of shard %d's move: %w", k, err)
		}
		return nil
	}
	if to && m.To == h.cfg.ID {
		// This node is the one the move brought: the leaving node, still
		// a member, takes over and goes on with the cancel.
		fromNode, ok := h.placement.Load().node(m.From)
		if !ok {
			return fmt.Errorf("raftfsm: node %q is not in the placement", m.From)
		}
		if err := futureError(ctx, n.raft.LeadershipTransferToServer(raft.ServerID(fromNode.ID), raft.ServerAddress(fromNode.RaftAddr))); err != nil {
			return fmt.Errorf("handing shard %d's leadership to %s to cancel its move: %w", k, m.From, err)
		}
		return nil
	}
	if to {
		if err := futureError(ctx, n.raft.RemoveServer(raft.ServerID(m.To), 0, h.cfg.ApplyTimeout)); err != nil {
			return fmt.Errorf("removing %s from shard %d's group to cancel its move: %w", m.To, k, err)
		}
	}
	if _, err := h.proposeMeta(ctx, metaMoveCancelled, &moveBody{Shard: k, From: m.From, To: m.To}); err != nil {
		return fmt.Errorf("committing the cancel of shard %d's move: %w", k, err)
	}
	log.Info("cancelled a move", "shard", k, "from", m.From, "to", m.To)
	return nil
}

// CancelMove cancels shard's move under way (through the metadata group's
// leader; another node answers not-leader naming it). It records the
// cancel and returns that placement's version; the shard's leader then
// takes the arriving node out of the group, and the placement's next
// version without the move says the cancel ended. A move whose leaving
// node already left the group completes instead.
func (h *Host) CancelMove(ctx context.Context, shard int) (uint64, error) {
	v, err := h.meta.apply(ctx, metaMoveCancel, &moveBody{Shard: shard})
	if errors.Is(err, engine.ErrNotLeader) {
		return 0, h.metaNotLeader()
	}
	return v, err
}

// moveStepHook, when set (by a test), is called by a move's driver after
// each step named: a test holds the driver there to stop its node in the
// middle of a move.
var moveStepHook atomic.Pointer[func(ctx context.Context, node string, shard int, step string)]

// errMoveCancelled ends a move's wait when an operator cancels the move:
// the driver runs again and undoes it.
var errMoveCancelled = errors.New("raftfsm: the move was cancelled")

// awaitCaughtUp waits until the arriving node of move m has applied, in
// its replica of shard k, what n's state had applied when the wait began,
// asking that node (a leader of hashicorp/raft does not say how far a
// non-voter has replicated). The states' applied indexes are compared, not
// the log's last index: an entry the state machine never sees (a new
// term's no-op, a configuration) may end the log until the next command.
// A cancel of the move ends the wait (errMoveCancelled): a node that is
// down would otherwise hold it for catchUpTimeout.
func (h *Host) awaitCaughtUp(ctx context.Context, n *Node, k int, m ShardMove) error {
	id := m.To
	target := n.fsm.Applied()
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	t := time.NewTicker(catchUpPoll)
	defer t.Stop()
	for {
		applied, err := h.shardAppliedOn(ctx, id, k)
		if err == nil && applied >= target {
			return nil
		}
		if n.raft.State() != raft.Leader {
			return fmt.Errorf("%w: this node lost shard %d's leadership while %s caught up", engine.ErrNotLeader, k, id)
		}
		if cur := h.placement.Load().Groups[k].Move; cur != nil && cur.Cancel {
			return fmt.Errorf("shard %d's move to %s: %w", k, id, errMoveCancelled)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to catch up with shard %d (applied %d of %d): %w", id, k, applied, target, errors.Join(ctx.Err(), err))
		case <-t.C:
		}
	}
}

// MoveReplica moves shard's replica on node from to node to, which holds
// none (through the metadata group's leader; another node answers
// not-leader naming it). It records the move and returns that placement's
// version; the shard's leader then carries the move out, and the
// placement's next version without the move says it ended.
func (h *Host) MoveReplica(ctx context.Context, shard int, from, to string) (uint64, error) {
	if err := checkNodeNames("MoveReplicaRequest", nodeName{"from", from, maxNodeIDBytes},
		nodeName{"to", to, maxNodeIDBytes}); err != nil {
		return 0, err
	}
	v, err := h.meta.apply(ctx, metaMoveStart, &moveBody{Shard: shard, From: from, To: to})
	if errors.Is(err, engine.ErrNotLeader) {
		return 0, h.metaNotLeader()
	}
	return v, err
}
