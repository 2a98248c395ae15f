package httpapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/pki"
	"github.com/heddlewf/heddle/raftfsm"
)

// secureCluster is raftfsm nodes serving the HTTP API over TLS, with
// mutual TLS between them and tokens for callers, as a deployment runs.
type secureCluster struct {
	t      *testing.T
	ca     *pki.CA
	roots  *x509.CertPool
	tokens *httpapi.Tokens
	nodes  map[string]*raftfsm.Node
	http   map[string]string // id -> HTTPS address
}

func newSecureCluster(t *testing.T) *secureCluster {
	ca, err := pki.NewCA("membership test CA")
	if err != nil {
		t.Fatal(err)
	}
	c := &secureCluster{t: t, ca: ca, roots: x509.NewCertPool(), tokens: &httpapi.Tokens{},
		nodes: map[string]*raftfsm.Node{}, http: map[string]string{}}
	c.roots.AddCert(ca.Cert)
	for _, g := range []struct {
		name, token string
		role        httpapi.Role
	}{{"ada", "adm", httpapi.RoleAdmin}, {"carl", "cli", httpapi.RoleClient}, {"wendy", "wrk", httpapi.RoleWorker}} {
		if err := c.tokens.Add(g.name, g.role, g.token); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// cert returns node id's certificate.
func (c *secureCluster) cert(id string) tls.Certificate {
	c.t.Helper()
	is, err := c.ca.NodeCert(id, []string{"127.0.0.1"})
	if err != nil {
		c.t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		c.t.Fatal(err)
	}
	return cert
}

// start opens node id and serves its API over TLS.
func (c *secureCluster) start(id string, bootstrap bool) {
	t := c.t
	cert := c.cert(id)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := raftfsm.Open(raftfsm.Config{ID: id, Dir: filepath.Join(t.TempDir(), id), RaftAddr: "127.0.0.1:0",
		HTTPAddr: ln.Addr().String(), Bootstrap: bootstrap, TLS: pki.PeerTLS(cert, c.roots),
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fwd := &http.Client{Transport: &http.Transport{TLSClientConfig: pki.ClientTLS(c.roots, nil)}}
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: n.Engine(), Cluster: n, Tokens: c.tokens,
		ClientCAs: c.roots, ForwardClient: fwd, ForwardScheme: "https"})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, TLSConfig: pki.ServerTLS(cert, c.roots)}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		api.Close()
		_ = srv.Close()
		if err := n.Close(); err != nil {
			t.Errorf("closing %s: %v", id, err)
		}
	})
	c.nodes[id], c.http[id] = n, ln.Addr().String()
}

