package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The routes of a sharded cluster's backup (docs/operations.md, "Backing
// up a sharded cluster"): hold a shard's deliveries, release them, and
// stream a copy of the shard taken under the hold. Each is served by the
// shard's leader; the hold and its release are forwarded there like other
// commands, the copy is not (a stream is not buffered through another
// node): a follower answers not-leader naming the leader, and the client
// asks it.

// ShardBackup is what a Cluster of a sharded node may also implement
// (raftfsm.Host does).
type ShardBackup interface {
	HoldDeliveries(ctx context.Context, shard int, token, owner string, ttl time.Duration) error
	ReleaseDeliveries(ctx context.Context, shard int, token string) error
	// StreamShardCopy fixes a copy of shard under the hold token and
	// streams it to the writer begin returns, which it calls once with the
	// copy's applied index before the first byte.
	StreamShardCopy(ctx context.Context, shard int, token string, begin func(appliedIndex uint64) io.Writer) error
}

// HoldRequest is the body of POST /v1/cluster/shards/{shard}/hold.
type HoldRequest struct {
	Token string `json:"token" msgpack:"token"`
	Owner string `json:"owner,omitempty" msgpack:"owner,omitempty"`
	// TTLMS is how long the hold lasts unless released, in milliseconds.
	TTLMS int64 `json:"ttl_ms" msgpack:"ttl_ms"`
}

// ReleaseRequest is the body of POST /v1/cluster/shards/{shard}/hold/release.
type ReleaseRequest struct {
	Token string `json:"token" msgpack:"token"`
}

// HoldAnswer answers a hold and a release.
type HoldAnswer struct {
	Shard int `json:"shard" msgpack:"shard"`
}

// appliedIndexHeader carries a shard copy's applied index.
const appliedIndexHeader = "X-Heddle-Applied-Index"

func (s *Server) backupRoutes() {
	s.handle("POST /v1/cluster/shards/{shard}/hold", RoleAdmin, s.holdDeliveries)
	s.handle("POST /v1/cluster/shards/{shard}/hold/release", RoleAdmin, s.releaseDeliveries)
	s.mux.HandleFunc("GET /v1/cluster/shards/{shard}/copy", s.copyShard)
}

func (s *Server) shardBackup() (ShardBackup, error) {
	if b, ok := s.cfg.Cluster.(ShardBackup); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w: this node serves no sharded cluster", ErrNoCluster)
}

func (s *Server) holdDeliveries(c *call) (any, error) {
	b, err := s.shardBackup()
	if err != nil {
		return nil, err
	}
	shard, err := c.shardParam()
	if err != nil {
		return nil, err
	}
	var req HoldRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	switch {
	case req.Token == "":
		return nil, fieldMissing("HoldRequest", "token")
	case req.TTLMS <= 0:
		return nil, fmt.Errorf("%w: HoldRequest.ttl_ms %d: a hold needs a time to expire", engine.ErrInvalidCommand, req.TTLMS)
	}
	if err := b.HoldDeliveries(c.r.Context(), shard, req.Token, req.Owner, time.Duration(req.TTLMS)*time.Millisecond); err != nil {
		return nil, err
	}
	return &HoldAnswer{Shard: shard}, nil
}

func (s *Server) releaseDeliveries(c *call) (any, error) {
	b, err := s.shardBackup()
	if err != nil {
		return nil, err
	}
	shard, err := c.shardParam()
	if err != nil {
		return nil, err
	}
	var req ReleaseRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.Token == "" {
		return nil, fieldMissing("ReleaseRequest", "token")
	}
	if err := b.ReleaseDeliveries(c.r.Context(), shard, req.Token); err != nil {
		return nil, err
	}
	return &HoldAnswer{Shard: shard}, nil
}

