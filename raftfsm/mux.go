package raftfsm

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A sharded node runs many Raft groups (the metadata group and one per
// shard it holds) over one listening port (docs/sharding.md, "One
// transport per node"). Each group has its own hashicorp/raft
// NetworkTransport, over a stream layer of the node's multiplexer: a
// connection one group dials carries, after the TLS handshake, a fixed
// header naming the group, and the multiplexer's listener hands each
// accepted connection to the group its header names.

// muxMagic opens every multiplexed connection.
const muxMagic = "HDMX"

// muxVersion is the header's version; a reader refuses another.
const muxVersion = 1

// muxHeaderLen is the header's size: magic, version, flags, group.
const muxHeaderLen = 8

// metaGroupNumber is the group number of the metadata group; shard k is group
// k+1.
const metaGroupNumber = 0

// maxGroup is the largest group number: that of host calls (hostrpc.go),
// after the last shard's.
const maxGroup = hostRPCGroup

// MaxShardGroups is the number of shard groups a node may serve, and so
// the largest group number (engine.MaxShards).
const MaxShardGroups = 4096

// muxHeaderTimeout bounds the TLS handshake and the header of an accepted
// connection: a peer that connects and says nothing holds its goroutine
// that long at most.
const muxHeaderTimeout = handshakeTimeout

// ErrMuxHeader: an accepted connection did not start with a valid group
// header (see decodeMuxHeader).
var ErrMuxHeader = errors.New("raftfsm: bad connection header")

// encodeMuxHeader returns the header of a connection to group g.
func encodeMuxHeader(g uint16) [muxHeaderLen]byte {
	var h [muxHeaderLen]byte
	copy(h[:4], muxMagic)
	h[4] = muxVersion
	h[5] = 0 // flags: none defined
	binary.BigEndian.PutUint16(h[6:], g)
	return h
}

// decodeMuxHeader reads the group a connection's header names. It reads
// exactly muxHeaderLen bytes, so it allocates nothing and no peer can make
// it read more; anything but this version's header with no flags and a
// group up to maxGroup is refused.
func decodeMuxHeader(b []byte) (uint16, error) {
	switch {
	case len(b) != muxHeaderLen:
		return 0, fmt.Errorf("%w: %d bytes, want %d", ErrMuxHeader, len(b), muxHeaderLen)
	case string(b[:4]) != muxMagic:
		return 0, fmt.Errorf("%w: it does not start with %q (a peer of a cluster of one Raft group?)", ErrMuxHeader, muxMagic)
	case b[4] != muxVersion:
		return 0, fmt.Errorf("%w: version %d, this node reads %d", ErrMuxHeader, b[4], muxVersion)
	case b[5] != 0:
		return 0, fmt.Errorf("%w: flags %#x, none are defined", ErrMuxHeader, b[5])
	}
	g := binary.BigEndian.Uint16(b[6:])
	if g > maxGroup {
		return 0, fmt.Errorf("%w: group %d is over %d", ErrMuxHeader, g, maxGroup)
	}
	return g, nil
}

// muxListener accepts the node's Raft connections and hands each to its
// group's layer.
type muxListener struct {
	ln        net.Listener
	advertise net.Addr
	dial      func(address string, timeout time.Duration) (net.Conn, error)
	tls       *tls.Config // nil: plain TCP
	log       hclog.Logger

	mu     sync.Mutex
	groups map[uint16]*groupLayer
	closed bool
	wg     sync.WaitGroup
}

// newMux listens on addr. Groups are added with layer before their Raft
// starts; connections for a group not added are closed.
func newMux(addr string, dial func(string, time.Duration) (net.Conn, error), tlsConfig *tls.Config, log hclog.Logger) (*muxListener, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: RaftAddr %q: %v", ErrConfig, addr, err)
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return nil, fmt.Errorf("%w: RaftAddr %q is not an address peers can dial", ErrConfig, addr)
	}
	ln, err := net.ListenTCP("tcp", tcp)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: Raft transport on %s: %w", addr, err)
	}
	m := &muxListener{ln: ln, dial: dial, tls: tlsConfig, log: log, groups: map[uint16]*groupLayer{}}
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

// Addr is the address peers dial.
func (m *muxListener) Addr() net.Addr {
	if m.advertise != nil {
		return m.advertise
	}
	return m.ln.Addr()
}

// layer returns the stream layer of group g, creating it.
func (m *muxListener) layer(g uint16) *groupLayer {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.groups[g]; ok {
		return l
	}
	l := &groupLayer{mux: m, group: g, conns: make(chan net.Conn, 16), done: make(chan struct{}), accepted: map[*layerConn]struct{}{}}
	m.groups[g] = l
	return l
}

// close stops accepting and closes the listener; the groups' layers are
// closed by their transports.
func (m *muxListener) close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	err := m.ln.Close()
	m.wg.Wait()
	return err
}

func (m *muxListener) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			m.mu.Lock()
			closed := m.closed
			m.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// A temporary failure (out of file descriptors): back off as
			// net/http does rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Warn("accepting a Raft connection failed", "error", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		go m.route(c)
	}
}

