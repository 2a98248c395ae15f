package httpapi

import (
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
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.MaxWait + s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// Listener wraps ln so that it holds at most ServerConfig.MaxConns
// connections open at once: Accept waits until one closes. The waiting
// connections stay in the kernel's accept queue.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, s.cfg.MaxConns), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Accept takes a slot, then a connection; the slot is given back when the
// connection is closed.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// slotConn gives its listener slot back when it is first closed.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
