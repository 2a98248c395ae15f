package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// serveReal serves cfg the way a deployment does, with the Server's own
// http.Server and listener, and returns the Server and its address.
func serveReal(t *testing.T, cfg ServerConfig) (*Server, string) {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	go func() { _ = hs.Serve(s.Listener(ln)) }()
	t.Cleanup(func() {
		s.Close()
		_ = hs.Close()
	})
	return s, ln.Addr().String()
}

// closedWithin reports whether the server closes conn within d (it reads,
// discarding whatever comes, until EOF or an error other than its own
// deadline).
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// A client that sends a body slowly, or stops half-way, is cut off after
// ReadTimeout; an idle kept-alive connection is closed after IdleTimeout.
// (With only ReadHeaderTimeout set, both stayed open indefinitely.)
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, addr := serveReal(t, ServerConfig{Service: e, ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slow.Close() }()
	if _, err := fmt.Fprint(slow, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"type\":"); err != nil {
		t.Fatal(err)
	}
	// It is told why before the connection closes: 408, not a server error.
	_ = slow.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(slow)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a connection whose body stalled got no answer within 3 s (ReadTimeout 300 ms): %v", err)
	}
	msg, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(msg), `"body_timeout"`) ||
		!strings.Contains(string(msg), "8 bytes of its 100 came within the server's read timeout (300ms)") {
		t.Fatalf("the stalled body was answered %d %s (%v)", resp.StatusCode, msg, err)
	}
	if !closedWithin(slow, 3*time.Second) {
		t.Fatal("a connection whose body stalled was still open after 3 s (ReadTimeout 300 ms)")
	}

	// A body that ends before its Content-Length is the client's fault too.
	short, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = short.Close() }()
	if _, err := fmt.Fprint(short, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	if err := short.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = short.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(short), nil)
	if err != nil {
		t.Fatalf("a body cut short got no answer: %v", err)
	}
	msg, err = io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "ended after 2 bytes of its 100") {
		t.Fatalf("a body cut short was answered %d %s (%v)", resp.StatusCode, msg, err)
	}

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idle.Close() }()
	if _, err := fmt.Fprint(idle, "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the first request: %v %v", resp, err)
	}
	if !closedWithin(idle, 3*time.Second) {
		t.Fatal("an idle kept-alive connection was still open after 3 s (IdleTimeout 300 ms)")
	}
}

// A long poll outlasts ReadTimeout: it is answered when its wait ends, or
// when what it waits for arrives, not cut off when the read deadline
// passes.
func TestLongPollsOutlastReadTimeout(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, addr := serveReal(t, ServerConfig{Service: e, ReadTimeout: 200 * time.Millisecond, MaxWait: 5 * time.Second})
	c := newClient(t, ClientConfig{Addrs: []string{addr}, PollWait: time.Second})
	ctx := context.Background()
	start := time.Now()
	r := postJSON(t, "http://"+addr+"/v1/jobs/claim?wait=1s", engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"jobs":[]`) || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("an empty long poll answered %d %s after %v", r.status, r.body, time.Since(start))
	}
	// A GET has no body: net/http watches its connection from the start,
	// and a read deadline passing would cancel the request.
	start = time.Now()
	r = doRaw(t, "GET", "http://"+addr+"/v1/jobs?after=0", nil, nil)
	if r.status != http.StatusOK {
		t.Fatal(r.status)
	}
	if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: "open", Type: "T", Queue: "other"}); err != nil {
		t.Fatal(err)
	}
	r = doRaw(t, "GET", "http://"+addr+"/v1/workflows/open/closed?wait=1s", nil, nil)
	if r.status != http.StatusOK || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("a closed long poll answered %d %s after %v", r.status, r.body, time.Since(start))
	}
	r = doRaw(t, "GET", "http://"+addr+"/v1/jobs/1/history?after=5&wait=1s", nil, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"events":[]`) {
		t.Fatalf("a history long poll answered %d %s", r.status, r.body)
	}
	go func() {
		time.Sleep(700 * time.Millisecond)
		if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: "late", Type: "T", Queue: "q"}); err != nil {
			t.Error(err)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	jobs, err := c.ClaimWait(wctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("a long poll woken after the read timeout: %v %v", jobs, err)
	}
}

