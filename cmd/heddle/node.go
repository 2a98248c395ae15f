package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
}

// listen opens the API's listener before anything else, so that a node
// advertises the real address even when the port was 0.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("HTTP API on %s: %w", addr, err)
	}
	return ln, nil
}

// serveAPI serves the HTTP API on ln; on error it closes ln.
func serveAPI(ln net.Listener, cfg httpapi.ServerConfig) (*apiServer, error) {
	api, err := httpapi.NewServer(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &apiServer{api: api, ln: ln, done: make(chan error, 1),
		srv: &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

func (s *apiServer) addr() string { return s.ln.Addr().String() }

// close stops accepting requests and gives those in flight (long polls
// included) a few seconds to finish.
func (s *apiServer) close() {
	s.api.Close() // ends the long polls
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// clusterNode is a Raft node with its HTTP API.
type clusterNode struct {
	node *raftfsm.Node
	api  *apiServer
}

type nodeOptions struct {
	id, dir, raftAddr, httpAddr string
	bootstrap                   bool
	join                        []string // HTTP addresses of members to join through
	token                       string
	grace                       time.Duration
	// logger receives the node's logs, Raft's and Badger's included;
	// nil: none.
	logger     *slog.Logger
	chaosProxy string // route Raft dials through this proxy (chaos tests)
}

// startNode opens a Raft node, serves its API and, when asked, joins it to
// a cluster through any member (the member forwards to the leader).
func startNode(ctx context.Context, o nodeOptions) (*clusterNode, error) {
	log := o.logger
	if log == nil {
		log = discardLogger()
	}
	m, _, err := metrics.NewRegistry()
	if err != nil {
		return nil, err
	}
	ln, err := listen(o.httpAddr)
	if err != nil {
		return nil, err
	}
	n, err := raftfsm.Open(raftfsm.Config{ID: o.id, Dir: o.dir, RaftAddr: o.raftAddr, HTTPAddr: ln.Addr().String(),
		Bootstrap: o.bootstrap, FailoverGrace: o.grace, Logger: log, Metrics: m, Dial: chaosDialer(o.chaosProxy, o.id),
		OnSchedulerError: func(err error) { log.Warn("leader's background work", "error", err) }})
	if err != nil {
		ln.Close()
		return nil, err
	}
	api, err := serveAPI(ln, httpapi.ServerConfig{Service: n.Engine(), Cluster: n, AuthToken: o.token, Metrics: m, Logger: log})
	if err != nil {
		n.Close()
		return nil, err
	}
	cn := &clusterNode{node: n, api: api}
	if len(o.join) > 0 {
		if err := joinCluster(ctx, o, n.RaftAddr(), api.addr()); err != nil {
			cn.close()
			return nil, err
		}
	}
	return cn, nil
}

func (c *clusterNode) close() {
	c.api.close()
	c.node.Close()
}

// joinCluster asks the cluster to add this node, retrying while the
// members are starting or electing.
func joinCluster(ctx context.Context, o nodeOptions, raftAddr, httpAddr string) error {
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: o.join, Token: o.token, RetryTimeout: time.Minute})
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
		conn.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := fmt.Fprintf(conn, "%s %s %s\n", ChaosHeader, fromID, target); err != nil {
			conn.Close()
			return nil, err
		}
		conn.SetWriteDeadline(time.Time{})
		return conn, nil
	}
}
