package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/metrics"
)

// Defaults of ServerConfig's zero fields.
const (
	DefaultMaxBodyBytes = 8 << 20
	DefaultMaxWait      = 30 * time.Second
)

// ServerConfig configures NewServer. The zero value of every field but
// Service is valid and takes the default its comment names.
type ServerConfig struct {
	// Service answers the commands and reads. Required.
	Service engine.Service
	// Cluster, if set, serves the /v1/cluster routes and tells the query
	// broker whether this node leads. Nil means a node that runs alone:
	// the cluster routes answer 501 (ErrNoCluster).
	Cluster Cluster
	// MaxBodyBytes bounds a request body; a larger one is refused with 413
	// before it is decoded. 0 means DefaultMaxBodyBytes (8 MiB). The
	// engine's own Limits still apply to what the body carries.
	MaxBodyBytes int64
	// AuthToken, if set, must come with every request as
	// "Authorization: Bearer <token>"; other requests get 401.
	AuthToken string
	// MaxWait caps how long one long poll (claim, closed, query) waits
	// before it answers empty. 0 means DefaultMaxWait (30 s).
	MaxWait time.Duration
	// ForwardClient sends requests on to the leader. Nil means a client
	// with no timeout of its own: a forwarded request ends with the
	// request it forwards.
	ForwardClient *http.Client
	// Metrics, if set, records every request (by route pattern and
	// status code) and, when its registry gathers, is served on GET
	// /metrics (behind AuthToken like the API). Nil records nothing.
	Metrics *metrics.Metrics
	// TracerProvider, if set, makes a server span of every request,
	// continuing the caller's trace from its W3C traceparent header. Nil
	// makes none; the header is still forwarded to the leader.
	TracerProvider trace.TracerProvider
	// Logger, if set, receives the failed requests: server errors at
	// Error, refusals at Debug. Nil logs nothing.
	Logger *slog.Logger
	// Ready decides GET /readyz: nil when the node may be sent work, else
	// why not. Nil means the Cluster's Ready method (raftfsm.Node has
	// one), else the Service's (engine.Engine has one), else always
	// ready. GET /healthz answers whenever the server runs.
	Ready func(ctx context.Context) error
}

// Validate reports the first invalid field of c.
func (c ServerConfig) Validate() error {
	switch {
	case c.Service == nil:
		return fmt.Errorf("%w: ServerConfig.Service is required", ErrInvalidConfig)
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("%w: ServerConfig.MaxBodyBytes %d is negative", ErrInvalidConfig, c.MaxBodyBytes)
	case c.MaxWait < 0:
		return fmt.Errorf("%w: ServerConfig.MaxWait %v is negative", ErrInvalidConfig, c.MaxWait)
	}
	return nil
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.ForwardClient == nil {
		c.ForwardClient = &http.Client{}
	}
	return c
}