// copyShard serves GET /v1/cluster/shards/{shard}/copy?token=T: the
// shard's state in storage's snapshot format, streamed. It needs the admin
// role, as the rest of a backup does: the copy holds every payload.
func (s *Server) copyShard(w http.ResponseWriter, r *http.Request) {
	c := &call{s: s, w: w, r: r, out: responseFormat(r), noForward: true}
	if id := identityOf(r); id.Role < RoleAdmin {
		c.fail(fmt.Errorf("%w: %s %s needs the admin role; token %q has the %s role", ErrForbidden, r.Method, r.URL.Path, id.Name, id.Role))
		return
	}
	s.notePlacement(w.Header())
	b, err := s.shardBackup()
	if err != nil {
		c.fail(err)
		return
	}
	shard, err := c.shardParam()
	if err != nil {
		c.fail(err)
		return
	}
	token := r.URL.Query().Get("token")
	if token == "" {
		c.fail(fmt.Errorf("%w: the copy of a shard needs ?token=, the backup's hold", engine.ErrInvalidCommand))
		return
	}
	// A copy takes as long as its size needs: no write deadline.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	started := false
	err = b.StreamShardCopy(r.Context(), shard, token, func(applied uint64) io.Writer {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set(appliedIndexHeader, strconv.FormatUint(applied, 10))
		w.WriteHeader(http.StatusOK)
		return w
	})
	switch {
	case err == nil:
	case started:
		// The status is sent: breaking the connection is the only way
		// left to tell the client that the copy is not whole (its own
		// checks would find it short).
		panic(http.ErrAbortHandler)
	default:
		c.fail(err)
	}
}

// HoldDeliveries holds shard's deliveries for token until ttl from now
// (any node forwards it to the shard's leader).
func (c *Client) HoldDeliveries(ctx context.Context, shard int, token, owner string, ttl time.Duration) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/shards/" + strconv.Itoa(shard) + "/hold", command: true,
		body: &HoldRequest{Token: token, Owner: owner, TTLMS: ttl.Milliseconds()}, noRoute: true})
}

// ReleaseDeliveries ends shard's hold for token.
func (c *Client) ReleaseDeliveries(ctx context.Context, shard int, token string) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/shards/" + strconv.Itoa(shard) + "/hold/release", command: true,
		body: &ReleaseRequest{Token: token}, noRoute: true})
}

// CopyShard streams a copy of shard, taken under the hold token, to w, and
// returns the shard's applied index it holds. It asks the node the client
// prefers, then the leader a node names (at most a few times); a copy that
// broke off after its first byte is not tried again, since w holds part of
// it.
func (c *Client) CopyShard(ctx context.Context, shard int, token string, w io.Writer) (uint64, error) {
	base := c.preferred()
	var err error
	for range 4 {
		var hint string
		var idx uint64
		hint, idx, err = c.tryCopy(ctx, base, shard, token, w)
		if err == nil || hint == "" {
			return idx, err
		}
		base = hint
	}
	return 0, err
}

func (c *Client) tryCopy(ctx context.Context, base string, shard int, token string, w io.Writer) (string, uint64, error) {
	u := base + "/v1/cluster/shards/" + strconv.Itoa(shard) + "/copy?" + url.Values{"token": {token}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0, fmt.Errorf("httpapi: %w", err)
	}
	req.Header.Set("Accept", contentMsgpack)
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	if c.cfg.Headers != nil {
		hs, err := c.cfg.Headers(ctx)
		if err != nil {
			return "", 0, fmt.Errorf("httpapi: the headers of a shard's copy: %w", err)
		}
		for k, v := range hs {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", 0, &transportError{addr: base, err: err}
	}
	defer func() { _ = resp.Body.Close() }() // read to its end or abandoned
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // an error body; what came is decoded
		re := decodeError(resp.StatusCode, resp.Header.Get("Content-Type"), b)
		if re.Body.LeaderHTTP != "" {
			return hintURL(base, re.Body.LeaderHTTP), 0, re
		}
		return "", 0, re
	}
	idx, err := strconv.ParseUint(resp.Header.Get(appliedIndexHeader), 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("httpapi: the copy of shard %d from %s has no applied index (%s %q)", shard, base, appliedIndexHeader, resp.Header.Get(appliedIndexHeader))
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return "", 0, fmt.Errorf("httpapi: the copy of shard %d from %s broke off: %w", shard, base, err)
	}
	return "", idx, nil
}