// serveListener is serveReal, returning the listener too.
func serveListener(t *testing.T, cfg ServerConfig) (*limitListener, string) {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := s.Listener(ln).(*limitListener)
	hs := s.HTTPServer()
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		_ = hs.Close()
	})
	return l, ln.Addr().String()
}

// awaitConns waits until the listener holds open connections, busy of
// them serving a request (-1: any number), or fails t.
func awaitConns(t *testing.T, l *limitListener, open, busy int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		o, b, changed := l.state()
		if o == open && (busy < 0 || b == busy) {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the listener holds %d connections, %d busy; want %d, %d", o, b, open, busy)
		}
	}
}

// dialIdle opens n connections that send nothing.
func dialIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// ask makes one request on a connection of its own, within a bound that
// only a server that keeps it waiting reaches.
func ask(method, url, token string, body []byte) (int, error) {
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentJSON)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// rawGet sends GET path on c and reads the answer, keeping c open.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) int {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s on a kept-alive connection: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// One client that opens MaxConns connections and leaves them idle keeps
// no one out: the next connection is served at once, and the idle one
// that waited longest is closed. Before, the next one waited in the
// kernel's queue until an idle one timed out (up to 9.75 s were seen),
// and health probes timed out.
func TestIdleConnectionsAreShedWhenFull(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	l, addr := serveListener(t, ServerConfig{Service: e, MaxConns: 3, AuthToken: testToken})
	var idle []net.Conn
	for _, path := range []string{"/healthz", "/readyz", "/v1/jobs"} {
		idle = append(idle, dialIdle(t, addr, 3-len(idle))...)
		awaitConns(t, l, 3, 0)
		if st, err := ask("GET", "http://"+addr+path, testToken, nil); err != nil || st != http.StatusOK {
			t.Fatalf("GET %s while an idle client holds every connection: %d %v", path, st, err)
		}
		if !closedWithin(idle[0], 5*time.Second) {
			t.Fatalf("the oldest idle connection was not closed for GET %s", path)
		}
		idle = idle[1:]
		awaitConns(t, l, 2, 0) // the ask's own connection closed after it
	}

	// A connection that served a request and waits for the next is shed
	// only after those that never sent one, though it is older.
	for _, c := range idle {
		_ = c.Close()
	}
	awaitConns(t, l, 0, 0)
	kept := dialIdle(t, addr, 1)[0]
	br := bufio.NewReader(kept)
	if st := rawGet(t, kept, br, "/healthz"); st != http.StatusOK {
		t.Fatalf("a probe on the kept connection: %d", st)
	}
	idle = dialIdle(t, addr, 2)
	awaitConns(t, l, 3, 0)
	if st, err := ask("GET", "http://"+addr+"/healthz", "", nil); err != nil || st != http.StatusOK {
		t.Fatalf("a probe: %d %v", st, err)
	}
	if !closedWithin(idle[0], 5*time.Second) {
		t.Fatal("the oldest connection that never sent a request was not the one shed")
	}
	if st := rawGet(t, kept, br, "/healthz"); st != http.StatusOK {
		t.Fatalf("the kept-alive connection, reused: %d", st)
	}
}

// When every connection is serving a request (here long polls), health
// probes are still answered, on connections beyond MaxConns that take
// probes only; anything else there is answered 503 busy, and the
// connection closed.
func TestProbesAreAnsweredWhenEveryConnectionIsBusy(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	l, addr := serveListener(t, ServerConfig{Service: e, MaxConns: 2, AuthToken: testToken})
	claim := mustJSON(t, engine.Claim{Queue: "nobody", Owner: "w", Max: 1, LeaseMS: 1000})
	for range 2 {
		go func() { _, _ = ask("POST", "http://"+addr+"/v1/jobs/claim?wait=30s", testToken, claim) }()
	}
	awaitConns(t, l, 2, 2)
	for _, path := range []string{"/healthz", "/readyz"} {
		if st, err := ask("GET", "http://"+addr+path, "", nil); err != nil || st != http.StatusOK {
			t.Fatalf("GET %s while every connection serves a long poll: %d %v", path, st, err)
		}
	}
	if st, err := ask("GET", "http://"+addr+"/v1/jobs", testToken, nil); err != nil || st != http.StatusServiceUnavailable {
		t.Fatalf("a read on a probe connection: %d %v, want 503", st, err)
	}
	awaitConns(t, l, 2, 2)
}

