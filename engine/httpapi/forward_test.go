package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// follower is a Service that is not the leader: every call it serves is
// refused with the leader it believes in. Calls the tests do not make
// panic on the nil embedded Service.
type follower struct {
	engine.Service
	mu         sync.Mutex
	leaderHTTP string
	others     []string // the shard's other nodes it names (a node without a replica does)
}

func (f *follower) setLeader(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaderHTTP = addr
}

func (f *follower) refuse() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &engine.NotLeaderError{LeaderID: "leader-at-" + f.leaderHTTP, LeaderHTTP: f.leaderHTTP, Others: f.others}
}

func (f *follower) Create(context.Context, engine.CreateJob) (*engine.CreateResult, error) {
	return nil, f.refuse()
}
func (f *follower) Claim(context.Context, engine.Claim) ([]engine.ClaimedJob, error) {
	return nil, f.refuse()
}
func (f *follower) ClaimWait(context.Context, engine.Claim) ([]engine.ClaimedJob, error) {
	return nil, f.refuse()
}
func (f *follower) Describe(context.Context, engine.Target) (*engine.Job, error) {
	return nil, f.refuse()
}

// countingHandler counts the requests a server got, and those forwarded to it.
type countingHandler struct {
	next      http.Handler
	requests  atomic.Int64
	forwarded atomic.Int64
}

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	if r.Header.Get(forwardedHeader) != "" {
		h.forwarded.Add(1)
	}
	h.next.ServeHTTP(w, r)
}

// node starts a server for svc behind a countingHandler.
func node(t *testing.T, svc engine.Service) (*countingHandler, *httptest.Server) {
	t.Helper()
	s, err := NewServer(ServerConfig{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHandler{next: s}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		s.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	return h, hs
}

// A follower forwards a command to the leader it names, once, and relays
// the leader's answer; the client never learns it was forwarded.
func TestFollowerForwardsToLeader(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	leaderH, leader := node(t, e)
	f := &follower{}
	f.setLeader(hostOf(leader.URL))
	followerH, fol := node(t, f)

	var res engine.CreateResult
	r := postJSON(t, fol.URL+"/v1/jobs", engine.CreateJob{WorkflowID: "fwd", Type: "T", Queue: "q"}, &res)
	if r.status != http.StatusOK || res.WorkflowID != "fwd" {
		t.Fatalf("forwarded create answered %d %s", r.status, r.body)
	}
	if followerH.requests.Load() != 1 || leaderH.requests.Load() != 1 || leaderH.forwarded.Load() != 1 {
		t.Fatalf("follower saw %d requests, leader %d (%d forwarded); want 1, 1, 1",
			followerH.requests.Load(), leaderH.requests.Load(), leaderH.forwarded.Load())
	}
	if _, err := e.Describe(context.Background(), engine.Target{WorkflowID: "fwd"}); err != nil {
		t.Fatalf("the leader's engine has no job: %v", err)
	}

	// The Go client, pointed at the follower only, works the same (msgpack).
	c := newClient(t, ClientConfig{Addrs: []string{fol.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := c.Describe(ctx, engine.Target{WorkflowID: "fwd"})
	if err != nil || j.ID != res.Job {
		t.Fatalf("Describe through the follower: %+v, %v", j, err)
	}

	// A long poll is forwarded whole and waits at the leader.
	done := make(chan []engine.ClaimedJob, 1)
	go func() {
		jobs, err := c.ClaimWait(ctx, engine.Claim{Queue: "later", Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil {
			t.Error(err)
		}
		done <- jobs
	}()
	created, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "later"})
	if err != nil {
		t.Fatal(err)
	}
	if jobs := <-done; len(jobs) != 1 || jobs[0].Job != created.Job {
		t.Fatalf("forwarded long poll claimed %v, want job %d", jobs, created.Job)
	}
}

// Two nodes that each name the other are not a loop: a forwarded request
// is never forwarded again, and the refusal (with its hint) comes back.
func TestForwardedRequestIsNotForwardedAgain(t *testing.T) {
	a, b := &follower{}, &follower{}
	aH, aS := node(t, a)
	bH, bS := node(t, b)
	a.setLeader(hostOf(bS.URL))
	b.setLeader(hostOf(aS.URL))
	r := postJSON(t, aS.URL+"/v1/jobs", engine.CreateJob{Type: "T", Queue: "q"}, nil)
	body := errorBodyOf(t, r)
	if r.status != http.StatusServiceUnavailable || body.Name != "not_leader" || body.LeaderHTTP != hostOf(aS.URL) {
		t.Fatalf("%d %+v, want 503 not_leader naming %s", r.status, body, hostOf(aS.URL))
	}
	if aH.requests.Load() != 1 || bH.requests.Load() != 1 || bH.forwarded.Load() != 1 {
		t.Fatalf("a saw %d requests, b %d; want one each", aH.requests.Load(), bH.requests.Load())
	}

	// The Go client follows the hints back and forth until RetryTimeout,
	// then reports that no leader could be found.
	c := newClient(t, ClientConfig{Addrs: []string{aS.URL}, RetryTimeout: 100 * time.Millisecond})
	_, err := c.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"})
	var nl *engine.NotLeaderError
	if !errors.Is(err, engine.ErrNotLeader) || !errors.As(err, &nl) || nl.LeaderHTTP == "" {
		t.Fatalf("Create = %v, want a not-leader error with a hint", err)
	}
}

// When the leader refuses the connection, nothing was sent: the node
// answers that it does not lead, naming the leader and the nodes it
// tried. When the leader took the request and the connection broke, the
// outcome is unknown; the answer says so and still names the leader.
func TestForwardToUnreachableLeader(t *testing.T) {
	dead := deadAddr(t)
	f := &follower{}
	f.setLeader(dead)
	_, fol := node(t, f)
	r := postJSON(t, fol.URL+"/v1/jobs", engine.CreateJob{Type: "T", Queue: "q"}, nil)
	body := errorBodyOf(t, r)
	if r.status != http.StatusServiceUnavailable || body.Name != "not_leader" || body.LeaderHTTP != dead ||
		!strings.Contains(body.Message, dead+" could not be connected to") || !strings.Contains(body.Message, "nothing was sent") {
		t.Fatalf("%d %+v, want 503 not_leader naming %s, tried, and nothing sent", r.status, body, dead)
	}

	dropping := droppingAddr(t)
	f.setLeader(dropping)
	r = postJSON(t, fol.URL+"/v1/jobs", engine.CreateJob{Type: "T", Queue: "q"}, nil)
	body = errorBodyOf(t, r)
	if r.status != http.StatusServiceUnavailable || body.Name != "unknown_outcome" || body.LeaderHTTP != dropping ||
		!strings.Contains(body.Message, "to the leader leader-at-"+dropping+" at "+dropping+" failed") {
		t.Fatalf("%d %+v, want 503 unknown_outcome naming %s", r.status, body, dropping)
	}

	// The leader refuses and the shard's next node takes the request and
	// drops it: the answer names that node, not the leader.
	f.setLeader(dead)
	f.mu.Lock()
	f.others = []string{dropping}
	f.mu.Unlock()
	r = postJSON(t, fol.URL+"/v1/jobs", engine.CreateJob{Type: "T", Queue: "q"}, nil)
	body = errorBodyOf(t, r)
	if r.status != http.StatusServiceUnavailable || body.Name != "unknown_outcome" ||
		!strings.Contains(body.Message, "to the shard's node at "+dropping+" failed") {
		t.Fatalf("%d %+v, want 503 unknown_outcome naming the node at %s", r.status, body, dropping)
	}
}
