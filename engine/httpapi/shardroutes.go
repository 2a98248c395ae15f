package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The HTTP side of a sharded cluster (docs/sharding.md, "Routing"): the
// placement header on every answer, the shard map a client routes by, and
// the admin commands on the placement.

// placementHeader is on every answer of a node of a sharded cluster:
// "<shards> <placement version>". A Client that sees it routes by shard and
// refreshes its map when the version is newer than its map's.
const placementHeader = "X-Heddle-Placement"

// forwardedByHeader is on an answer a node got from another node it
// forwarded the request to (the leader of the request's shard, or of the
// cluster): a client that routed the request there itself learns that its
// map is stale.
const forwardedByHeader = "X-Heddle-Forwarded-By"

// placementSource is a Service of a sharded node (ShardRouter).
type placementSource interface {
	ShardMap() engine.ShardMap
	ShardCount() int
	PlacementVersion() uint64
}

// ShardAdmin is what a Cluster of a sharded node may also implement
// (raftfsm.Host does): the admin commands on the placement, each through
// the metadata group's leader (another node answers with a not-leader
// error naming it, and the Server forwards the request there). Each
// returns the placement version it made.
type ShardAdmin interface {
	SetShardLeader(ctx context.Context, shard int, node string) (uint64, error)
	RebalanceLeaders(ctx context.Context) (uint64, error)
	// MoveReplica records a move of shard's replica on node from to node
	// to; the shard's leader carries it out (docs/sharding.md, "Moving a
	// replica").
	MoveReplica(ctx context.Context, shard int, from, to string) (uint64, error)
	// CancelMove cancels shard's move under way: the shard's leader takes
	// the arriving node out of the group again (or completes a move whose
	// leaving node left already).
	CancelMove(ctx context.Context, shard int) (uint64, error)
}

// MoveReplicaRequest is the body of POST /v1/cluster/shards/{shard}/move.
type MoveReplicaRequest struct {
	From string `json:"from" msgpack:"from"`
	To   string `json:"to" msgpack:"to"`
}

// ShardLeaderRequest is the body of POST /v1/cluster/shards/{shard}/leader.
type ShardLeaderRequest struct {
	Node string `json:"node" msgpack:"node"`
}

// PlacementChange answers the placement's admin commands.
type PlacementChange struct {
	Version uint64 `json:"placement_version" msgpack:"placement_version"`
}

func (s *Server) shardRoutes() {
	s.handle("GET /v1/cluster/shards", RoleReader, s.shardMap)
	s.handle("POST /v1/cluster/shards/{shard}/leader", RoleAdmin, s.setShardLeader)
	s.handle("POST /v1/cluster/shards/rebalance", RoleAdmin, s.rebalanceLeaders)
	s.handle("POST /v1/cluster/shards/{shard}/move", RoleAdmin, s.moveReplica)
	s.handle("POST /v1/cluster/shards/{shard}/move/cancel", RoleAdmin, s.cancelMove)
	s.handle("POST "+pathDeliver, RoleAdmin, s.deliver)
	s.handle("GET "+pathDeliveries, RoleReader, s.deliveries)
}

// notePlacement sets the placement header of a sharded node's answer.
func (s *Server) notePlacement(h http.Header) {
	if ps, ok := s.cfg.Service.(placementSource); ok {
		// Not ShardMap: every answer carries the header, and the map
		// reads each shard leader's address from its state.
		h.Set(placementHeader, strconv.Itoa(ps.ShardCount())+" "+strconv.FormatUint(ps.PlacementVersion(), 10))
	}
}

func (s *Server) shardMap(*call) (any, error) {
	ps, ok := s.cfg.Service.(placementSource)
	if !ok {
		return nil, fmt.Errorf("%w: this node serves no sharded cluster", ErrNoCluster)
	}
	m := ps.ShardMap()
	return &m, nil
}

func (s *Server) shardAdmin() (ShardAdmin, error) {
	if a, ok := s.cfg.Cluster.(ShardAdmin); ok {
		return a, nil
	}
	return nil, fmt.Errorf("%w: this node serves no sharded cluster", ErrNoCluster)
}

// shardParam reads the {shard} of a route's path.
func (c *call) shardParam() (int, error) {
	shard, err := strconv.Atoi(c.r.PathValue("shard"))
	if err != nil || shard < 0 {
		return 0, fmt.Errorf("%w: shard %q in the path is not a shard number", engine.ErrInvalidCommand, c.r.PathValue("shard"))
	}
	return shard, nil
}

func (s *Server) setShardLeader(c *call) (any, error) {
	a, err := s.shardAdmin()
	if err != nil {
		return nil, err
	}
	shard, err := c.shardParam()
	if err != nil {
		return nil, err
	}
	var req ShardLeaderRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.Node == "" {
		return nil, fieldMissing("ShardLeaderRequest", "node")
	}
	v, err := a.SetShardLeader(c.r.Context(), shard, req.Node)
	if err != nil {
		return nil, err
	}
	return &PlacementChange{Version: v}, nil
}

