package raftfsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/msgpackscan"
)

// Placement is where a sharded cluster's shards live (docs/sharding.md,
// "Placement"): the nodes, and for each shard the nodes holding its
// replicas and the one that should lead it. The metadata group replicates
// it; every node also keeps the newest it applied in its directory.
type Placement struct {
	// Version increases with every change.
	Version uint64 `msgpack:"v"`
	// Shards is the shard count S, fixed when the cluster was created.
	Shards int `msgpack:"s"`
	// Replicas is R, the replicas of each shard.
	Replicas int `msgpack:"r"`
	// Nodes are the cluster's nodes, in the order placement counts them.
	Nodes []PlacementNode `msgpack:"n"`
	// Groups holds each shard's replicas and desired leader, by shard.
	Groups []ShardPlacement `msgpack:"g"`
}

// PlacementNode is one node of a sharded cluster.
type PlacementNode struct {
	ID       string `msgpack:"id"`
	RaftAddr string `msgpack:"ra"`
	HTTPAddr string `msgpack:"ha,omitempty"`
}

// ShardPlacement is one shard's replicas (node ids) and desired leader.
type ShardPlacement struct {
	Replicas []string `msgpack:"r"`
	Leader   string   `msgpack:"l"`
	// Move, when set, is a move of one of the shard's replicas under way
	// (docs/sharding.md, "Moving a replica"): Replicas still names the
	// leaving node, and the arriving node holds a replica too, which joins
	// the shard's Raft group. The move's last step clears it.
	Move *ShardMove `msgpack:"m,omitempty"`
	// Moves counts the moves of the shard's replicas that ended. A node
	// bootstraps a shard's group only while it is 0: once a replica moved,
	// a replica with no state is a new member that the group adds, never
	// the start of a group.
	Moves uint32 `msgpack:"mv,omitempty"`
}

// ShardMove is a move of one replica of a shard from one node to another.
type ShardMove struct {
	From string `msgpack:"f"`
	To   string `msgpack:"t"`
	// Cancel: an operator asked to cancel the move (metaMoveCancel); the
	// shard's leader takes the arriving node out of the group and ends
	// the move with the replicas as they were (metaMoveCancelled), or,
	// when the leaving node is out of the group already, completes it.
	Cancel bool `msgpack:"c,omitempty"`
}

// holds reports whether node id holds a replica of the shard, counting
// the node a move brings it to.
func (g *ShardPlacement) holds(id string) bool {
	return slices.Contains(g.Replicas, id) || (g.Move != nil && g.Move.To == id)
}

// Bounds of a placement, which also bound what its decoder accepts.
const (
	// MaxNodes is the most nodes a sharded cluster may have.
	MaxNodes = 64
	// MaxReplicas is the most replicas of one shard.
	MaxReplicas = 7
	// maxNodeIDBytes and maxAddrBytes bound a node's id and addresses.
	maxNodeIDBytes = 128
	maxAddrBytes   = 256
	// maxPlacementBytes bounds an encoded placement: 4096 shards of 7
	// replicas with the longest ids fit with room to spare.
	maxPlacementBytes = 8 << 20
	// maxPlacementDepth: a map holding arrays of maps holding an array.
	maxPlacementDepth = 4
	// placementFormat is the first byte of an encoded placement.
	placementFormat = 1
)

// ErrPlacement: a placement is invalid, or its bytes did not decode.
var ErrPlacement = errors.New("raftfsm: bad placement")

// NewPlacement places shards replicas of each of shards shards on nodes
// (docs/sharding.md): shard k on nodes k, k+1, …, k+replicas-1 (mod N),
// led by node k mod N, so that leaders spread evenly. replicas 0 means
// min(3, len(nodes)). Every node computes the same placement from the same
// arguments.
func NewPlacement(nodes []PlacementNode, shards, replicas int) (Placement, error) {
	if replicas == 0 {
		replicas = min(3, len(nodes))
	}
	p := Placement{Version: 1, Shards: shards, Replicas: replicas, Nodes: slices.Clone(nodes)}
	if len(nodes) > 0 && replicas >= 1 && replicas <= len(nodes) && shards >= 1 && shards <= engine.MaxShards {
		p.Groups = make([]ShardPlacement, shards)
		for k := range p.Groups {
			g := &p.Groups[k]
			for i := range replicas {
				g.Replicas = append(g.Replicas, nodes[(k+i)%len(nodes)].ID)
			}
			g.Leader = g.Replicas[0]
		}
	}
	return p, p.Validate()
}

