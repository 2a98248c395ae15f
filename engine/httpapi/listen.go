package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// HTTPServer returns an http.Server that serves s with the timeouts of its
// config (see ServerConfig.ReadTimeout): headers and body must arrive in
// ReadHeaderTimeout and ReadTimeout, an answer may take MaxWait plus
// WriteTimeout (the handler moves the write deadline so as the request is
// read), and a connection idle for IdleTimeout is closed. Serve it on a
// listener from s.Listener, which caps the connections.
func (s *Server) HTTPServer() *http.Server { return s.HTTPServerFor(s) }

// HTTPServerFor is HTTPServer serving h, a handler that serves s among
// others (a UI beside the API). Keep its ConnState and ConnContext hooks:
// a listener from s.Listener learns from them which connections it may
// shed (see Listener). A ConnState of one's own should call the one it
// replaces.
func (s *Server) HTTPServerFor(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           connHandler(h),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.MaxWait + s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         connState,
		ConnContext:       connContext,
	}
}

// ProbeConns is how many connections a listener from Server.Listener
// accepts beyond ServerConfig.MaxConns when all of those are serving
// requests: on them it answers GET /healthz and GET /readyz, and 503
// busy to anything else, and closes each after one answer. So a probe is
// answered however full the server is.
const ProbeConns = 16

// Listener wraps ln so that it holds at most ServerConfig.MaxConns
// connections open at once, and answers health probes beyond them. When
// all MaxConns are open and another connection arrives, the listener
// closes the one that has waited longest without a request being served
// on it: first those that never carried a request to its handler
// (opened and left, or sending their headers slowly), then those idle
// between requests. A connection whose request is being served is never
// closed. When every connection is serving a request, the new one is
// taken as one of ProbeConns probe connections; when those are full too,
// Accept waits until a connection closes or turns idle, and the others
// wait in the kernel's queue.
//
// So one client, however many connections it opens and leaves idle,
// cannot keep others out; it can only hold connections busy with requests
// the server serves, which need a token where the server has tokens (a
// request refused 401 has its connection closed at once, its body
// unread).
//
// The listener learns which connections serve requests from the
// http.Server's hooks: serve it with s.HTTPServer or s.HTTPServerFor.
func (s *Server) Listener(ln net.Listener) net.Listener {
	l := &limitListener{Listener: ln, max: s.cfg.MaxConns, spare: ProbeConns,
		conns: map[*slotConn]struct{}{}, done: make(chan struct{}), changed: make(chan struct{})}
	return l
}

// limitListener is Server.Listener's.
type limitListener struct {
	net.Listener
	max, spare int
	done       chan struct{}
	closeOnce  sync.Once

	mu    sync.Mutex
	conns map[*slotConn]struct{}
	// regular and probes count the open connections of each kind.
	regular, probes int
	// seq numbers the events that order the connections for shedding.
	seq uint64
	// changed is closed, and replaced, whenever a connection is
	// admitted, closes, or turns idle or busy: Accept waits on it for
	// room, and tests for a state.
	changed chan struct{}
}

// slotConn is one accepted connection.
type slotConn struct {
	net.Conn
	l    *limitListener
	once sync.Once

	// Guarded by l.mu.
	// probe: one of the ProbeConns beyond MaxConns.
	probe bool
	// busy: a request is in the handler, or its answer is being written.
	busy bool
	// served: a request reached the handler once.
	served bool
	// since is the seq of its accept, or of when it last turned idle.
	since uint64
}

// Accept takes the next connection and admits it, shedding another if the
// listener is full (see Server.Listener).
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		sc, victim, wait := l.admit(c)
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close() // the shed connection's client sees it closed, as after an idle timeout
		}
		if sc != nil {
			return sc, nil
		}
		select {
		case <-wait:
		case <-l.done:
			_ = c.Close() // the listener is closed: no one will serve it
			return nil, net.ErrClosed
		}
	}
}

