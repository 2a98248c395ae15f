package httpapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/internal/backoff"
)

// Defaults of ClientConfig's zero fields.
const (
	DefaultRetryTimeout     = 30 * time.Second
	DefaultRequestTimeout   = 10 * time.Second
	DefaultPollWait         = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 30
)

// DefaultDialTimeout bounds the connection of a request to a node. A node
// whose machine is down answers nothing, not even a refusal, so a
// connection to it waits for as long as it is allowed to; bounded, the
// caller moves on to the next node (a client to another address, a node
// forwarding a request to the shard's next replica) well within one
// request's timeout. Connections inside a data center take milliseconds.
const DefaultDialTimeout = 5 * time.Second

// NewTransport returns the HTTP transport of heddle's clients of nodes:
// the Go client's default, the node's forwards and its cross-shard
// deliveries. It is net/http's default transport with connections bounded
// by DefaultDialTimeout, up to 64 idle connections kept for each node
// rather than 2 (a loaded client or node talks to each node over many
// connections at once, and those past the kept ones would be closed and
// opened again), and tlsConfig (cloned) when it is not nil.
func NewTransport(tlsConfig *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConnsPerHost = 64
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig.Clone()
	}
	return t
}

// The backoff between two tries of one call: a random delay under a ceiling
// that doubles from minBackoff up to maxBackoff (full jitter, so that the
// clients of a cluster that failed together do not retry together).
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = time.Second
)

// newBackoff returns the backoff of one retry loop.
func newBackoff() backoff.Backoff { return backoff.Backoff{Initial: minBackoff, Max: maxBackoff} }

// ClientConfig configures NewClient. The zero value of every field but
// Addrs is valid and takes the default its comment names.
type ClientConfig struct {
	// Addrs are the nodes to ask: "host:port" (plain HTTP) or a base URL
	// such as "https://host:port". At least one is required; the client
	// also goes to any leader a node names.
	Addrs []string
	// Token, if set, is sent as "Authorization: Bearer <token>".
	Token string
	// Headers, if set, is called before each try of each request, with
	// the request's context, for headers to send with it (Temporal's
	// HeadersProvider): a token that expires can so be renewed. What it
	// returns is set over Token's Authorization header; an error fails
	// the try, which is not retried. It may be called concurrently.
	Headers func(ctx context.Context) (map[string]string, error)
	// TLS, if set, secures the connections: the CA to trust (RootCAs) and,
	// for a node joining a cluster or a caller authenticated by its
	// certificate, the certificate to present. An address without a
	// scheme then means https://. Nil: plain HTTP for host:port
	// addresses, the system's roots for https:// ones. Ignored when
	// HTTPClient is set (configure its transport instead).
	TLS *tls.Config
	// HTTPClient sends the requests. Nil means a client that keeps up to
	// 64 idle connections per node (a busy worker makes many requests at
	// once). Its Timeout, if any, must exceed PollWait.
	HTTPClient *http.Client
	// RetryTimeout is how long a call goes on trying, node after node,
	// after its first failure (no connection, a timeout, a 503). 0 means
	// DefaultRetryTimeout (30 s).
	RetryTimeout time.Duration
	// OnRetry, if set, is called when a try of a call failed in a way that
	// is retried (no answer, or a node without a leader), before the next
	// try, with the address the try went to and its error. An error it
	// returns ends the call with that error instead: a command-line tool
	// fails at once when nothing listens, and says so. It may be called
	// concurrently.
	OnRetry func(addr string, err error) error
	// RequestTimeout bounds one try, beyond a long poll's wait. 0 means
	// DefaultRequestTimeout (10 s).
	RequestTimeout time.Duration
	// PollWait is the longest wait one long poll asks for (the server
	// caps it at its MaxWait). 0 means DefaultPollWait (30 s).
	PollWait time.Duration
	// MaxResponseBytes bounds an answer's body. 0 means
	// DefaultMaxResponseBytes (1 GiB: a history page may hold a thousand
	// events of a megabyte each).
	MaxResponseBytes int64
}

