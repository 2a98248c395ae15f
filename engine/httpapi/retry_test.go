package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/vmihailenco/msgpack/v5"
)

// fault is what a faultyHandler does to one request.
type fault int

const (
	pass         fault = iota // serve it
	applyAndDrop              // serve it, then break the connection before answering
	applyAnd503               // serve it, then answer 503 unknown_outcome
	refuse503                 // answer 503 closed without serving it
)

// faultyHandler plays faults in front of a server, one per request, and
// records the request id of every create it sees.
type faultyHandler struct {
	next   http.Handler
	mu     sync.Mutex
	faults []fault
	ids    []string
}

func (h *faultyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.mu.Lock()
	f := pass
	if len(h.faults) > 0 {
		f, h.faults = h.faults[0], h.faults[1:]
	}
	var cmd engine.CreateJob
	if r.URL.Path == "/v1/jobs" && msgpack.Unmarshal(body, &cmd) == nil {
		h.ids = append(h.ids, cmd.RequestID)
	}
	h.mu.Unlock()
	switch f {
	case pass:
		h.next.ServeHTTP(w, r)
	case applyAndDrop:
		h.next.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		if err := conn.Close(); err != nil {
			panic(err) // the fault this case injects did not happen
		}
	case applyAnd503:
		h.next.ServeHTTP(httptest.NewRecorder(), r)
		writeError(w, engine.ErrUnknownOutcome)
	case refuse503:
		writeError(w, engine.ErrClosed)
	}
}

func writeError(w http.ResponseWriter, err error) {
	status, body := errorFor(err)
	b, _ := encodeBody(formatMsgpack, body)
	w.Header().Set("Content-Type", contentMsgpack)
	w.WriteHeader(status)
	_, _ = w.Write(b) // a client that went away sees the fault anyway
}

func (h *faultyHandler) requestIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ids...)
}

func faultyNode(t *testing.T, e *embedded.Engine, faults ...fault) (*faultyHandler, *httptest.Server) {
	t.Helper()
	s, err := NewServer(ServerConfig{Service: e})
	if err != nil {
		t.Fatal(err)
	}
	h := &faultyHandler{next: s, faults: faults}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return h, hs
}

func countJobs(t *testing.T, e *embedded.Engine) int {
	t.Helper()
	page, err := e.List(context.Background(), engine.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Jobs)
}

// A create whose server applied it but died (or answered 503) before the
// client heard back is retried with the same request id and applied once.
func TestClientRetriesWithTheSameRequestID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []fault
	}{
		{"connection dropped after apply", []fault{applyAndDrop}},
		{"503 after apply, then 503 closed", []fault{applyAnd503, refuse503}},
		{"503 closed twice before apply", []fault{refuse503, refuse503}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, engine.Limits{})
			h, hs := faultyNode(t, e, tc.faults...)
			c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
			res, err := c.Create(context.Background(), engine.CreateJob{WorkflowID: "once", Type: "T", Queue: "q"})
			if err != nil {
				t.Fatal(err)
			}
			ids := h.requestIDs()
			if len(ids) != len(tc.faults)+1 || ids[0] == "" {
				t.Fatalf("request ids %q, want %d tries", ids, len(tc.faults)+1)
			}
			for _, id := range ids {
				if id != ids[0] {
					t.Fatalf("the retries changed the request id: %q", ids)
				}
			}
			if n := countJobs(t, e); n != 1 {
				t.Fatalf("%d jobs after %d tries, want 1", n, len(ids))
			}
			if j, err := e.Describe(context.Background(), engine.Target{WorkflowID: "once"}); err != nil || j.ID != res.Job {
				t.Fatalf("the client got job %d, the store has %+v (%v)", res.Job, j, err)
			}
		})
	}
}

