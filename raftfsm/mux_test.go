package raftfsm

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/internal/pki"
)

// TestMuxRoutesConnectionsByGroup: connections dialled by two groups'
// layers reach the same port and come out of the right group's Accept,
// over mutual TLS; a connection naming a group the node does not serve,
// or with a bad header, is closed without reaching any.
func TestMuxRoutesConnectionsByGroup(t *testing.T) {
	ca, err := pki.NewCA("mux test CA")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	is, err := ca.NodeCert("n1", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMux("127.0.0.1:0", nil, PeerTLS(cert, roots), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.close(); err != nil {
			t.Error(err)
		}
	}()
	a, b := m.layer(metaGroupNumber), m.layer(5)
	addr := raft.ServerAddress(m.Addr().String())
	for _, tc := range []struct {
		from, to *groupLayer
		msg      string
	}{{a, a, "to meta"}, {b, b, "to shard 4"}} {
		c, err := tc.from.Dial(addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(tc.msg)); err != nil {
			t.Fatal(err)
		}
		got, err := tc.to.Accept()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(tc.msg))
		if _, err := io.ReadFull(got, buf); err != nil || string(buf) != tc.msg {
			t.Fatalf("group %d read %q, %v; want %q", tc.to.group, buf, err, tc.msg)
		}
		_ = c.Close()
		_ = got.Close()
	}

	// A group this node does not serve: the connection is closed.
	other := &groupLayer{mux: m, group: 9, conns: make(chan net.Conn), done: make(chan struct{})}
	c, err := other.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a connection to an unserved group stayed open: %v", err)
	}
	_ = c.Close()

	// Plain TCP to a TLS port: the handshake fails and the connection is
	// closed.
	raw, err := net.Dial("tcp", string(addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Write(bytes.Repeat([]byte("x"), 64)); err != nil {
		t.Fatal(err)
	}
	if err := raw.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(raw); err != nil && isTimeout(err) {
		t.Fatalf("a plain connection to the TLS port stayed open: %v", err)
	}
	_ = raw.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestMuxHeaderRoundTrip(t *testing.T) {
	for _, g := range []uint16{0, 1, 4096, hostRPCGroup} {
		h := encodeMuxHeader(g)
		got, err := decodeMuxHeader(h[:])
		if err != nil || got != g {
			t.Fatalf("group %d: %d, %v", g, got, err)
		}
	}
	bad := encodeMuxHeader(1)
	for name, b := range map[string][]byte{
		"short":     bad[:7],
		"magic":     append([]byte("HTTP"), bad[4:]...),
		"version":   {'H', 'D', 'M', 'X', 2, 0, 0, 1},
		"flags":     {'H', 'D', 'M', 'X', 1, 1, 0, 1},
		"big group": {'H', 'D', 'M', 'X', 1, 0, 0x10, 0x02},
	} {
		if _, err := decodeMuxHeader(b); !errors.Is(err, ErrMuxHeader) {
			t.Errorf("%s: %v, want ErrMuxHeader", name, err)
		}
	}
}

// FuzzMuxHeader: the decoder of a connection's first bytes never panics,
// accepts only what the encoder writes, and what it accepts round-trips.
func FuzzMuxHeader(f *testing.F) {
	h := encodeMuxHeader(3)
	f.Add(h[:])
	f.Add([]byte("HDMX"))
	f.Add([]byte{'H', 'D', 'M', 'X', 1, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := decodeMuxHeader(b)
		if err != nil {
			if !errors.Is(err, ErrMuxHeader) {
				t.Fatalf("error %v is not ErrMuxHeader", err)
			}
			return
		}
		again := encodeMuxHeader(g)
		if !bytes.Equal(again[:], b) {
			t.Fatalf("accepted %x, which re-encodes as %x", b, again)
		}
	})
}

// raftConnGoroutines counts the goroutines serving a Raft connection
// (hashicorp/raft's NetworkTransport.handleConn).
func raftConnGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "raft.(*NetworkTransport).handleConn(")
}

// TestClosedHostsLeaveNoRaftConnections: once every node of a sharded
// cluster is closed, no goroutine serves a Raft connection of theirs: each
// group's layer closes the connections it accepted, and each group's
// transport the ones it dialed. Before, some of them (4 here, 15 after a
// four-shard bench run) waited on their reads for ever, holding the
// groups' memory.
func TestClosedHostsLeaveNoRaftConnections(t *testing.T) {
	before := raftConnGoroutines()
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders()
	during := raftConnGoroutines()
	if during <= before {
		t.Fatalf("%d goroutines serve Raft connections with the cluster up, %d before: the test sees none of the cluster's", during, before)
	}
	for id := range c.live() {
		c.kill(id)
	}
	deadline := time.Now().Add(20 * time.Second)
	for raftConnGoroutines() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still serve Raft connections after every node closed (%d before it started, %d while it ran)",
				raftConnGoroutines(), before, during)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A connection a group accepted and this node then closed (a node stops)
// reads as an ended stream, io.EOF, which hashicorp/raft's transport
// takes quietly: the closed socket's own error was logged as an error,
// one for every connection, at each clean stop.
func TestAcceptedConnClosedHereReadsEOF(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = peer.Close() }()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	l := &groupLayer{accepted: map[*layerConn]struct{}{}}
	lc := &layerConn{Conn: c, l: l}
	l.accepted[lc] = struct{}{}
	read := make(chan error, 1)
	go func() {
		_, err := lc.Read(make([]byte, 1))
		read <- err
	}()
	if err := lc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != io.EOF {
		t.Fatalf("a read of a connection closed here failed with %v, want io.EOF", err)
	}
	if len(l.accepted) != 0 {
		t.Fatal("the closed connection is still counted as accepted")
	}
}
