package raftfsm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/internal/pki"
)

// testPKI is a CA and the peer TLS configuration of each node it signed.
type testPKI struct {
	ca    *pki.CA
	roots *x509.CertPool
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	ca, err := pki.NewCA("raftfsm test CA")
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{ca: ca, roots: x509.NewCertPool()}
	p.roots.AddCert(ca.Cert)
	return p
}

// peer returns node id's peer TLS configuration, as a program that runs
// a node builds it (PeerTLS).
func (p *testPKI) peer(t testing.TB, id string) *tls.Config {
	t.Helper()
	is, err := p.ca.NodeCert(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return PeerTLS(cert, p.roots)
}

// forgeVote sends, from outside the cluster and without a certificate, the
// RequestVote of the report: a member's id, a newer term, and the
// leadership-transfer flag that makes a leader listen. It reports whether
// the target answered at all.
func forgeVote(t *testing.T, target, asID string, term uint64) bool {
	t.Helper()
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	req := &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(asID), Addr: []byte(tr.LocalAddr())},
		Term: term, LastLogIndex: 1 << 40, LastLogTerm: term, LeadershipTransfer: true}
	var resp raft.RequestVoteResponse
	err = tr.RequestVote(raft.ServerID(asID), raft.ServerAddress(target), req, &resp)
	return err == nil
}

// With mutual TLS between the nodes, a forged RequestVote from a peer
// without a node certificate is refused in the handshake: no node ever
// takes the forged term, and writes go on succeeding while the forgery is
// repeated every 200 ms. (Without TLS one such vote moved the leader to the
// forged term and deposed it, and 23 of 24 writes failed while it was
// repeated.) The checks hold against the forged terms, not against the
// term staying the same: on a loaded machine the test cluster's short
// timeouts may hold a real election, which raises the term by one or two.
func TestForgedVoteWithoutCertificateIsRefused(t *testing.T) {
	p := newTestPKI(t)
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.TLS = p.peer(t, cfg.ID) })
	c.waitLeaderIs("n1")
	term := c.live()["n1"].Raft().CurrentTerm()
	maxTerm := func() uint64 {
		var m uint64
		for _, n := range c.live() {
			m = max(m, n.Raft().CurrentTerm())
		}
		return m
	}
	if forgeVote(t, c.addrs["n1"], "n2", term+10) {
		t.Error("the leader answered a RequestVote from a peer without a certificate")
	}
	if got := maxTerm(); got >= term+10 {
		t.Fatalf("after the forged vote a node is at term %d, the forged one was %d", got, term+10)
	}
	stop := make(chan struct{})
	answered := make(chan int, 1)
	go func() {
		n := 0
		defer func() { answered <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				if forgeVote(t, c.addrs["n1"], "n3", term+100) {
					n++
				}
			}
		}
	}()
	failed := 0
	for i := range 24 {
		err := c.do(func(e *embedded.Engine) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: fmt.Sprintf("rq-%d", i)},
				WorkflowID: fmt.Sprintf("wf-%d", i), Type: "t", Queue: "q"})
			return err
		})
		if err != nil {
			failed++
			t.Logf("write %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	if n := <-answered; n > 0 {
		t.Errorf("%d forged votes were answered", n)
	}
	if got := maxTerm(); failed > 0 || got >= term+100 {
		t.Fatalf("%d of 24 writes failed under repeated forged votes; highest term %d, the forged one %d", failed, got, term+100)
	}
}

// A node without a certificate the others accept cannot join: its peers
// refuse its connections, and it never catches up. (A node with TLS
// dialling a plain one fails too, so a half-configured cluster is noticed.)
func TestPeerWithoutValidCertificateIsRefused(t *testing.T) {
	p := newTestPKI(t)
	other := newTestPKI(t)
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.TLS = p.peer(t, cfg.ID) })
	dir := t.TempDir()
	addr := freeAddr(t)
	n, err := Open(Config{ID: "n9", Dir: dir, RaftAddr: addr, HTTPAddr: "http-n9", TLS: other.peer(t, "n9"),
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := c.live()["n1"].Engine().Create(context.Background(), engine.CreateJob{WorkflowID: "x", Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	// The join itself is a configuration change the leader commits alone
	// (it cannot reach n9 to count it), but n9 never receives a byte.
	_ = c.live()["n1"].Join(ctx, "n9", addr, "http-n9")
	time.Sleep(2 * time.Second)
	if got := n.FSM().Applied(); got != 0 {
		t.Fatalf("the node with a foreign certificate applied up to %d", got)
	}
	// And a plain TCP client gets no Raft answer at all.
	conn, err := net.DialTimeout("tcp", c.addrs["n1"], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte{0, 0x80}); err != nil { // rpcAppendEntries and junk, in the clear
		t.Fatal(err)
	}
	b := make([]byte, 64)
	nr, _ := conn.Read(b)
	if nr > 0 && b[0] != 0x15 { // a TLS alert record is the only answer allowed
		t.Fatalf("a plain connection got %d bytes that are not a TLS alert: % x", nr, b[:nr])
	}
}

// A node cut off from the others says so: its read state names no leader
// (the HTTP API puts it in the headers of every stale read), while its
// applied index stays where it was.
func TestReadStateMarksACutOffNode(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.waitLeaderIs("n1")
	id, term, applied, leader := c.live()["n2"].ReadState()
	if id != "n2" || term == 0 || applied == 0 || leader != "n1" {
		t.Fatalf("a connected follower: %q %d %d %q", id, term, applied, leader)
	}
	c.kill("n2")
	c.kill("n3")
	n1 := c.live()["n1"]
	c.eventually("n1 knows of no leader", func() bool { _, _, _, l := n1.ReadState(); return l == "" })
	if _, _, got, _ := n1.ReadState(); got < applied {
		t.Fatalf("applied index went back from %d to %d", applied, got)
	}
}