// Validate reports the first invalid field of c.
func (c ClientConfig) Validate() error {
	if len(c.Addrs) == 0 {
		return fmt.Errorf("%w: ClientConfig.Addrs needs at least one address", ErrInvalidConfig)
	}
	for _, a := range c.Addrs {
		if _, err := baseURL(a, c.scheme()); err != nil {
			return err
		}
	}
	switch {
	case c.RetryTimeout < 0:
		return fmt.Errorf("%w: ClientConfig.RetryTimeout %v is negative", ErrInvalidConfig, c.RetryTimeout)
	case c.RequestTimeout < 0:
		return fmt.Errorf("%w: ClientConfig.RequestTimeout %v is negative", ErrInvalidConfig, c.RequestTimeout)
	case c.PollWait < 0:
		return fmt.Errorf("%w: ClientConfig.PollWait %v is negative", ErrInvalidConfig, c.PollWait)
	case c.MaxResponseBytes < 0:
		return fmt.Errorf("%w: ClientConfig.MaxResponseBytes %d is negative", ErrInvalidConfig, c.MaxResponseBytes)
	}
	return nil
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: NewTransport(c.TLS)}
	}
	if c.RetryTimeout == 0 {
		c.RetryTimeout = DefaultRetryTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.PollWait == 0 {
		c.PollWait = DefaultPollWait
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return c
}

// scheme is the scheme of an address given without one.
func (c ClientConfig) scheme() string {
	if c.TLS != nil {
		return "https"
	}
	return "http"
}

// baseURL turns an address into a base URL without a trailing slash; an
// address without a scheme gets scheme.
func baseURL(addr, scheme string) (string, error) {
	a := strings.TrimRight(strings.TrimSpace(addr), "/")
	if a == "" {
		return "", fmt.Errorf("%w: ClientConfig.Addrs holds an empty address", ErrInvalidConfig)
	}
	if !strings.Contains(a, "://") {
		a = scheme + "://" + a
	}
	if !strings.HasPrefix(a, "http://") && !strings.HasPrefix(a, "https://") {
		return "", fmt.Errorf("%w: address %q is neither host:port nor an http(s) URL", ErrInvalidConfig, addr)
	}
	return a, nil
}

// Client is an engine.Service (and a Cluster, and a query asker) over the
// HTTP API of one node or a cluster. It is safe for concurrent use.
//
// A call goes to the node that answered last. When a node cannot be
// reached, times out or answers 503 the call is tried again — at the leader
// the node named, else at the next address — with capped exponential
// backoff and full jitter (a random delay under the doubling cap), for up
// to RetryTimeout. A command without a RequestID is given a
// random one before its first try, so a retry whose first try may have been
// applied is answered from the engine's record instead of applied again.
// Claims are the exception: see Claim.
type Client struct {
	cfg   ClientConfig
	addrs []string

	mu     sync.Mutex
	prefer string // the base URL of the node that answered last

	// shards is how the client routes on a sharded cluster
	// (clientshards.go); pinned clients (a node's reader of one shard)
	// never route.
	shards shardState
	pinned bool
	// kept holds the jobs cut polls answered with, for the next claim of
	// the same claimer (clientkept.go), and keptTasks the tasks
	// (clientkept_tasks.go).
	kept      keptClaims
	keptTasks keptTaskClaims
}

// NewClient returns a client for cfg.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg.withDefaults()}
	for _, a := range cfg.Addrs {
		u, _ := baseURL(a, cfg.scheme()) // Validate checked it
		c.addrs = append(c.addrs, u)
	}
	c.prefer = c.addrs[0]
	return c, nil
}

// Addrs returns the base URLs of the nodes the client was given
// (ClientConfig.Addrs with their scheme, as OnRetry names them).
func (c *Client) Addrs() []string { return slices.Clone(c.addrs) }

func (c *Client) preferred() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prefer
}

func (c *Client) setPreferred(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefer = base
}

// after returns the address to try after base failed.
func (c *Client) after(base string) string {
	for i, a := range c.addrs {
		if a == base {
			return c.addrs[(i+1)%len(c.addrs)]
		}
	}
	return c.addrs[0] // base was a leader hint that failed: start over
}

// hintURL turns a leader's HTTP address into a base URL, with the scheme of
// the node that named it.
func hintURL(from, hint string) string {
	if strings.Contains(hint, "://") {
		return strings.TrimRight(hint, "/")
	}
	scheme, _, _ := strings.Cut(from, "://")
	return scheme + "://" + hint
}