// client returns an API client of node at, with token and, if asCert is
// not empty, that node's certificate.
func (c *secureCluster) client(at, token, asCert string) *httpapi.Client {
	c.t.Helper()
	var cert *tls.Certificate
	if asCert != "" {
		cc := c.cert(asCert)
		cert = &cc
	}
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{c.http[at]}, Token: token,
		TLS: pki.ClientTLS(c.roots, cert), RetryTimeout: 5 * time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// The attacks of the report on membership, against a cluster run with
// tokens, TLS and node certificates: even the holder of the admin token
// cannot add a phantom voter, take over a member's Raft address, or
// rewrite the leader's HTTP address so that followers forward clients'
// requests (and their tokens) to it. Only a node holding its own
// certificate joins, as itself.
func TestMembershipNeedsTheNodesOwnCertificate(t *testing.T) {
	c := newSecureCluster(t)
	c.start("n1", true)
	if _, err := c.nodes["n1"].WaitLeader(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.start("n2", false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// n2 joins through n1 with its certificate and no token.
	if err := c.client("n1", "", "n2").Join(ctx, "n2", c.nodes["n2"].RaftAddr(), c.http["n2"]); err != nil {
		t.Fatalf("n2 joining with its certificate: %v", err)
	}
	for c.nodes["n2"].FSM().Applied() < c.nodes["n1"].FSM().Applied() {
		time.Sleep(10 * time.Millisecond)
	}

	var attacked atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attacked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"job_id":999,"workflow_id":"forged"}`))
	}))
	defer evil.Close()
	evilAddr := evil.Listener.Addr().String()

	attacks := []struct {
		name              string
		at, token, asCert string
		member            httpapi.ClusterMember
		want              error
	}{
		{"rewrite the leader's HTTP address with the admin token", "n2", "adm", "", httpapi.ClusterMember{ID: "n1", RaftAddr: c.nodes["n1"].RaftAddr(), HTTPAddr: evilAddr}, httpapi.ErrForbidden},
		{"rewrite it at the leader", "n1", "adm", "", httpapi.ClusterMember{ID: "n1", RaftAddr: c.nodes["n1"].RaftAddr(), HTTPAddr: evilAddr}, httpapi.ErrForbidden},
		{"phantom voter", "n1", "adm", "", httpapi.ClusterMember{ID: "phantom", RaftAddr: "127.0.0.1:9", HTTPAddr: evilAddr}, httpapi.ErrForbidden},
		{"take over n2's Raft address", "n1", "adm", "", httpapi.ClusterMember{ID: "n9", RaftAddr: c.nodes["n2"].RaftAddr(), HTTPAddr: evilAddr}, httpapi.ErrForbidden},
		{"n2's certificate posing as n1", "n1", "", "n2", httpapi.ClusterMember{ID: "n1", RaftAddr: c.nodes["n1"].RaftAddr(), HTTPAddr: evilAddr}, httpapi.ErrForbidden},
		{"a worker's token", "n1", "wrk", "n2", httpapi.ClusterMember{ID: "n2", RaftAddr: c.nodes["n2"].RaftAddr(), HTTPAddr: evilAddr}, httpapi.ErrForbidden},
		{"no credentials", "n1", "", "", httpapi.ClusterMember{ID: "phantom", RaftAddr: "127.0.0.1:9"}, httpapi.ErrUnauthorized},
	}
	for _, a := range attacks {
		before, _ := c.nodes["n1"].Status(ctx)
		err := c.client(a.at, a.token, a.asCert).Join(ctx, a.member.ID, a.member.RaftAddr, a.member.HTTPAddr)
		if !errors.Is(err, a.want) {
			t.Errorf("%s: %v, want %v", a.name, err, a.want)
		}
		after, _ := c.nodes["n1"].Status(ctx)
		if len(after.Members) != len(before.Members) || after.Members[0] != before.Members[0] || after.Members[1] != before.Members[1] {
			t.Errorf("%s changed the members: %+v -> %+v", a.name, before.Members, after.Members)
		}
	}
	for _, a := range []struct {
		name         string
		token, as    string
		remove, move bool
	}{{"remove with a worker's token", "wrk", "", true, false}, {"transfer with a client's token", "cli", "", false, true}} {
		cl := c.client("n1", a.token, a.as)
		var err error
		if a.remove {
			err = cl.Remove(ctx, "n2")
		} else {
			err = cl.TransferLeader(ctx)
		}
		if !errors.Is(err, httpapi.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", a.name, err)
		}
	}
	if !c.nodes["n1"].IsLeader() {
		t.Fatal("n1 lost its leadership")
	}

	// A client's start through the follower is forwarded to the real
	// leader, with its token, and nowhere else.
	cl := c.client("n2", "cli", "")
	res, err := cl.Create(ctx, engine.CreateJob{WorkflowID: "real", Type: "T", Queue: "q"})
	if err != nil || res.WorkflowID != "real" {
		t.Fatalf("start through the follower: %+v, %v", res, err)
	}
	if j, err := c.nodes["n1"].Engine().Describe(ctx, engine.Target{WorkflowID: "real"}); err != nil || j.ID != res.Job {
		t.Fatalf("the acknowledged start is not on the leader: %+v, %v", j, err)
	}
	if n := attacked.Load(); n != 0 {
		t.Fatalf("the attacker's address got %d requests", n)
	}
	// The leader recorded who started it.
	h, err := c.nodes["n1"].Engine().History(ctx, res.Job, 0, 1)
	if err != nil || h.Events[0].By != "carl" {
		t.Fatalf("the start was recorded as by %q (%v), want carl", h.Events[0].By, err)
	}
}