// A caller's own request id is kept, not replaced.
func TestClientKeepsTheCallersRequestID(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	h, hs := faultyNode(t, e)
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	if _, err := c.Create(context.Background(), engine.CreateJob{Header: engine.Header{RequestID: "mine"}, Type: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if ids := h.requestIDs(); len(ids) != 1 || ids[0] != "mine" {
		t.Fatalf("request ids %q", ids)
	}
}

// A dead address is skipped, and the node that answered is asked first
// from then on.
func TestClientSkipsDeadAddress(t *testing.T) {
	dead := deadAddr(t)
	e := openEngine(t, engine.Limits{})
	_, hs := faultyNode(t, e)
	c := newClient(t, ClientConfig{Addrs: []string{dead, hostOf(hs.URL)}})
	if _, err := c.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if p := c.preferred(); p != hs.URL {
		t.Fatalf("preferred %q, want %q", p, hs.URL)
	}
}

// A 503 naming the leader sends the client there, and it stays there.
func TestClientFollowsLeaderHint(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, leader := faultyNode(t, e)
	var hits int
	var mu sync.Mutex
	stale := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		writeError(w, &engine.NotLeaderError{LeaderID: "n1", LeaderHTTP: hostOf(leader.URL)})
	}))
	defer stale.Close()
	c := newClient(t, ClientConfig{Addrs: []string{stale.URL}})
	for range 3 {
		if _, err := c.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 1 || countJobs(t, e) != 3 {
		t.Fatalf("the stale node was asked %d times, %d jobs; want 1 and 3", hits, countJobs(t, e))
	}
}

// When no try gets an answer, a command that some try may have delivered
// has an unknown outcome; one that never left (every node refused the
// connection) and a read just fail, with the connection's error.
func TestClientGivesUpAfterRetryTimeout(t *testing.T) {
	dead := deadAddr(t)
	c := newClient(t, ClientConfig{Addrs: []string{dead}, RetryTimeout: 50 * time.Millisecond})
	_, err := c.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"})
	if err == nil || errors.Is(err, engine.ErrUnknownOutcome) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Create at a refused address = %v, want the refused connection, not ErrUnknownOutcome", err)
	}
	_, err = c.Describe(context.Background(), engine.Target{Job: 1})
	if err == nil || errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("Describe = %v, want a plain connection error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a cancelled context = %v", err)
	}

	// A node that takes the request and drops the connection may have
	// applied it, whatever the tries after it met.
	dropping := droppingAddr(t)
	c = newClient(t, ClientConfig{Addrs: []string{dropping}, RetryTimeout: 50 * time.Millisecond})
	if _, err := c.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"}); !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("Create at a node that dropped the connection = %v, want ErrUnknownOutcome", err)
	}
	c = newClient(t, ClientConfig{Addrs: []string{dropping, dead}, RetryTimeout: 50 * time.Millisecond})
	if _, err := c.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"}); !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Fatalf("Create at a dropping node, then a refused one = %v, want ErrUnknownOutcome", err)
	}
}

// A claim whose answer was lost after the server applied it is retried with
// the same request id and gets the same jobs: nothing is left leased to
// nobody, and no second job is claimed.
func TestClaimAnswerLostIsRetriedToTheSameJobs(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("long poll=%v", wait), func(t *testing.T) {
			e := openEngine(t, engine.Limits{})
			ctx := context.Background()
			for i := 0; i < 2; i++ {
				if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
					t.Fatal(err)
				}
			}
			_, hs := faultyNode(t, e, applyAndDrop)
			c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
			claim := engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}
			var jobs []engine.ClaimedJob
			var err error
			if wait {
				jobs, err = c.ClaimWait(ctx, claim)
			} else {
				jobs, err = c.Claim(ctx, claim)
			}
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claim = %v, %v", jobs, err)
			}
			page, err := e.List(ctx, engine.ListQuery{Status: engine.StatusRunning})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Jobs) != 1 || page.Jobs[0].ID != jobs[0].Job {
				t.Fatalf("running jobs %+v, the client holds job %d: the retry claimed again", page.Jobs, jobs[0].Job)
			}
		})
	}
}