// Validate reports the first thing wrong with p.
func (p *Placement) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrPlacement}, a...)...)
	}
	switch {
	case p.Shards < 1 || p.Shards > engine.MaxShards:
		return bad("%d shards, not in [1, %d]", p.Shards, engine.MaxShards)
	case len(p.Nodes) < 1 || len(p.Nodes) > MaxNodes:
		return bad("%d nodes, not in [1, %d]", len(p.Nodes), MaxNodes)
	case p.Replicas < 1 || p.Replicas > min(len(p.Nodes), MaxReplicas):
		return bad("%d replicas of each shard, not in [1, %d] with %d nodes", p.Replicas, min(len(p.Nodes), MaxReplicas), len(p.Nodes))
	case len(p.Groups) != p.Shards:
		return bad("%d shard entries for %d shards", len(p.Groups), p.Shards)
	case p.Version == 0:
		return bad("version 0")
	}
	ids := make(map[string]bool, len(p.Nodes))
	for i, n := range p.Nodes {
		switch {
		case n.ID == "" || len(n.ID) > maxNodeIDBytes:
			return bad("node %d has an id of %d bytes, not in [1, %d]", i, len(n.ID), maxNodeIDBytes)
		case ids[n.ID]:
			return bad("node id %q appears twice", n.ID)
		case n.RaftAddr == "" || len(n.RaftAddr) > maxAddrBytes || len(n.HTTPAddr) > maxAddrBytes:
			return bad("node %q needs a Raft address, and addresses of at most %d bytes", n.ID, maxAddrBytes)
		}
		ids[n.ID] = true
	}
	for k, g := range p.Groups {
		if len(g.Replicas) != p.Replicas {
			return bad("shard %d has %d replicas, want %d", k, len(g.Replicas), p.Replicas)
		}
		for i, r := range g.Replicas {
			if !ids[r] {
				return bad("shard %d has a replica on %q, which is not a node", k, r)
			}
			if slices.Contains(g.Replicas[:i], r) {
				return bad("shard %d has two replicas on %q", k, r)
			}
		}
		if !slices.Contains(g.Replicas, g.Leader) {
			return bad("shard %d's desired leader %q holds none of its replicas", k, g.Leader)
		}
		if m := g.Move; m != nil {
			switch {
			case !slices.Contains(g.Replicas, m.From):
				return bad("shard %d moves a replica from %q, which holds none", k, m.From)
			case !ids[m.To]:
				return bad("shard %d moves a replica to %q, which is not a node", k, m.To)
			case slices.Contains(g.Replicas, m.To):
				return bad("shard %d moves a replica to %q, which holds one already", k, m.To)
			}
		}
	}
	return nil
}

// node returns the node of id, if any.
func (p *Placement) node(id string) (PlacementNode, bool) {
	for _, n := range p.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return PlacementNode{}, false
}

// ShardsOf returns the shards with a replica on node id, in order, a
// replica a move brings there included.
func (p *Placement) ShardsOf(id string) []int {
	var out []int
	for k, g := range p.Groups {
		if g.holds(id) {
			out = append(out, k)
		}
	}
	return out
}

// metaVoters are the nodes that vote in the metadata group: the first
// five. The others follow it as non-voters.
func (p *Placement) metaVoters() int { return min(len(p.Nodes), 5) }

// encodePlacement returns p's bytes: a format byte, then msgpack.
func encodePlacement(p *Placement) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(placementFormat)
	if err := msgpack.NewEncoder(&buf).Encode(p); err != nil {
		return nil, fmt.Errorf("raftfsm: encoding a placement: %w", err)
	}
	return buf.Bytes(), nil
}

// decodePlacement reads a placement from outside bytes (the metadata
// group's log and snapshots, a node's placement file) and validates it.
// Its size, depth and counts are bounded before msgpack sees them, so it
// never allocates much more than len(b).
func decodePlacement(b []byte) (*Placement, error) {
	switch {
	case len(b) < 2 || len(b) > maxPlacementBytes:
		return nil, fmt.Errorf("%w: %d bytes, not in [2, %d]", ErrPlacement, len(b), maxPlacementBytes)
	case b[0] != placementFormat:
		return nil, fmt.Errorf("%w: format %d, this node reads %d", ErrPlacement, b[0], placementFormat)
	}
	if _, err := msgpackscan.Check(b[1:], msgpackscan.Limits{MaxDepth: maxPlacementDepth,
		MaxValues: 64 + 16*MaxNodes + (16+MaxReplicas)*engine.MaxShards}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlacement, err)
	}
	p := new(Placement)
	if err := msgpack.Unmarshal(b[1:], p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlacement, err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// equalLayout reports whether p and q place the same nodes and replicas
// (their desired leaders and versions may differ).
func (p *Placement) equalLayout(q *Placement) bool {
	if p.Shards != q.Shards || p.Replicas != q.Replicas || !slices.Equal(p.Nodes, q.Nodes) {
		return false
	}
	for k := range p.Groups {
		a, b := p.Groups[k], q.Groups[k]
		if !slices.Equal(a.Replicas, b.Replicas) || a.Moves != b.Moves || (a.Move == nil) != (b.Move == nil) ||
			(a.Move != nil && *a.Move != *b.Move) {
			return false
		}
	}
	return true
}
