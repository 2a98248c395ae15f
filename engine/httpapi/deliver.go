package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
// TLS, Client carries the node's certificate and Token is empty.
type NodeSender struct {
	Client *http.Client
	Scheme string
	Token  string
}

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
		client = http.DefaultClient
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

// DeliveriesReport answers GET /v1/cluster/deliveries: what the outboxes of
// the shards this node holds a replica of have pending, per source and
// target shard (Stale: read from this node's replica, which does not lead
// the shard and may trail its leader), and the shards it holds none of.
type DeliveriesReport struct {
	Backlog []engine.DeliveryBacklog `json:"backlog" msgpack:"backlog"`
	Unread  []int                    `json:"unread_shards,omitempty" msgpack:"unread_shards,omitempty"`
}

// backlogReader is a shard's engine that reads its outbox (embedded.Engine).
type backlogReader interface {
	DeliveryBacklog(ctx context.Context, source int) ([]engine.DeliveryBacklog, error)
}

// DeliveryBacklog reads the outbox of every shard this node holds a
// replica of.
func (r *ShardRouter) DeliveryBacklog(ctx context.Context) (*DeliveriesReport, error) {
	out := &DeliveriesReport{Backlog: []engine.DeliveryBacklog{}}
	for k := 0; k < r.count; k++ {
		svc := r.set.ShardEngine(k)
		if svc == nil {
			out.Unread = append(out.Unread, k)
			continue
		}
		br, err := optional[backlogReader](svc)
		if err != nil {
			return nil, err
		}
		b, err := br.DeliveryBacklog(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", k, err)
		}
		stale := !r.set.LeadsShard(k)
		for i := range b {
			b[i].Stale = stale
		}
		out.Backlog = append(out.Backlog, b...)
	}
	return out, nil
}

func (s *Server) deliveries(c *call) (any, error) {
	sr, ok := s.cfg.Service.(*ShardRouter)
	if !ok {
		return nil, fmt.Errorf("%w: this node serves no sharded cluster", ErrNoCluster)
	}
	return sr.DeliveryBacklog(c.r.Context())
}

// DeliveryBacklog asks the node the client prefers what the outboxes of
// the shards it holds have pending (GET /v1/cluster/deliveries).
func (c *Client) DeliveryBacklog(ctx context.Context) (*DeliveriesReport, error) {
	out := new(DeliveriesReport)
	err := c.do(ctx, request{method: http.MethodGet, path: pathDeliveries, out: out, noRoute: true})
	return out, err
}

const pathDeliveries = "/v1/cluster/deliveries"
