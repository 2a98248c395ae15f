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

// The listener holds at most MaxConns connections: another is served only
// once one closes.
func TestConnectionCap(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, addr := serveReal(t, ServerConfig{Service: e, MaxConns: 2})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		defer func() { _ = c.Close() }()
	}
	ask := func() (int, error) {
		cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 500 * time.Millisecond}
		resp, err := cl.Get("http://" + addr + "/v1/jobs")
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if _, err := ask(); err == nil {
		t.Fatal("a third connection was served while two were held")
	}
	_ = held[0].Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		st, err := ask()
		if err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection was served after one of the two closed: %v", err)
		}
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
