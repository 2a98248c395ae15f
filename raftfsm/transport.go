package raftfsm

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is Raft's TCP stream layer with a replaceable dialer, so the
// chaos tests can route every connection a node opens through a
// fault-injecting proxy that knows which node is calling which, and with
// mutual TLS over whatever connection the dialer opened.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	dial      func(address string, timeout time.Duration) (net.Conn, error)
	tls       *tls.Config // nil: plain TCP
}

// handshakeTimeout bounds a TLS handshake on an accepted connection: a
// peer that connects and says nothing holds a goroutine that long at most.
const handshakeTimeout = 10 * time.Second

// Accept implements net.Listener. With TLS the handshake happens at the
// connection's first read or write, in the goroutine Raft serves it from,
// so a slow or hostile peer never holds up the accepting loop.
func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil || s.tls == nil {
		return c, err
	}
	return &serverConn{Conn: tls.Server(c, s.tls)}, nil
}

// serverConn is an accepted TLS connection whose handshake is bounded by
// handshakeTimeout.
type serverConn struct {
	*tls.Conn
	once sync.Once
	err  error
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		defer cancel()
		c.err = c.HandshakeContext(ctx)
	})
	return c.err
}

func (c *serverConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *serverConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// Addr implements net.Listener: the address peers are told to dial.
func (s *streamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.Listener.Addr()
}

// Dial implements raft.StreamLayer. With TLS the handshake is done here,
// within timeout, so a peer that refuses this node's certificate is a
// failed dial, which Raft retries with backoff.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	start := time.Now()
	var c net.Conn
	var err error
	if s.dial != nil {
		c, err = s.dial(string(address), timeout)
	} else {
		c, err = net.DialTimeout("tcp", string(address), timeout)
	}
	if err != nil || s.tls == nil {
		return c, err
	}
	tc := tls.Client(c, s.tls)
	ctx, cancel := context.WithTimeout(context.Background(), max(timeout-time.Since(start), time.Millisecond))
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("raftfsm: TLS handshake with %s: %w", address, err), c.Close())
	}
	return tc, nil
}

// newTransport returns the network transport: over the group's layer of a
// sharded node's multiplexer, or listening on cfg.RaftAddr.
func newTransport(cfg Config) (*raft.NetworkTransport, error) {
	if cfg.group.layer != nil {
		return networkTransport(cfg, cfg.group.layer), nil
	}
	addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: RaftAddr %q: %v", ErrConfig, cfg.RaftAddr, err)
	}
	if addr.IP == nil || addr.IP.IsUnspecified() {
		return nil, fmt.Errorf("%w: RaftAddr %q is not an address peers can dial", ErrConfig, cfg.RaftAddr)
	}
	ln, err := net.ListenTCP("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: Raft transport on %s: %w", cfg.RaftAddr, err)
	}
	return networkTransport(cfg, &streamLayer{Listener: ln, dial: cfg.Dial, tls: cfg.TLS}), nil
}

// networkTransport is hashicorp/raft's transport over layer, as every
// group of heddle configures it.
func networkTransport(cfg Config, layer raft.StreamLayer) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hclogger(cfg, "raft-net"),
	})
}

func logOutput(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
