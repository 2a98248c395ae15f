package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/raftfsm"
)

// apiServer is one HTTP API listener.
type apiServer struct {
	api  *httpapi.Server
	srv  *http.Server
	ln   net.Listener
	done chan error
	// overTLS is whether srv serves TLS, decided when it is made: Serve
	// gives a server without a TLS config one of its own (for HTTP/2), so
	// srv.TLSConfig says nothing once it runs, and reading it races Serve.
	overTLS bool

	// conns holds the state of each open connection, as srv's ConnState
	// hook reports it; close waits for those serving a request.
	mu    sync.Mutex
	conns map[net.Conn]http.ConnState
}

// apiCloseGrace is how long close lets the requests in flight finish
// before it cuts them off.
const apiCloseGrace = 5 * time.Second

// listen opens the API's listener before anything else, so that a node
// advertises the real address even when the port was 0.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("HTTP API on %s: %w", addr, err)
	}
	return ln, nil
}

// serveAPI serves the HTTP API and the UI on ln, which listens on
// httpAddr (the --http-addr asked for), secured as sec says (over TLS
// when it has a certificate), with the API's timeouts and connection cap;
// on error it closes ln. On a loopback address it answers to this
// machine's own names only (hostGuard). wrap, if not nil, wraps the
// handler (tests watch what a node receives with it).
func serveAPI(ln net.Listener, cfg httpapi.ServerConfig, sec *security, httpAddr string, wrap func(http.Handler) http.Handler) (*apiServer, error) {
	tlsConfig := sec.serverTLS()
	api, err := httpapi.NewServer(cfg)
	if err != nil {
		return nil, errors.Join(err, ln.Close())
	}
	handler, err := withUI(api, sec)
	if err != nil {
		return nil, errors.Join(err, ln.Close())
	}
	if g := sec.hostGuard(ln, httpAddr); g != nil {
		handler = g.Handler(handler)
	}
	if wrap != nil {
		handler = wrap(handler)
	}
	s := &apiServer{api: api, ln: ln, done: make(chan error, 1), conns: map[net.Conn]http.ConnState{}, overTLS: tlsConfig != nil}
	s.srv = api.HTTPServerFor(handler)
	// The listener's hook first: it learns which connections it may shed.
	shed := s.srv.ConnState
	s.srv.ConnState = func(c net.Conn, st http.ConnState) {
		shed(c, st)
		s.track(c, st)
	}
	l := api.Listener(ln)
	if tlsConfig != nil {
		s.srv.TLSConfig = tlsConfig
		l = tls.NewListener(l, tlsConfig)
	}
	go func() { s.done <- s.srv.Serve(l) }()
	return s, nil
}

// track keeps conns up to date; net/http calls it as connections change state.
func (s *apiServer) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	default:
		s.conns[c] = state
	}
}

// connections counts the open connections in each state.
func (s *apiServer) connections() map[http.ConnState]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[http.ConnState]int{}
	for _, st := range s.conns {
		n[st]++
	}
	return n
}

func (s *apiServer) addr() string { return s.ln.Addr().String() }

// close stops accepting requests, ends the long polls, gives the requests
// in flight up to apiCloseGrace to finish, then closes every connection.
//
// It does not leave that to http.Server.Shutdown alone: Shutdown counts a
// connection idle only once it has served a request, so it waits up to 5 s
// for any connection a client opened but never used (an HTTP client may
// dial a spare one), and a stopping server would hang for no request at
// all. So close waits only for the connections serving a request, as the
// ConnState hook reports them, while Shutdown stops the listener and the
// idle connections; then Close cuts whatever is left.
func (s *apiServer) close() error {
	s.api.Close() // ends the long polls
	ctx, cancel := context.WithTimeout(context.Background(), apiCloseGrace)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.srv.Shutdown(ctx) }()
	var errs []error
	if err := s.awaitRequests(ctx); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, s.srv.Close())
	// Once Close has run, Shutdown returns at its next look at the
	// connections. Its deadline error is the one awaitRequests reported.
	if err := <-shutdown; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing the HTTP API on %s: %w", s.addr(), err)
	}
	return nil
}

// awaitRequests waits until no connection is serving a request, or
// reports how many still were when ctx ended.
func (s *apiServer) awaitRequests(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		n := s.connections()[http.StateActive]
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d requests still running after %v were cut off", n, apiCloseGrace)
		case <-tick.C:
		}
	}
}

// clusterNode is a Raft node with its HTTP API: a node of a cluster of
// one group, or (host) a node of a sharded cluster.
type clusterNode struct {
	node *raftfsm.Node // nil on a sharded node
	host *raftfsm.Host // nil on a node of one group
	api  *apiServer
}

