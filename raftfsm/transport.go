package raftfsm

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is Raft's TCP stream layer with a replaceable dialer, so the
// chaos tests can route every connection a node opens through a
// fault-injecting proxy that knows which node is calling which.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	dial      func(address string, timeout time.Duration) (net.Conn, error)
}

// Addr implements net.Listener: the address peers are told to dial.
func (s *streamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.Listener.Addr()
}

// Dial implements raft.StreamLayer.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if s.dial != nil {
		return s.dial(string(address), timeout)
	}
	return net.DialTimeout("tcp", string(address), timeout)
}

// newTransport listens on cfg.RaftAddr and returns the network transport.
func newTransport(cfg Config) (*raft.NetworkTransport, error) {
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
	layer := &streamLayer{Listener: ln, dial: cfg.Dial}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hclogger(cfg, "raft-net"),
	}), nil
}

func logOutput(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
