package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Header is the first line a node started with --chaos-proxy writes on
// every Raft connection it opens: "HEDDLE-CHAOS/1 <from-id> <target-addr>".
// It must equal cmd/heddle's ChaosHeader; the proxy test pins the format.
const Header = "HEDDLE-CHAOS/1"

// Pair is one direction of traffic: connections that node From opens to
// node To. A Raft connection carries both a request and its answer, so
// cutting From->To cuts From's calls to To and their replies.
type Pair struct{ From, To string }

// Proxy relays the nodes' Raft connections and cuts, refuses or delays
// those of the pairs its rules name.
type Proxy struct {
	ln      net.Listener
	targets map[string]string // Raft address -> node id

	mu      sync.Mutex
	blocked map[Pair]bool
	delay   map[Pair]time.Duration
	conns   map[*relay]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// relay is one proxied connection and its pair.
type relay struct {
	pair      Pair
	in, out   net.Conn
	closeOnce sync.Once
}

// close tears the relay down. The proxy cuts connections on purpose, and a
// failure to close one it is abandoning leaves it nothing to do, so the
// errors of closing connections are dropped here and in serve.
func (r *relay) close() {
	r.closeOnce.Do(func() {
		_ = r.in.Close()
		if r.out != nil {
			_ = r.out.Close()
		}
	})
}

// NewProxy listens on addr (use 127.0.0.1:0) and relays to the Raft
// addresses in targets, which maps each address to its node id.
func NewProxy(addr string, targets map[string]string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("chaos proxy: listening on %s: %w", addr, err)
	}
	p := &Proxy{ln: ln, targets: map[string]string{}, blocked: map[Pair]bool{},
		delay: map[Pair]time.Duration{}, conns: map[*relay]struct{}{}}
	for a, id := range targets {
		p.targets[a] = id
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address nodes pass to --chaos-proxy.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetRules replaces the rules: the blocked pairs and the per-pair delays.
// Open connections of a pair that is now blocked are cut at once, as a
// real partition would leave them hanging and Raft would time them out.
func (p *Proxy) SetRules(blocked []Pair, delay map[Pair]time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = map[Pair]bool{}
	for _, b := range blocked {
		p.blocked[b] = true
	}
	p.delay = map[Pair]time.Duration{}
	for k, v := range delay {
		p.delay[k] = v
	}
	for r := range p.conns {
		if p.blocked[r.pair] {
			r.close()
			delete(p.conns, r)
		}
	}
}

// Heal lifts every rule.
func (p *Proxy) Heal() { p.SetRules(nil, nil) }

// Blocked reports whether pair's traffic is refused now.
func (p *Proxy) Blocked(pair Pair) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked[pair]
}

// Close stops listening and cuts every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for r := range p.conns {
		r.close()
	}
	p.conns = map[*relay]struct{}{}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.serve(c) }()
	}
}

// serve reads the header, applies the rules and relays the stream.
func (p *Proxy) serve(in net.Conn) {
	br := bufio.NewReader(in)
	// Setting a deadline fails only on a closed connection, which the read
	// then reports.
	_ = in.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := br.ReadString('\n')
	if err == nil {
		err = in.SetReadDeadline(time.Time{})
	}
	if err != nil {
		_ = in.Close()
		return
	}
	from, target, err := parseHeader(line)
	if err != nil {
		_ = in.Close()
		return
	}
	to := target
	if id, ok := p.targets[target]; ok {
		to = id
	}
	r := &relay{pair: Pair{From: from, To: to}, in: in}
	if !p.register(r) {
		_ = in.Close()
		return
	}
	defer p.unregister(r)
	out, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		r.close()
		return
	}
	p.mu.Lock()
	r.out = out
	cut := p.blocked[r.pair] || p.closed
	p.mu.Unlock()
	if cut {
		r.close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.pipe(r, out, br, r.pair); done <- struct{}{} }()
	go func() { p.pipe(r, in, out, Pair{From: to, To: from}); done <- struct{}{} }()
	<-done
	r.close()
	<-done
}

// register admits r unless its pair is blocked or the proxy closed.
func (p *Proxy) register(r *relay) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.blocked[r.pair] {
		return false
	}
	p.conns[r] = struct{}{}
	return true
}

func (p *Proxy) unregister(r *relay) {
	p.mu.Lock()
	delete(p.conns, r)
	p.mu.Unlock()
	r.close()
}

// pipe copies src to dst, holding each chunk back by the delay rule of
// dir (the direction the bytes travel) at the time it is read.
func (p *Proxy) pipe(r *relay, dst io.Writer, src io.Reader, dir Pair) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d := p.delay[dir]
			p.mu.Unlock()
			if d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// parseHeader splits "HEDDLE-CHAOS/1 <from> <target>\n".
func parseHeader(line string) (from, target string, err error) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != Header {
		return "", "", fmt.Errorf("chaos proxy: header %q is not %q <from-id> <target-addr>", strings.TrimSpace(line), Header)
	}
	return f[1], f[2], nil
}