func (s *Server) moveReplica(c *call) (any, error) {
	a, err := s.shardAdmin()
	if err != nil {
		return nil, err
	}
	shard, err := c.shardParam()
	if err != nil {
		return nil, err
	}
	var req MoveReplicaRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	switch {
	case req.From == "":
		return nil, fieldMissing("MoveReplicaRequest", "from")
	case req.To == "":
		return nil, fieldMissing("MoveReplicaRequest", "to")
	}
	v, err := a.MoveReplica(c.r.Context(), shard, req.From, req.To)
	if err != nil {
		return nil, err
	}
	return &PlacementChange{Version: v}, nil
}

func (s *Server) cancelMove(c *call) (any, error) {
	a, err := s.shardAdmin()
	if err != nil {
		return nil, err
	}
	shard, err := c.shardParam()
	if err != nil {
		return nil, err
	}
	v, err := a.CancelMove(c.r.Context(), shard)
	if err != nil {
		return nil, err
	}
	return &PlacementChange{Version: v}, nil
}

func (s *Server) rebalanceLeaders(c *call) (any, error) {
	a, err := s.shardAdmin()
	if err != nil {
		return nil, err
	}
	v, err := a.RebalanceLeaders(c.r.Context())
	if err != nil {
		return nil, err
	}
	return &PlacementChange{Version: v}, nil
}

// A list on a sharded cluster reads every shard at its leader
// (docs/sharding.md, "Visibility"): the shards this node leads in
// process, each of the others through its leader's HTTP API, with the
// caller's own credentials and the shard pinned (?shard=k), which that
// node answers from the one shard alone. A caller authenticated by its
// certificate cannot be spoken for so (a certificate cannot be forwarded):
// it reads the shards this node follows from this node's replicas, as a
// stale read.

// shardPin marks a read of one shard (?shard=k): the router answers it from
// that shard alone, which this node must lead.
type shardPin struct{ shard int }

type shardPinKey struct{}

// withShardPin returns ctx pinned to shard k.
func withShardPin(ctx context.Context, k int) context.Context {
	return context.WithValue(ctx, shardPinKey{}, shardPin{k})
}

// pinnedShard returns the shard ctx is pinned to, if any.
func pinnedShard(ctx context.Context) (int, bool) {
	p, ok := ctx.Value(shardPinKey{}).(shardPin)
	return p.shard, ok
}

type callerAuthKey struct{}

// forwardableAuth is the credentials of the request a context serves, as
// shardContext kept them: its Authorization header, and whether the
// caller may be spoken for with it (not when a certificate authenticated
// it).
type forwardableAuth struct {
	header string
	ok     bool
}

// callerAuth returns the credentials of the request ctx serves.
func callerAuth(ctx context.Context) forwardableAuth {
	v, _ := ctx.Value(callerAuthKey{}).(forwardableAuth)
	return v
}

// shardContext returns r with what a sharded node's reads need in its
// context: the shard a read is pinned to, and the caller's credentials to
// read other shards with.
func (s *Server) shardContext(r *http.Request) (*http.Request, error) {
	if _, ok := s.cfg.Service.(placementSource); !ok {
		return r, nil
	}
	ctx := r.Context()
	if v := r.URL.Query().Get("shard"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 || k >= engine.MaxShards {
			return r, fmt.Errorf("%w: shard=%q is not a shard number", engine.ErrInvalidCommand, v)
		}
		ctx = withShardPin(ctx, k)
	}
	ctx = context.WithValue(ctx, callerAuthKey{}, forwardableAuth{header: r.Header.Get("Authorization"), ok: !callerOf(r).byCert})
	return r.WithContext(ctx), nil
}

// shardReaders are the clients a sharded node reads other shards' leaders
// with, one per list of addresses (a shard's leader, then its other
// replicas).
type shardReaders struct {
	s  *Server
	mu sync.Mutex
	by map[string]*Client
}

// remoteReadTimeout bounds how long a read of one shard at its leader goes
// on trying (the leader moving meanwhile): past it, the caller's own
// client tries the whole read again.
const remoteReadTimeout = 5 * time.Second

// reader returns a client reading a shard at the nodes httpAddrs (its
// leader first; a client goes on to the next address when one does not
// answer, and follows a not-leader answer's hint) with the caller's
// credentials, or nil when there is no address or the caller cannot be
// spoken for.
func (sr *shardReaders) reader(ctx context.Context, httpAddrs []string) *Client {
	if !callerAuth(ctx).ok || len(httpAddrs) == 0 {
		return nil
	}
	key := strings.Join(httpAddrs, " ")
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if c := sr.by[key]; c != nil {
		return c
	}
	addrs := make([]string, len(httpAddrs))
	for i, a := range httpAddrs {
		addrs[i] = sr.s.cfg.ForwardScheme + "://" + a
	}
	c, err := NewClient(ClientConfig{Addrs: addrs, HTTPClient: sr.s.cfg.ForwardClient,
		RetryTimeout: remoteReadTimeout, RequestTimeout: remoteReadTimeout,
		Headers: func(ctx context.Context) (map[string]string, error) {
			h := map[string]string{forwardedHeader: "1"}
			if a := callerAuth(ctx).header; a != "" {
				h["Authorization"] = a
			}
			return h, nil
		}})
	if err != nil {
		return nil
	}
	c.pinned = true // it reads one node; it never routes by shard
	if sr.by == nil {
		sr.by = map[string]*Client{}
	}
	sr.by[key] = c
	return c
}
