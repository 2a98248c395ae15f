package raftfsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/msgpackscan"
)

// The metadata group (group 0 of a sharded node) replicates the cluster's
// Placement. Its state is small and lives in memory; the Raft log and its
// snapshots are its durable record, and a node also keeps the newest
// placement it applied in its directory (host.go), so that it can open its
// shards before the group has a leader.

// metaEntryVersion is the first byte of a metadata entry.
const metaEntryVersion = 1

type metaKind byte

const (
	// metaCreate writes the first placement; a later one is ignored (every
	// node's first leadership proposes the one it computed).
	metaCreate metaKind = 1
	// metaSetLeader sets one shard's desired leader.
	metaSetLeader metaKind = 2
	// metaRebalance sets every shard's desired leader back to the spread
	// NewPlacement makes.
	metaRebalance metaKind = 3
	// metaMoveStart records the intent of a move of a shard's replica
	// (docs/sharding.md, "Moving a replica"): the shard's Move is set.
	metaMoveStart metaKind = 4
	// metaMoveDone ends a move the shard's group carried out: the arriving
	// node replaces the leaving one among the shard's replicas.
	metaMoveDone metaKind = 5
	// metaAddNode adds a node to the cluster's nodes, holding no replica
	// yet; the metadata group's leader then adds it to the group.
	metaAddNode metaKind = 6
	// metaRemoveNode takes a node that holds no replica out of the
	// cluster's nodes; the metadata group's leader then removes it from
	// the group.
	metaRemoveNode metaKind = 7
	// metaMoveCancel asks to cancel the shard's move under way (its
	// body's From and To are empty): the move's Cancel is set, and the
	// shard's leader undoes what the move did.
	metaMoveCancel metaKind = 8
	// metaMoveCancelled ends a cancelled move with the shard's replicas as
	// they were: the shard's leader took the arriving node out of the
	// group first.
	metaMoveCancelled metaKind = 9
)

// removeNodeBody is the body of metaRemoveNode.
type removeNodeBody struct {
	ID string `msgpack:"id"`
}

// maxMetaEntryBytes bounds a metadata entry: a create carries a placement.
const maxMetaEntryBytes = maxPlacementBytes + 64

type setLeaderBody struct {
	Shard  int    `msgpack:"s"`
	Leader string `msgpack:"l"`
}

// moveBody is the body of metaMoveStart and metaMoveDone.
type moveBody struct {
	Shard int    `msgpack:"s"`
	From  string `msgpack:"f"`
	To    string `msgpack:"t"`
}