// route completes an accepted connection's handshake, reads its header and
// hands it to its group, or closes it. It runs on the connection's own
// goroutine, so a slow or hostile peer holds up no other.
func (m *muxListener) route(c net.Conn) {
	conn, g, err := m.open(c)
	if err != nil {
		m.log.Debug("refused a Raft connection", "remote", c.RemoteAddr(), "error", err)
		_ = c.Close()
		return
	}
	m.mu.Lock()
	l, ok := m.groups[g]
	m.mu.Unlock()
	if !ok {
		m.log.Debug("refused a Raft connection for a group this node does not serve", "remote", c.RemoteAddr(), "group", g)
		_ = conn.Close()
		return
	}
	select {
	case l.conns <- conn:
	case <-l.done:
		_ = conn.Close()
	}
}

// open does the TLS handshake (with TLS) and reads the header, within
// muxHeaderTimeout.
func (m *muxListener) open(c net.Conn) (net.Conn, uint16, error) {
	deadline := time.Now().Add(muxHeaderTimeout)
	conn := c
	if m.tls != nil {
		tc := tls.Server(c, m.tls)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			return nil, 0, err
		}
		conn = tc
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return nil, 0, err
	}
	var h [muxHeaderLen]byte
	if _, err := io.ReadFull(conn, h[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrMuxHeader, err)
	}
	g, err := decodeMuxHeader(h[:])
	if err != nil {
		return nil, 0, err
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		return nil, 0, err
	}
	return conn, g, nil
}

// groupLayer is one group's raft.StreamLayer over the multiplexer.
type groupLayer struct {
	mux   *muxListener
	group uint16
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}

	// accepted holds the connections Accept handed to the group's
	// transport and not closed since, for Close to close: hashicorp/raft's
	// transport closes its listener at shutdown but not the connections
	// it accepted, whose goroutines would wait on their reads until the
	// peer closed them, holding the group's memory.
	acceptedMu sync.Mutex
	accepted   map[*layerConn]struct{}
}

// layerConn is a connection the layer accepted; closing it forgets it.
type layerConn struct {
	net.Conn
	l      *groupLayer
	once   sync.Once
	closed atomic.Bool
}

// Read reads the connection. Once this side closed it, a read fails with
// io.EOF, an ended stream, instead of the closed socket's error:
// hashicorp/raft's transport logs every error of a read but io.EOF, and a
// node that stops closes every connection its groups accepted, which
// logged one error a connection at each clean stop.
func (c *layerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && c.closed.Load() {
		err = io.EOF
	}
	return n, err
}

func (c *layerConn) Close() error {
	c.closed.Store(true)
	c.once.Do(func() {
		c.l.acceptedMu.Lock()
		delete(c.l.accepted, c)
		c.l.acceptedMu.Unlock()
	})
	return c.Conn.Close()
}

var _ raft.StreamLayer = (*groupLayer)(nil)

// errLayerClosed is what Accept returns once the group's transport closed.
var errLayerClosed = errors.New("raftfsm: the group's transport is closed")

// Accept implements net.Listener: the next connection for this group.
func (l *groupLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		lc := &layerConn{Conn: c, l: l}
		l.acceptedMu.Lock()
		defer l.acceptedMu.Unlock()
		select {
		case <-l.done:
			// Closed meanwhile: Close has closed the ones it found.
			_ = c.Close()
			return nil, errLayerClosed
		default:
		}
		l.accepted[lc] = struct{}{}
		return lc, nil
	case <-l.done:
		return nil, errLayerClosed
	}
}

// Close implements net.Listener for this group alone; the port stays open
// for the others until the node closes the multiplexer.
func (l *groupLayer) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.mux.mu.Lock()
		if l.mux.groups[l.group] == l {
			delete(l.mux.groups, l.group)
		}
		l.mux.mu.Unlock()
		l.acceptedMu.Lock()
		open := make([]*layerConn, 0, len(l.accepted))
		for c := range l.accepted {
			open = append(open, c)
		}
		l.acceptedMu.Unlock()
		for _, c := range open {
			_ = c.Close()
		}
		for {
			select {
			case c := <-l.conns:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return nil
}

// Addr implements net.Listener: the node's one Raft address.
func (l *groupLayer) Addr() net.Addr { return l.mux.Addr() }

// Dial implements raft.StreamLayer: a connection to the group on the node
// at address, through the node's dialer, with TLS, then the header.
func (l *groupLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	start := time.Now()
	var c net.Conn
	var err error
	if l.mux.dial != nil {
		c, err = l.mux.dial(string(address), timeout)
	} else {
		c, err = net.DialTimeout("tcp", string(address), timeout)
	}
	if err != nil {
		return nil, err
	}
	conn := c
	if l.mux.tls != nil {
		tc := tls.Client(c, l.mux.tls)
		ctx, cancel := context.WithTimeout(context.Background(), max(timeout-time.Since(start), time.Millisecond))
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("raftfsm: TLS handshake with %s: %w", address, err), c.Close())
		}
		conn = tc
	}
	h := encodeMuxHeader(l.group)
	if err := conn.SetWriteDeadline(time.Now().Add(max(timeout-time.Since(start), time.Millisecond))); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	if _, err := conn.Write(h[:]); err != nil {
		return nil, errors.Join(fmt.Errorf("raftfsm: the group header to %s: %w", address, err), conn.Close())
	}
	if err := conn.SetWriteDeadline(time.Time{}); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	return conn, nil
}
