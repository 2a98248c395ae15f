package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// Cross-shard delivery between the nodes of a sharded cluster
// (docs/sharding.md, "Cross-shard work"): the leader of a shard delivers
// its outbox entries to the leader of each target shard. When that leader
// is another node, it POSTs the Deliver to pathDeliver there, speaking as
// itself (its node certificate, or the cluster's node token): the route
// takes the admin role, which a node certificate carries, so no workflow's
// client or worker can deliver.

const pathDeliver = "/v1/cluster/deliver"

// proposer is a shard's engine (embedded.Engine): it applies any command.
type proposer interface {
	Propose(ctx context.Context, cmd engine.Command) (engine.Result, error)
}

// Deliver applies d on its target shard's engine on this node, which
// answers not-leader (and the Server forwards) where this node follows it.
func (r *ShardRouter) Deliver(ctx context.Context, d engine.Deliver) (*engine.DeliverResult, error) {
	return route(r, &d, func(svc engine.Service) (*engine.DeliverResult, error) {
		p, err := optional[proposer](svc)
		if err != nil {
			return nil, err
		}
		res, err := p.Propose(ctx, &d)
		if err != nil {
			return nil, err
		}
		out, ok := res.(*engine.DeliverResult)
		if !ok {
			return nil, fmt.Errorf("%w: Deliver returned %T", engine.ErrInvariant, res)
		}
		return out, nil
	})
}

// deliverer is a Service that takes deliveries (ShardRouter).
type deliverer interface {
	Deliver(ctx context.Context, d engine.Deliver) (*engine.DeliverResult, error)
}

func (s *Server) deliver(c *call) (any, error) {
	dl, ok := s.cfg.Service.(deliverer)
	if !ok {
		return nil, fmt.Errorf("%w: this node serves no sharded cluster", ErrNoCluster)
	}
	var d engine.Deliver
	if err := c.decode(&d); err != nil {
		return nil, err
	}
	d.By = identityOf(c.r).Name
	return dl.Deliver(c.r.Context(), d)
}

// NodeSender sends a node's deliveries to the other nodes (raftfsm's
// HostConfig.DeliverTo): over Client, with Scheme ("http" when empty or
// "https") before each node's HTTP address, and Token, when set, as the
// node's bearer token (a cluster without node certificates). With mutual
// TLS, Client carries the node's certificate and Token is empty. A nil
// Client is one over NewTransport(nil).
type NodeSender struct {
	Client *http.Client
	Scheme string
	Token  string
}

// defaultNodeClient is the NodeSender's client when it names none.
var defaultNodeClient = &http.Client{Transport: NewTransport(nil)}

// maxDeliverAnswerBytes bounds the answer to a delivery: a result is at
// most a payload and its envelope.
const maxDeliverAnswerBytes = 2 << 20

// Deliver POSTs d to the node at httpAddr and returns its answer, or the
// error it answered with (a *RemoteError matching the engine's sentinels).
func (n NodeSender) Deliver(ctx context.Context, httpAddr string, d *engine.Deliver) (*engine.DeliverResult, error) {
	scheme := n.Scheme
	if scheme == "" {
		scheme = "http"
	}
	base := httpAddr
	if !strings.Contains(base, "://") {
		base = scheme + "://" + base
	}
	body, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+pathDeliver, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if n.Token != "" {
		req.Header.Set("Authorization", "Bearer "+n.Token)
	}
	client := n.Client
	if client == nil {
		client = defaultNodeClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // the answer is read whole below
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDeliverAnswerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDeliverAnswerBytes {
		return nil, fmt.Errorf("httpapi: the answer to a delivery is longer than %d bytes", maxDeliverAnswerBytes)
	}
	if resp.StatusCode != http.StatusOK {
		re := &RemoteError{Status: resp.StatusCode}
		if json.Unmarshal(b, &re.Body) != nil {
			re.Body = ErrorBody{Name: nameInternal, Message: fmt.Sprintf("HTTP %d from %s", resp.StatusCode, httpAddr)}
		}
		return nil, re
	}
	out := new(engine.DeliverResult)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("httpapi: the answer to a delivery from %s: %w", httpAddr, err)
	}
	return out, nil
}

// DeliveriesReport answers GET /v1/cluster/deliveries: what the outboxes
// of the cluster's shards have pending, per source and target shard
// (Stale: read from a replica that does not lead the shard and may trail
// its leader), and the shards the node could read in no way.
type DeliveriesReport struct {
	Backlog []engine.DeliveryBacklog `json:"backlog" msgpack:"backlog"`
	Unread  []int                    `json:"unread_shards,omitempty" msgpack:"unread_shards,omitempty"`
}