// admit admits c if there is room, making room by shedding a victim (the
// caller closes it) if it can; else it returns what to wait on.
func (l *limitListener) admit(c net.Conn) (sc *slotConn, victim *slotConn, wait <-chan struct{}) {
	l.seq++
	sc = &slotConn{Conn: c, l: l, since: l.seq}
	if l.regular >= l.max {
		victim = l.victim()
	}
	switch {
	case l.regular < l.max:
	case victim != nil:
		// The victim's slot, a regular one or a probe's, passes to c: its
		// Close frees none.
		l.forget(victim)
		sc.probe = victim.probe
	case l.probes < l.spare:
		sc.probe = true
	default:
		return nil, nil, l.changed
	}
	if sc.probe {
		l.probes++
	} else {
		l.regular++
	}
	l.conns[sc] = struct{}{}
	l.signal()
	return sc, victim, nil
}

// victim is the connection to shed: the one without a request in service
// that has waited longest, those that never served one first; nil if all
// are serving requests.
func (l *limitListener) victim() *slotConn {
	var best *slotConn
	for c := range l.conns {
		if c.busy {
			continue
		}
		if best == nil || c.served != best.served && !c.served || c.served == best.served && c.since < best.since {
			best = c
		}
	}
	return best
}

// forget removes c from the open connections; its Close frees nothing.
func (l *limitListener) forget(c *slotConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if c.probe {
		l.probes--
	} else {
		l.regular--
	}
	l.signal()
}

// signal wakes whoever waits on changed. Called with l.mu held.
func (l *limitListener) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// state counts the open connections and those serving a request, and
// returns a channel closed at the next change (for tests).
func (l *limitListener) state() (open, busy int, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if c.busy {
			busy++
		}
	}
	return len(l.conns), busy, l.changed
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Close closes the connection and gives its slot back, once.
func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.forget(c)
		c.l.mu.Unlock()
	})
	return err
}

// setBusy marks c as serving a request (its handler started) or not (it
// turned idle, or closed).
func (c *slotConn) setBusy(busy bool) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if busy {
		c.served = true
	} else {
		c.l.seq++
		c.since = c.l.seq
	}
	if c.busy != busy {
		c.busy = busy
		c.l.signal()
	}
}

// isProbeConn reports whether c is one of the probe connections.
func (c *slotConn) isProbeConn() bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.probe
}

// slotOf finds the slotConn under c (a *tls.Conn wraps it), or nil.
func slotOf(c net.Conn) *slotConn {
	for {
		switch x := c.(type) {
		case *slotConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
}

// connKey carries a request's slotConn in its context.
type connKey struct{}

// connContext is the http.Server's ConnContext: it puts the connection's
// slotConn in the context of the requests it carries.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if sc := slotOf(c); sc != nil {
		return context.WithValue(ctx, connKey{}, sc)
	}
	return ctx
}

// connState is the http.Server's ConnState: a connection that turns idle
// (its answer written) or closes serves no request any more.
func connState(c net.Conn, st http.ConnState) {
	if st != http.StateIdle && st != http.StateClosed && st != http.StateHijacked {
		return
	}
	if sc := slotOf(c); sc != nil {
		sc.setBusy(false)
	}
}

// connHandler marks a request's connection busy while it is served, and
// lets a probe connection carry only health probes, closing it after its
// one answer.
func connHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc, _ := r.Context().Value(connKey{}).(*slotConn)
		if sc == nil {
			h.ServeHTTP(w, r)
			return
		}
		sc.setBusy(true)
		if !sc.isProbeConn() {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if isProbe(r) {
			h.ServeHTTP(w, r)
			return
		}
		c := &call{w: w, r: r, out: responseFormat(r)}
		status, body := errorFor(fmt.Errorf("%w: all of the server's connections (ServerConfig.MaxConns) are serving requests; "+
			"this one may ask only GET /healthz and GET /readyz; try again", ErrBusy))
		c.reply(status, body)
	})
}