// raftAddr is the node's Raft address.
func (c *clusterNode) raftAddr() string {
	if c.host != nil {
		return c.host.RaftAddr()
	}
	return c.node.RaftAddr()
}

type nodeOptions struct {
	id, dir, raftAddr, httpAddr string
	bootstrap                   bool
	join                        []string  // HTTP addresses of members to join through
	sec                         *security // nil: plain TCP and HTTP, no tokens
	grace                       time.Duration
	// logger receives the node's logs, Raft's and Badger's included;
	// nil: none.
	logger     *slog.Logger
	chaosProxy string // route Raft dials through this proxy (chaos tests)
	// wrap, if set, wraps the node's HTTP handler (tests only).
	wrap func(http.Handler) http.Handler
	// shards, replicas and peers make the node one of a sharded cluster
	// (cluster_shards.go); a directory that holds a sharded node's
	// placement does too.
	shards, replicas int
	peers            []raftfsm.PlacementNode
}

// startNode opens a Raft node, serves its API and, when asked, joins it to
// a cluster through any member (the member forwards to the leader).
func startNode(ctx context.Context, o nodeOptions) (*clusterNode, error) {
	if o.sec == nil {
		o.sec = &security{}
	}
	log := o.logger
	if log == nil {
		log = discardLogger()
	}
	// A sharded node's metrics carry each shard's engine and group under
	// a shard label (metrics.Options.Sharded).
	m, _, err := metrics.NewRegistryWithOptions(metrics.Options{Sharded: o.sharded()})
	if err != nil {
		return nil, err
	}
	if o.sharded() {
		return startHost(ctx, o, log, m)
	}
	ln, err := listen(o.httpAddr)
	if err != nil {
		return nil, err
	}
	n, err := raftfsm.Open(raftfsm.Config{ID: o.id, Dir: o.dir, RaftAddr: o.raftAddr, HTTPAddr: ln.Addr().String(),
		Bootstrap: o.bootstrap, FailoverGrace: o.grace, Logger: log, Metrics: m, Dial: chaosDialer(o.chaosProxy, o.id),
		TLS: o.sec.peerTLS(), OnSchedulerError: func(err error) { log.Warn("leader's background work", "error", err) }})
	if err != nil {
		return nil, errors.Join(err, ln.Close())
	}
	api, err := serveAPI(ln, o.sec.apply(httpapi.ServerConfig{Service: n.Engine(), Cluster: n, Metrics: m, Logger: log}), o.sec, o.httpAddr, o.wrap)
	if err != nil {
		return nil, errors.Join(err, n.Close())
	}
	cn := &clusterNode{node: n, api: api}
	if len(o.join) > 0 {
		if err := joinCluster(ctx, o, n.RaftAddr(), api.addr()); err != nil {
			return nil, errors.Join(err, cn.close())
		}
	}
	return cn, nil
}

// close stops the API, then the node, and reports what failed.
func (c *clusterNode) close() error {
	if c.host != nil {
		return errors.Join(c.api.close(), c.host.Close())
	}
	return errors.Join(c.api.close(), c.node.Close())
}

// joinCluster asks the cluster to add this node, retrying while the
// members are starting or electing.
func joinCluster(ctx context.Context, o nodeOptions, raftAddr, httpAddr string) error {
	// The join shows this node's certificate: with --tls-ca the cluster
	// admits a node only as the id its certificate names.
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: o.join, Token: o.sec.token, TLS: o.sec.clientTLS(), RetryTimeout: time.Minute})
	if err != nil {
		return fmt.Errorf("--join: %w", err)
	}
	if err := cl.Join(ctx, o.id, raftAddr, httpAddr); err != nil {
		return fmt.Errorf("joining through %v: %w", o.join, err)
	}
	return nil
}

// ChaosHeader starts every connection a node opens through a chaos proxy:
// "HEDDLE-CHAOS/1 <from-id> <target-addr>\n", then the Raft stream. The
// proxy (package chaos) reads it to know which node calls which, connects
// to the target, and drops, delays or cuts the pair's traffic as its
// partition schedule says.
const ChaosHeader = "HEDDLE-CHAOS/1"

// chaosDialer returns the dialer for --chaos-proxy, or nil without one.
func chaosDialer(proxy, fromID string) func(string, time.Duration) (net.Conn, error) {
	if proxy == "" {
		return nil
	}
	return func(target string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout("tcp", proxy, timeout)
		if err != nil {
			return nil, err
		}
		err = conn.SetWriteDeadline(time.Now().Add(timeout))
		if err == nil {
			_, err = fmt.Fprintf(conn, "%s %s %s\n", ChaosHeader, fromID, target)
		}
		if err == nil {
			err = conn.SetWriteDeadline(time.Time{})
		}
		if err != nil {
			return nil, errors.Join(err, conn.Close())
		}
		return conn, nil
	}
}
