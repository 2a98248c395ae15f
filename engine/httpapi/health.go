package httpapi

import (
	"context"
	"fmt"
	"net/http"
)

// Health is the body of a successful /healthz or /readyz answer.
type Health struct {
	// Status is "ok" (alive) or "ready".
	Status string `json:"status" msgpack:"status"`
}

// The routes no token guards: a health check must work without one (a
// load balancer's or an orchestrator's probe), and they reveal nothing.
const (
	pathHealthz = "/healthz"
	pathReadyz  = "/readyz"
)

func isProbe(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == pathHealthz || r.URL.Path == pathReadyz)
}

// healthRoutes registers /healthz, /readyz and, when the configured
// Metrics can serve its registry, /metrics.
func (s *Server) healthRoutes() {
	s.handle("GET "+pathHealthz, RoleNone, func(*call) (any, error) { return &Health{Status: "ok"}, nil })
	s.handle("GET "+pathReadyz, RoleNone, s.readyz)
	if h := s.cfg.Metrics.Handler(); h != nil {
		// Any authenticated caller may read the metrics: serve has
		// refused the others.
		s.mux.Handle("GET /metrics", h)
	}
}

// readiness returns what decides /readyz: ServerConfig.Ready, else the
// Cluster's or the Service's own Ready method, else nothing (always ready).
func (s *Server) readiness() func(context.Context) error {
	type readier interface{ Ready(context.Context) error }
	switch {
	case s.cfg.Ready != nil:
		return s.cfg.Ready
	case s.cfg.Cluster != nil:
		if r, ok := s.cfg.Cluster.(readier); ok {
			return r.Ready
		}
	}
	if r, ok := s.cfg.Service.(readier); ok {
		return r.Ready
	}
	return nil
}

func (s *Server) readyz(c *call) (any, error) {
	if ready := s.readiness(); ready != nil {
		if err := ready(c.r.Context()); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotReady, err)
		}
	}
	return &Health{Status: "ready"}, nil
}

// Live asks the Client's first node whether it is alive (GET /healthz),
// once, without retrying or going elsewhere.
func (c *Client) Live(ctx context.Context) error {
	return c.probe(ctx, pathHealthz)
}

// Ready asks the Client's first node whether it is ready (GET /readyz),
// once, without retrying or going elsewhere: nil when it is, an error
// matching ErrNotReady that gives the node's reason when it is not, or the
// error of a node that did not answer.
func (c *Client) Ready(ctx context.Context) error {
	return c.probe(ctx, pathReadyz)
}

func (c *Client) probe(ctx context.Context, path string) error {
	var h Health
	_, err := c.try(ctx, c.addrs[0], request{method: http.MethodGet, path: path, out: &h}, nil)
	return err
}