// backlogReader is a shard's engine that reads its outbox (embedded.Engine).
type backlogReader interface {
	DeliveryBacklog(ctx context.Context, source int) ([]engine.DeliveryBacklog, error)
}

// DeliveryBacklog reads the outbox of every shard of the cluster: from
// this node's replica where it leads the shard; else at the shard's
// leader, speaking for the caller (as the reads of a list are made);
// else, when the leader cannot be asked or does not answer, from this
// node's replica, marked stale. A shard read none of these ways is listed
// in Unread. Pinned to one shard (?shard=k, how another node asks this
// one as the shard's leader), it reads that shard's replica here alone.
func (r *ShardRouter) DeliveryBacklog(ctx context.Context) (*DeliveriesReport, error) {
	if k, ok := pinnedShard(ctx); ok {
		if k >= r.count {
			return nil, fmt.Errorf("%w: shard %d is not one of the cluster's %d", engine.ErrInvalidCommand, k, r.count)
		}
		rows, err := r.localBacklog(ctx, k)
		if err != nil {
			return nil, err
		}
		if rows == nil {
			id, httpAddr := r.set.ShardLeader(k)
			return nil, &engine.NotLeaderError{LeaderID: id, LeaderHTTP: httpAddr}
		}
		return &DeliveriesReport{Backlog: rows}, nil
	}
	out := &DeliveriesReport{Backlog: []engine.DeliveryBacklog{}}
	for k := range r.count {
		if r.set.ShardEngine(k) == nil || !r.set.LeadsShard(k) {
			if rows, ok := r.leaderBacklog(ctx, k); ok {
				out.Backlog = append(out.Backlog, rows...)
				continue
			}
		}
		rows, err := r.localBacklog(ctx, k)
		if err != nil {
			return nil, err
		}
		if rows == nil {
			out.Unread = append(out.Unread, k)
			continue
		}
		out.Backlog = append(out.Backlog, rows...)
	}
	return out, nil
}

// localBacklog reads shard k's outbox from this node's replica, marked
// stale unless this node leads the shard; nil, without an error, when the
// node holds no replica of k.
func (r *ShardRouter) localBacklog(ctx context.Context, k int) ([]engine.DeliveryBacklog, error) {
	svc := r.set.ShardEngine(k)
	if svc == nil {
		return nil, nil
	}
	br, err := optional[backlogReader](svc)
	if err != nil {
		return nil, err
	}
	rows, err := br.DeliveryBacklog(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("shard %d: %w", k, err)
	}
	stale := !r.set.LeadsShard(k)
	for i := range rows {
		rows[i].Stale = stale
	}
	if rows == nil {
		rows = []engine.DeliveryBacklog{}
	}
	return rows, nil
}

// leaderBacklog asks shard k's leader for the shard's outbox, speaking for
// the caller; false when it cannot be asked (no leader known, or a caller
// authenticated by its certificate) or did not answer.
func (r *ShardRouter) leaderBacklog(ctx context.Context, k int) ([]engine.DeliveryBacklog, bool) {
	c := r.remoteAt(ctx, k)
	if c == nil {
		return nil, false
	}
	rep, err := c.shardBacklog(ctx, k)
	if err != nil {
		return nil, false
	}
	rows := []engine.DeliveryBacklog{}
	for _, b := range rep.Backlog {
		if b.Source == k { // what the leader answered for its shard alone
			rows = append(rows, b)
		}
	}
	return rows, true
}

func (s *Server) deliveries(c *call) (any, error) {
	sr, ok := s.cfg.Service.(*ShardRouter)
	if !ok {
		return nil, fmt.Errorf("%w: this node serves no sharded cluster", ErrNoCluster)
	}
	return sr.DeliveryBacklog(c.r.Context())
}

// DeliveryBacklog asks the node the client prefers what the outboxes of
// the cluster's shards have pending (GET /v1/cluster/deliveries).
func (c *Client) DeliveryBacklog(ctx context.Context) (*DeliveriesReport, error) {
	out := new(DeliveriesReport)
	err := c.do(ctx, request{method: http.MethodGet, path: pathDeliveries, out: out, noRoute: true})
	return out, err
}

// shardBacklog asks the node the client prefers for shard k's outbox
// (GET /v1/cluster/deliveries?shard=k).
func (c *Client) shardBacklog(ctx context.Context, k int) (*DeliveriesReport, error) {
	out := new(DeliveriesReport)
	err := c.do(ctx, request{method: http.MethodGet, path: pathDeliveries, query: url.Values{"shard": {strconv.Itoa(k)}},
		out: out, noRoute: true})
	return out, err
}

const pathDeliveries = "/v1/cluster/deliveries"