func encodeMetaEntry(k metaKind, body any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(metaEntryVersion)
	buf.WriteByte(byte(k))
	switch b := body.(type) {
	case *Placement:
		pb, err := encodePlacement(b)
		if err != nil {
			return nil, err
		}
		buf.Write(pb)
	default:
		if err := msgpack.NewEncoder(&buf).Encode(body); err != nil {
			return nil, fmt.Errorf("raftfsm: encoding a metadata entry: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// metaEntry is one decoded metadata entry.
type metaEntry struct {
	kind      metaKind
	placement *Placement      // metaCreate
	setLeader *setLeaderBody  // metaSetLeader
	move      *moveBody       // metaMoveStart, metaMoveDone, metaMoveCancel, metaMoveCancelled
	addNode   *PlacementNode  // metaAddNode
	remove    *removeNodeBody // metaRemoveNode
}

// decodeMetaEntry parses a metadata log entry, bounded like decodeEntry.
func decodeMetaEntry(b []byte) (metaEntry, error) {
	var e metaEntry
	switch {
	case len(b) < 2 || len(b) > maxMetaEntryBytes:
		return e, &EntryError{Reason: fmt.Sprintf("metadata entry of %d bytes, not in [2, %d]", len(b), maxMetaEntryBytes)}
	case b[0] != metaEntryVersion:
		return e, &EntryError{Reason: fmt.Sprintf("metadata entry version %d, this node reads %d", b[0], metaEntryVersion)}
	}
	e.kind = metaKind(b[1])
	body := b[2:]
	switch e.kind {
	case metaCreate:
		p, err := decodePlacement(body)
		if err != nil {
			return e, &EntryError{Reason: "metadata create: " + err.Error()}
		}
		e.placement = p
	case metaSetLeader:
		if _, err := msgpackscan.Check(body, msgpackscan.Limits{MaxDepth: 1, MaxValues: 5}); err != nil {
			return e, &EntryError{Reason: "metadata set-leader: " + err.Error()}
		}
		var s setLeaderBody
		if err := msgpack.Unmarshal(body, &s); err != nil {
			return e, &EntryError{Reason: "metadata set-leader: " + err.Error()}
		}
		e.setLeader = &s
	case metaRebalance:
		if _, err := msgpackscan.Check(body, msgpackscan.Limits{MaxDepth: 1, MaxValues: 1}); err != nil {
			return e, &EntryError{Reason: "metadata rebalance: " + err.Error()}
		}
	case metaMoveStart, metaMoveDone, metaMoveCancel, metaMoveCancelled:
		if len(body) > 2*maxNodeIDBytes+32 {
			return e, &EntryError{Reason: fmt.Sprintf("metadata move of %d bytes, more than %d", len(body), 2*maxNodeIDBytes+32)}
		}
		if _, err := msgpackscan.Check(body, msgpackscan.Limits{MaxDepth: 1, MaxValues: 7}); err != nil {
			return e, &EntryError{Reason: "metadata move: " + err.Error()}
		}
		var m moveBody
		if err := msgpack.Unmarshal(body, &m); err != nil {
			return e, &EntryError{Reason: "metadata move: " + err.Error()}
		}
		e.move = &m
	case metaAddNode:
		if max := maxNodeIDBytes + 2*maxAddrBytes + 32; len(body) > max {
			return e, &EntryError{Reason: fmt.Sprintf("metadata add-node of %d bytes, more than %d", len(body), max)}
		}
		if _, err := msgpackscan.Check(body, msgpackscan.Limits{MaxDepth: 1, MaxValues: 7}); err != nil {
			return e, &EntryError{Reason: "metadata add-node: " + err.Error()}
		}
		var n PlacementNode
		if err := msgpack.Unmarshal(body, &n); err != nil {
			return e, &EntryError{Reason: "metadata add-node: " + err.Error()}
		}
		e.addNode = &n
	case metaRemoveNode:
		if max := maxNodeIDBytes + 16; len(body) > max {
			return e, &EntryError{Reason: fmt.Sprintf("metadata remove-node of %d bytes, more than %d", len(body), max)}
		}
		if _, err := msgpackscan.Check(body, msgpackscan.Limits{MaxDepth: 1, MaxValues: 3}); err != nil {
			return e, &EntryError{Reason: "metadata remove-node: " + err.Error()}
		}
		var r removeNodeBody
		if err := msgpack.Unmarshal(body, &r); err != nil {
			return e, &EntryError{Reason: "metadata remove-node: " + err.Error()}
		}
		e.remove = &r
	default:
		return e, &EntryError{Reason: fmt.Sprintf("unknown metadata entry kind %d", b[1])}
	}
	return e, nil
}

// metaFSM is the metadata group's state machine: the placement.
type metaFSM struct {
	mu sync.RWMutex
	p  *Placement // nil until created
	// onChange is called (on Raft's applying goroutine) with each new
	// placement; it must not block for long.
	onChange func(*Placement)
}

var _ raft.FSM = (*metaFSM)(nil)

func (f *metaFSM) placement() *Placement {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.p
}

// metaOutcome answers an applied metadata entry.
type metaOutcome struct {
	version uint64
	err     error
}

// Apply implements raft.FSM.
func (f *metaFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	e, err := decodeMetaEntry(l.Data)
	if err != nil {
		var ee *EntryError
		if errors.As(err, &ee) {
			ee.Index = l.Index
		}
		return &metaOutcome{err: err}
	}
	f.mu.Lock()
	next, err := applyMeta(f.p, e)
	changed := err == nil && next != f.p
	if changed {
		f.p = next
	}
	f.mu.Unlock()
	if err != nil {
		return &metaOutcome{err: err}
	}
	if changed && f.onChange != nil {
		f.onChange(next)
	}
	return &metaOutcome{version: next.Version}
}

// applyMeta returns the placement after e, or cur when e changes nothing.
// It never modifies cur.
func applyMeta(cur *Placement, e metaEntry) (*Placement, error) {
	if e.kind == metaCreate {
		if cur != nil {
			return cur, nil
		}
		return e.placement, nil
	}
	if cur == nil {
		return nil, fmt.Errorf("%w: the cluster's placement is not written yet", engine.ErrInvalidCommand)
	}
	next := *cur
	next.Groups = append([]ShardPlacement(nil), cur.Groups...)
	switch e.kind {
	case metaSetLeader:
		s := e.setLeader
		if s.Shard < 0 || s.Shard >= cur.Shards {
			return nil, fmt.Errorf("%w: shard %d is not in [0, %d)", engine.ErrInvalidCommand, s.Shard, cur.Shards)
		}
		g := next.Groups[s.Shard]
		ok := false
		for _, r := range g.Replicas {
			ok = ok || r == s.Leader
		}
		if !ok {
			return nil, fmt.Errorf("%w: node %q holds no replica of shard %d (replicas %v)", engine.ErrInvalidCommand, s.Leader, s.Shard, g.Replicas)
		}
		if g.Leader == s.Leader {
			return cur, nil
		}
		g.Leader = s.Leader
		next.Groups[s.Shard] = g
	case metaRebalance:
		for k := range next.Groups {
			g := next.Groups[k]
			g.Leader = g.Replicas[0]
			next.Groups[k] = g
		}
	case metaMoveStart:
		m := e.move
		if err := checkMove(cur, m); err != nil {
			return nil, err
		}
		g := next.Groups[m.Shard]
		if g.Move != nil {
			if *g.Move == (ShardMove{From: m.From, To: m.To}) {
				return cur, nil // the same request again
			}
			return nil, fmt.Errorf("%w: shard %d is moving a replica from %s to %s already; a shard moves one replica at a time",
				engine.ErrInvalidCommand, m.Shard, g.Move.From, g.Move.To)
		}
		if !slices.Contains(g.Replicas, m.From) {
			return nil, fmt.Errorf("%w: node %q holds no replica of shard %d (replicas %v)", engine.ErrInvalidCommand, m.From, m.Shard, g.Replicas)
		}
		if slices.Contains(g.Replicas, m.To) {
			return nil, fmt.Errorf("%w: node %q holds a replica of shard %d already (replicas %v)", engine.ErrInvalidCommand, m.To, m.Shard, g.Replicas)
		}
		g.Move = &ShardMove{From: m.From, To: m.To}
		next.Groups[m.Shard] = g
	case metaAddNode:
		n := *e.addNode
		if old, ok := cur.node(n.ID); ok {
			if old == n {
				return cur, nil // the same request again
			}
			return nil, fmt.Errorf("%w: node %q is one of the cluster's nodes already, at %s", engine.ErrInvalidCommand, n.ID, old.RaftAddr)
		}
		for _, o := range cur.Nodes {
			if o.RaftAddr == n.RaftAddr {
				return nil, fmt.Errorf("%w: node %q has the Raft address %s already", engine.ErrInvalidCommand, o.ID, n.RaftAddr)
			}
		}
		next.Nodes = append(slices.Clone(cur.Nodes), n)
		if err := next.Validate(); err != nil {
			return nil, fmt.Errorf("%w: adding node %q: %v", engine.ErrInvalidCommand, n.ID, err)
		}
	case metaRemoveNode:
		id := e.remove.ID
		if _, ok := cur.node(id); !ok {
			return nil, fmt.Errorf("%w: node %q is not one of the cluster's nodes %v (removed already?)", engine.ErrInvalidCommand, id, nodeIDs(cur))
		}
		var held []int
		for k, g := range cur.Groups {
			if slices.Contains(g.Replicas, id) || g.Move != nil && g.Move.To == id {
				held = append(held, k)
			}
		}
		if len(held) > 0 {
			return nil, fmt.Errorf("%w: node %q holds replicas of shards %v (or receives one): move them to other nodes first "+
				"(heddle cluster move-shard SHARD %s TO)", engine.ErrInvalidCommand, id, held, id)
		}
		next.Nodes = slices.DeleteFunc(slices.Clone(cur.Nodes), func(n PlacementNode) bool { return n.ID == id })
		if err := next.Validate(); err != nil {
			return nil, fmt.Errorf("%w: removing node %q: %v", engine.ErrInvalidCommand, id, err)
		}
	case metaMoveDone:
		m := e.move
		if err := checkMove(cur, m); err != nil {
			return nil, err
		}
		g := next.Groups[m.Shard]
		if g.Move == nil || g.Move.From != m.From || g.Move.To != m.To {
			return cur, nil // ended already: a driver's retry
		}
		// A move whose cancel came after the leaving node left the group
		// ends as a move: the group is what the move made it.
		g.Replicas = slices.Clone(g.Replicas)
		g.Replicas[slices.Index(g.Replicas, m.From)] = m.To
		if g.Leader == m.From {
			g.Leader = m.To // the desired leader moves with its replica
		}
		g.Move = nil
		g.Moves++
		next.Groups[m.Shard] = g
	case metaMoveCancel:
		m := e.move
		if m.Shard < 0 || m.Shard >= cur.Shards {
			return nil, fmt.Errorf("%w: shard %d is not in [0, %d)", engine.ErrInvalidCommand, m.Shard, cur.Shards)
		}
		g := next.Groups[m.Shard]
		switch {
		case g.Move == nil:
			return nil, fmt.Errorf("%w: shard %d has no move under way to cancel (it ended, or was cancelled)", engine.ErrInvalidCommand, m.Shard)
		case g.Move.Cancel:
			return cur, nil // asked already
		}
		mv := *g.Move
		mv.Cancel = true
		g.Move = &mv
		next.Groups[m.Shard] = g
	case metaMoveCancelled:
		m := e.move
		if err := checkMove(cur, m); err != nil {
			return nil, err
		}
		g := next.Groups[m.Shard]
		if g.Move == nil || *g.Move != (ShardMove{From: m.From, To: m.To, Cancel: true}) {
			return cur, nil // ended already: a driver's retry
		}
		g.Move = nil
		next.Groups[m.Shard] = g
	}
	next.Version++
	return &next, nil
}

// checkMove checks what a move names against the placement: a shard, two
// different nodes.
func checkMove(p *Placement, m *moveBody) error {
	switch {
	case m.Shard < 0 || m.Shard >= p.Shards:
		return fmt.Errorf("%w: shard %d is not in [0, %d)", engine.ErrInvalidCommand, m.Shard, p.Shards)
	case m.From == m.To:
		return fmt.Errorf("%w: a replica moves from %q to the same node", engine.ErrInvalidCommand, m.From)
	}
	for _, id := range []string{m.From, m.To} {
		if _, ok := p.node(id); !ok {
			return fmt.Errorf("%w: node %q is not one of the cluster's nodes %v", engine.ErrInvalidCommand, id, nodeIDs(p))
		}
	}
	return nil
}

// Snapshot implements raft.FSM: the placement's bytes (none before it is
// created).
func (f *metaFSM) Snapshot() (raft.FSMSnapshot, error) {
	p := f.placement()
	if p == nil {
		return metaSnapshot(nil), nil
	}
	b, err := encodePlacement(p)
	if err != nil {
		return nil, err
	}
	return metaSnapshot(b), nil
}

// Restore implements raft.FSM.
func (f *metaFSM) Restore(rc io.ReadCloser) error {
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(io.LimitReader(rc, maxPlacementBytes+1))
	if err != nil {
		return fmt.Errorf("raftfsm: reading a metadata snapshot: %w", err)
	}
	var p *Placement
	if len(b) > 0 {
		if p, err = decodePlacement(b); err != nil {
			return err
		}
	}
	f.mu.Lock()
	f.p = p
	f.mu.Unlock()
	if p != nil && f.onChange != nil {
		f.onChange(p)
	}
	return nil
}

type metaSnapshot []byte

func (s metaSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		return errors.Join(err, sink.Cancel())
	}
	return sink.Close()
}

func (metaSnapshot) Release() {}

// metaGroup is the metadata group's Raft member on this node.
type metaGroup struct {
	raft      *raft.Raft
	fsm       *metaFSM
	store     raftStore // the group's view of the node log
	transport *raft.NetworkTransport
	notify    chan bool
	applyTO   time.Duration
}

// openMeta opens the metadata group over layer, its log in log and its
// snapshots in dir, bootstrapping it with p's nodes when it holds no state.
func openMeta(cfg Config, dir string, log *nodeLog, layer raft.StreamLayer, p *Placement, fsm *metaFSM) (_ *metaGroup, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	g := &metaGroup{fsm: fsm, notify: make(chan bool, 16), applyTO: cfg.ApplyTimeout}
	defer func() {
		if err != nil {
			if g.transport != nil {
				err = errors.Join(err, g.transport.Close())
			}
			if g.store != nil {
				err = errors.Join(err, g.store.Close())
			}
		}
	}()
	g.store = log.group(metaGroupNumber)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclogger(cfg, "meta-snap"))
	if err != nil {
		return nil, err
	}
	g.transport = networkTransport(cfg, layer)
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = 64 // the state is one small record
	rc.TrailingLogs = 64
	rc.NotifyCh = g.notify
	rc.Logger = hclogger(cfg, "meta-raft")
	has, err := raft.HasExistingState(g.store, g.store, snaps)
	if err != nil {
		return nil, err
	}
	if g.raft, err = raft.NewRaft(rc, fsm, g.store, g.store, snaps, g.transport); err != nil {
		return nil, fmt.Errorf("raftfsm: starting the metadata group: %w", err)
	}
	// A node joining a cluster (its placement's version 0, see
	// HostConfig.Join) does not start the group: its leader adds it.
	if !has && p.Version > 0 {
		var servers []raft.Server
		for i, n := range p.Nodes {
			s := raft.Server{ID: raft.ServerID(n.ID), Address: raft.ServerAddress(n.RaftAddr), Suffrage: raft.Voter}
			if i >= p.metaVoters() {
				s.Suffrage = raft.Nonvoter
			}
			servers = append(servers, s)
		}
		if err := g.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return nil, errors.Join(fmt.Errorf("raftfsm: bootstrapping the metadata group: %w", err), g.raft.Shutdown().Error())
		}
	}
	return g, nil
}

// apply proposes a metadata entry through this node, which must lead the
// group, and returns the placement version it made.
func (g *metaGroup) apply(ctx context.Context, k metaKind, body any) (uint64, error) {
	if g.raft.State() != raft.Leader {
		return 0, g.notLeader()
	}
	data, err := encodeMetaEntry(k, body)
	if err != nil {
		return 0, err
	}
	f := g.raft.Apply(data, g.applyTO)
	if err := futureError(ctx, f); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return 0, fmt.Errorf("%w: the metadata group's leadership moved while the change was proposed", engine.ErrUnknownOutcome)
		}
		return 0, err
	}
	out, _ := f.Response().(*metaOutcome)
	if out == nil {
		return 0, errors.New("raftfsm: the metadata group answered nothing")
	}
	return out.version, out.err
}

// notLeader is the error of a metadata change asked of a follower.
func (g *metaGroup) notLeader() error {
	_, id := g.raft.LeaderWithID()
	return &engine.NotLeaderError{LeaderID: string(id)}
}

func (g *metaGroup) close() error {
	err := g.raft.Shutdown().Error()
	g.transport.CloseStreams() // as Node.Close: the pool's connections
	return errors.Join(err, g.transport.Close(), g.store.Close())
}