// A caller without credentials is answered 401 and its connection closed
// at once, its body unread: it cannot hold a connection by sending a body
// slowly. Before, the server read on until ReadTimeout (30 s).
func TestUnauthenticatedConnectionIsClosed(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, addr := serveListener(t, ServerConfig{Service: e, AuthToken: testToken})
	c := dialIdle(t, addr, 1)[0]
	if _, err := fmt.Fprint(c, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"type\":"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unauthenticated request: %v %v", resp, err)
	}
	if !closedWithin(c, 5*time.Second) {
		t.Fatal("the connection of a refused request stayed open for its body")
	}
}

// The request bodies held at once stay within MaxInflightBodyBytes: a
// request whose body does not fit waits until one that holds bytes is
// answered, and once the burst is over the memory is given back.
func TestBodyBudgetBoundsConcurrentBodies(t *testing.T) {
	e := openEngine(t, engine.Limits{MaxPayloadBytes: 1 << 20})
	s, addr := serveReal(t, ServerConfig{Service: e, MaxBodyBytes: 1 << 20, MaxInflightBodyBytes: 4 << 20})
	var gcs atomic.Int64
	s.budget.gc = func() { gcs.Add(1) }
	body := mustJSON(t, engine.CreateJob{Type: "T", Queue: "q", Input: bytes.Repeat([]byte("x"), 700_000)})

	// Two connections send all but the last byte of a body that fits the
	// budget only twice: the budget is then full.
	var stalled []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		if _, err := fmt.Fprintf(c, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)-1]); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	// Each body reserves twice its length: its bytes and what is decoded
	// from them.
	waitFor(t, func() bool { return s.budget.inUse() == int64(2*decodedShare*len(body)) })
	// A third must wait for room.
	var third sync.WaitGroup
	third.Add(1)
	var status atomic.Int64
	go func() {
		defer third.Done()
		r := doRaw(t, "POST", "http://"+addr+"/v1/jobs", body, map[string]string{"Content-Type": contentJSON})
		status.Store(int64(r.status))
	}()
	time.Sleep(300 * time.Millisecond)
	if status.Load() != 0 || s.budget.inUse() > 4<<20 {
		t.Fatalf("a body beyond the budget was taken: status %d, %d bytes in use", status.Load(), s.budget.inUse())
	}
	// One stalled body completes: the third gets its room and is served.
	if _, err := stalled[0].Write(body[len(body)-1:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(stalled[0]), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the completed body: %v %v", resp, err)
	}
	third.Wait()
	if status.Load() != http.StatusOK {
		t.Fatalf("the waiting request answered %d", status.Load())
	}
	if _, err := stalled[1].Write(body[len(body)-1:]); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(stalled[1]), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the second body: %v %v", resp, err)
	}
	waitFor(t, func() bool { return s.budget.inUse() == 0 && gcs.Load() >= 1 })

	// A body of unknown length is held to the same budget, step by step.
	r := doRaw(t, "POST", "http://"+addr+"/v1/jobs", body, map[string]string{"Content-Type": contentJSON, "Transfer-Encoding": "chunked"})
	if r.status != http.StatusOK || s.budget.inUse() != 0 {
		t.Fatalf("a chunked body: %d %s, %d bytes left in use", r.status, r.body, s.budget.inUse())
	}
	// A body over MaxBodyBytes is refused from its Content-Length, unread.
	big := bytes.Repeat([]byte("x"), 2<<20)
	if r := doRaw(t, "POST", "http://"+addr+"/v1/jobs", big, map[string]string{"Content-Type": contentJSON}); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("an oversized body answered %d", r.status)
	}
}

