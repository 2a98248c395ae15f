package httpapi

import (
	"context"
	"crypto/x509"
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
	DefaultMaxBodyBytes         = 8 << 20
	DefaultMaxInflightBodyBytes = 64 << 20
	DefaultMaxWait              = 30 * time.Second
	DefaultReadHeaderTimeout    = 10 * time.Second
	DefaultReadTimeout          = 30 * time.Second
	DefaultWriteTimeout         = 30 * time.Second
	DefaultIdleTimeout          = 2 * time.Minute
	DefaultMaxConns             = 4096
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
	// MaxInflightBodyBytes bounds the request body bytes held at once by
	// all the requests being served, each body counted twice: its bytes
	// and the values decoded from them (a request never reserves more
	// than the whole budget). A request waits (up to 5 s, then 503
	// ErrBusy) until its body fits. 0 means
	// DefaultMaxInflightBodyBytes (64 MiB); it must be at least
	// MaxBodyBytes.
	MaxInflightBodyBytes int64
	// Tokens, if it holds any, are the bearer tokens the server accepts,
	// each with a name and a role (LoadTokens reads a token file). Every
	// request must then carry one as "Authorization: Bearer <token>"
	// (else 401), and its role must reach the route's (else 403). Nil, with
	// no AuthToken, means a server that lets everyone do everything: for
	// a loopback address only.
	Tokens *Tokens
	// AuthToken, if set, is one more token, with the admin role, named
	// "shared-token": the single shared token of earlier versions.
	AuthToken string
	// MaxWait caps how long one long poll (claim, closed, query) waits
	// before it answers empty. 0 means DefaultMaxWait (30 s).
	MaxWait time.Duration
	// The timeouts of the http.Server HTTPServer returns. ReadHeaderTimeout
	// bounds reading a request's headers, ReadTimeout its headers and
	// body: a client that sends a body slowly, or not at all, is cut off.
	// Once a request is read, the server has MaxWait plus WriteTimeout to
	// answer it (a long poll waits up to MaxWait). IdleTimeout closes a
	// kept-alive connection that carries no request for that long. 0
	// means the default: 10 s, 30 s, 30 s and 2 min.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns caps the connections the listener from Server.Listener
	// holds at once. When it is full, a new connection takes the place of
	// the one that has waited longest without a request being served (one
	// that never sent a request first); when every one is serving a
	// request, up to ProbeConns more are taken for health probes only, and
	// the others wait in the kernel's queue. 0 means DefaultMaxConns
	// (4096).
	MaxConns int
	// ClientCAs, if set, verifies the certificates callers present over
	// TLS (the http.Server's tls.Config must ask for them, with
	// tls.VerifyClientCertIfGiven). A request without a bearer token is
	// then authenticated by its certificate: a node certificate (package
	// pki) as an admin named "node:<id>", a client certificate as the name
	// and role it carries. And a join (POST /v1/cluster/members) must come
	// from the joining node itself, presenting a node certificate that
	// names the member's id, so no one can add, replace or re-address a
	// member without that member's key. Nil: certificates are ignored.
	ClientCAs *x509.CertPool
	// ForwardClient sends requests on to the leader. Nil means a client
	// over NewTransport(nil) with no timeout of its own: a forwarded
	// request ends with the request it forwards. It must not present a certificate of its own,
	// or the leader would take a forwarded request for this node's.
	ForwardClient *http.Client
	// ForwardScheme is the scheme requests are forwarded to the leader
	// with: "http" (the default, "") or "https" (the nodes serve TLS; give
	// ForwardClient the cluster's CA).
	ForwardScheme string
	// Metrics, if set, records every request (by route pattern and
	// status code) and, when its registry gathers, is served on GET
	// /metrics to any caller with a known token (to all, on a server
	// without tokens). Nil records nothing.
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
	// one), else the Service's (embedded.Engine has one), else always
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
	case c.MaxInflightBodyBytes < 0 || (c.MaxInflightBodyBytes > 0 && c.MaxInflightBodyBytes < c.withDefaults().MaxBodyBytes):
		return fmt.Errorf("%w: ServerConfig.MaxInflightBodyBytes %d is negative or below MaxBodyBytes", ErrInvalidConfig, c.MaxInflightBodyBytes)
	case c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0:
		return fmt.Errorf("%w: a ServerConfig timeout is negative", ErrInvalidConfig)
	case c.MaxConns < 0:
		return fmt.Errorf("%w: ServerConfig.MaxConns %d is negative", ErrInvalidConfig, c.MaxConns)
	case c.ForwardScheme != "" && c.ForwardScheme != "http" && c.ForwardScheme != "https":
		return fmt.Errorf("%w: ServerConfig.ForwardScheme %q is neither http nor https", ErrInvalidConfig, c.ForwardScheme)
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
	if c.MaxInflightBodyBytes == 0 {
		c.MaxInflightBodyBytes = max(DefaultMaxInflightBodyBytes, c.MaxBodyBytes)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.ForwardClient == nil {
		c.ForwardClient = &http.Client{Transport: NewTransport(nil)}
	}
	if c.ForwardScheme == "" {
		c.ForwardScheme = "http"
	}
	return c
}

// sharedTokenName is the name AuthToken's caller is recorded as.
const sharedTokenName = "shared-token"

// allTokens returns Tokens with AuthToken added.
func (c ServerConfig) allTokens() (*Tokens, error) {
	all := &Tokens{}
	if c.Tokens != nil {
		for d, id := range c.Tokens.byDigest {
			if err := all.add(id.Name, id.Role, d); err != nil {
				return nil, err
			}
		}
	}
	if c.AuthToken != "" {
		if err := all.Add(sharedTokenName, RoleAdmin, c.AuthToken); err != nil {
			return nil, fmt.Errorf("ServerConfig.AuthToken: %w", err)
		}
	}
	return all, nil
}
