package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"
)

func mustCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func pool(ca *CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// keyPair returns a function that turns an issued certificate into a
// tls.Certificate, failing t on an error: keyPair(t)(ca.NodeCert(...)).
func keyPair(t *testing.T) func(Issued, error) tls.Certificate {
	return func(is Issued, err error) tls.Certificate {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

func TestNodeAndClientNames(t *testing.T) {
	ca := mustCA(t)
	n := keyPair(t)(ca.NodeCert("n1", []string{"127.0.0.1", "localhost"}))
	if err := CheckNode(n, pool(ca), "n1"); err != nil {
		t.Fatal(err)
	}
	if err := CheckNode(n, pool(ca), "n2"); !errors.Is(err, ErrNotNode) {
		t.Fatalf("n1's certificate passed as n2's: %v", err)
	}
	if err := CheckNode(n, pool(mustCA(t)), "n1"); !errors.Is(err, ErrNotNode) {
		t.Fatalf("a certificate of another CA passed: %v", err)
	}
	if len(n.Leaf.IPAddresses) != 1 || len(n.Leaf.DNSNames) != 1 {
		t.Fatalf("hosts: %v %v", n.Leaf.IPAddresses, n.Leaf.DNSNames)
	}
	c := keyPair(t)(ca.ClientCert("alice", "worker"))
	if name, role, ok := ClientName(c.Leaf); !ok || name != "alice" || role != "worker" {
		t.Fatalf("client name %q %q %v", name, role, ok)
	}
	if err := CheckNode(c, pool(ca), "alice"); !errors.Is(err, ErrNotNode) {
		t.Fatalf("a client certificate passed as a node's: %v", err)
	}
	if _, err := ca.NodeCert("a/b", nil); !errors.Is(err, ErrBadCert) {
		t.Fatalf("node id with a slash: %v", err)
	}
}

// handshake runs a TLS handshake between a server and a client config and
// returns each side's error.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	// A TCP pair, not net.Pipe: a TLS 1.3 server writes session tickets
	// after the handshake, which a synchronous pipe would block on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		_ = s.SetDeadline(time.Now().Add(5 * time.Second))
		err := s.Handshake()
		if err == nil {
			// A TLS 1.3 server learns of a refused client certificate only
			// when the client's alert arrives: read it.
			_, err = s.Read(make([]byte, 1))
		}
		done <- err
		_ = s.Close()
	}()
	c := tls.Client(b, client)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	clientErr = c.Handshake()
	if clientErr == nil {
		_, _ = c.Write([]byte{1})
	}
	_ = c.Close()
	return <-done, clientErr
}

// Two nodes of one CA talk; a peer without a node certificate of that CA
// is refused at either end.
func TestPeerTLS(t *testing.T) {
	ca := mustCA(t)
	n1 := PeerTLS(keyPair(t)(ca.NodeCert("n1", nil)), pool(ca))
	n2 := PeerTLS(keyPair(t)(ca.NodeCert("n2", nil)), pool(ca))
	if se, ce := handshake(t, n1, n2); se != nil || ce != nil {
		t.Fatalf("node to node: server %v, client %v", se, ce)
	}
	other := mustCA(t)
	stranger := PeerTLS(keyPair(t)(other.NodeCert("n9", nil)), pool(other))
	if se, _ := handshake(t, n1, stranger); se == nil {
		t.Fatal("a node of another CA was let in")
	}
	if _, ce := handshake(t, stranger, n1); ce == nil {
		t.Fatal("a node dialled a server of another CA")
	}
	client := PeerTLS(keyPair(t)(ca.ClientCert("alice", "admin")), pool(ca))
	if se, _ := handshake(t, n1, client); se == nil {
		t.Fatal("a client certificate was let in as a peer")
	}
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	if se, _ := handshake(t, n1, noCert); se == nil {
		t.Fatal("a peer without a certificate was let in")
	}
}