// A request that finds no room in the body budget within its wait is
// answered 503 busy, naming the limit, and writes nothing; the Client,
// which retries a 503, gets through once a body is answered and its
// bytes come back.
func TestFullBodyBudgetAnswersBusy(t *testing.T) {
	e := openEngine(t, engine.Limits{MaxPayloadBytes: 1 << 20})
	s, addr := serveReal(t, ServerConfig{Service: e, MaxBodyBytes: 1 << 20, MaxInflightBodyBytes: 1 << 20})
	s.budget.wait = 200 * time.Millisecond
	body := mustJSON(t, engine.CreateJob{Type: "T", Queue: "q", Input: bytes.Repeat([]byte("x"), 400_000)})
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stalled.Close() }()
	if _, err := fmt.Fprintf(stalled, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)-1]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.budget.inUse() == 1<<20 }) // twice the body is more than the budget: all of it
	before := keyspaceHash(t, e)
	r := doRaw(t, "POST", "http://"+addr+"/v1/jobs", body, map[string]string{"Content-Type": contentJSON})
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("a body beyond a full budget: %d %s", r.status, r.body)
	}
	if b := errorBodyOf(t, r); b.Name != "busy" || !strings.Contains(b.Message, "MaxInflightBodyBytes") {
		t.Fatalf("error %q %q", b.Name, b.Message)
	}
	if keyspaceHash(t, e) != before {
		t.Fatal("a busy answer wrote")
	}
	cl, err := NewClient(ClientConfig{Addrs: []string{addr}, RetryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := cl.Create(context.Background(), engine.CreateJob{WorkflowID: "after-busy", Type: "T", Queue: "q", Input: bytes.Repeat([]byte("y"), 400_000)})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the budget is full: the client waits, is refused busy, retries
	if _, err := stalled.Write(body[len(body)-1:]); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(stalled), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the stalled body: %v %v", resp, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the client's start after the budget freed: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
	}
}

// A stale read says where it came from: the node, its term, what it had
// applied and whether it knew of a leader, so a node cut off from the
// others no longer answers exactly like a fresh one. The Client hands the
// headers over through WithReadInfo.
func TestStaleReadsCarryTheirOrigin(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	ctx := context.Background()
	if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: "w", Type: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	cut := &stateCluster{id: "n3", term: 7, applied: 99}
	_, hs := serve(t, ServerConfig{Service: followerService{e}, Cluster: cut})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}, RetryTimeout: 1})
	var info ReadInfo
	if _, err := c.Describe(WithReadInfo(engine.WithStaleRead(ctx), &info), engine.Target{WorkflowID: "w"}); err != nil {
		t.Fatal(err)
	}
	if want := (ReadInfo{Stale: true, NodeID: "n3", Term: 7, AppliedIndex: 99}); info != want {
		t.Fatalf("a node cut off: %+v, want %+v", info, want)
	}
	cut.leader = "n1"
	if _, err := c.Describe(WithReadInfo(engine.WithStaleRead(ctx), &info), engine.Target{WorkflowID: "w"}); err != nil {
		t.Fatal(err)
	}
	if !info.LeaderKnown || info.LeaderID != "n1" {
		t.Fatalf("a node with a leader: %+v", info)
	}
	// A node running alone is its own leader.
	_, solo := serve(t, ServerConfig{Service: e})
	r := doRaw(t, "GET", solo.URL+"/v1/workflows/w?stale=1", nil, nil)
	if r.header.Get(HeaderStale) != "1" || r.header.Get(HeaderLeaderKnown) != "true" {
		t.Fatalf("embedded stale read headers: %v", r.header)
	}
	// A linearizable read carries none.
	r = doRaw(t, "GET", solo.URL+"/v1/workflows/w", nil, nil)
	if r.header.Get(HeaderStale) != "" {
		t.Fatalf("a linearizable read is marked stale: %v", r.header)
	}
}

// stateCluster is a Cluster that reports a fixed read state.
type stateCluster struct {
	recordingCluster
	id, leader    string
	term, applied uint64
}

func (c *stateCluster) ReadState() (string, uint64, uint64, string) {
	return c.id, c.term, c.applied, c.leader
}
