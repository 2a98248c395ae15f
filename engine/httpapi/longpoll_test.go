package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// countingService counts the claims the server proposes and reports each
// empty one, so a test knows the long poll is waiting.
type countingService struct {
	engine.Service
	e       *embedded.Engine
	claims  atomic.Int64
	emptied chan struct{} // receives after every claim that found nothing
}

func newCountingService(e *embedded.Engine) *countingService {
	return &countingService{Service: e, e: e, emptied: make(chan struct{}, 100)}
}

func (s *countingService) Claim(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	s.claims.Add(1)
	jobs, err := s.Service.Claim(ctx, c)
	if err == nil && len(jobs) == 0 {
		s.emptied <- struct{}{}
	}
	return jobs, err
}

func (s *countingService) Committed() <-chan struct{} { return s.e.Committed() }

// withoutCommitted hides Committed, so the server must fall back to the
// Service's own ClaimWait.
type withoutCommitted struct{ engine.Service }

var testClaim = engine.Claim{Queue: "lp", Owner: "w", Max: 1, LeaseMS: 60_000}

// A claim waiting on an empty queue is answered as soon as a job is
// created, and it proposes one claim per commit it sees, not one per tick.
func TestClaimLongPollWakesOnCreate(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	svc := newCountingService(e)
	_, hs := serve(t, ServerConfig{Service: svc})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	type result struct {
		jobs []engine.ClaimedJob
		err  error
	}
	done := make(chan result, 1)
	go func() {
		jobs, err := c.ClaimWait(ctx, testClaim)
		done <- result{jobs, err}
	}()
	<-svc.emptied // the poll found nothing and now waits for a commit

	// Commits to another queue wake the poll; each costs at most one claim.
	const unrelated = 5
	for range unrelated {
		if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "elsewhere"}); err != nil {
			t.Fatal(err)
		}
	}
	created, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "lp"})
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.jobs) != 1 || r.jobs[0].Job != created.Job {
		t.Fatalf("ClaimWait = %v, %v; want job %d", r.jobs, r.err, created.Job)
	}
	// One claim before the wait, at most one per commit after it.
	if n := svc.claims.Load(); n < 2 || n > 2+unrelated {
		t.Fatalf("%d claims proposed for %d commits: the poll does not wait on commits", n, unrelated+1)
	}
}

// With nothing committed, a long poll proposes one claim, waits its whole
// wait and answers an empty list.
func TestClaimLongPollTimesOutEmpty(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	svc := newCountingService(e)
	_, hs := serve(t, ServerConfig{Service: svc})
	var res engine.ClaimResult
	r := postJSON(t, hs.URL+"/v1/jobs/claim?wait=50ms", testClaim, &res)
	if r.status != http.StatusOK || res.Jobs == nil || len(res.Jobs) != 0 {
		t.Fatalf("%d %s, want 200 with an empty list", r.status, r.body)
	}
	if n := svc.claims.Load(); n != 1 {
		t.Fatalf("%d claims proposed while nothing was committed, want 1", n)
	}
}

// A Service that cannot report commits waits in its own ClaimWait.
func TestClaimLongPollOverServiceWithoutCommitted(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: withoutCommitted{e}})
	var res engine.ClaimResult
	if r := postJSON(t, hs.URL+"/v1/jobs/claim?wait=20ms", testClaim, &res); r.status != http.StatusOK || len(res.Jobs) != 0 {
		t.Fatalf("%d %s, want an empty answer", r.status, r.body)
	}
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan []engine.ClaimedJob, 1)
	go func() {
		jobs, _ := c.ClaimWait(ctx, testClaim)
		done <- jobs
	}()
	if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "lp"}); err != nil {
		t.Fatal(err)
	}
	if jobs := <-done; len(jobs) != 1 {
		t.Fatalf("claimed %v", jobs)
	}
}

// WaitClosed returns once the job ends; a poll that times out first answers
// the open record and the client asks again.
func TestWaitClosedLongPoll(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.Create(ctx, engine.CreateJob{WorkflowID: "w/1", Type: "T", Queue: "lp"})
	if err != nil {
		t.Fatal(err)
	}
	var open engine.Job
	r := doRaw(t, "GET", hs.URL+"/v1/workflows/w%2F1/closed?wait=10ms", nil, nil)
	if err := decodeAnswer(formatJSON, r.body, &open); err != nil || r.status != 200 || open.Status != engine.StatusQueued {
		t.Fatalf("timed-out wait answered %d %s", r.status, r.body)
	}
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}, PollWait: 20 * time.Millisecond})
	done := make(chan *engine.Job, 1)
	go func() {
		j, err := c.WaitClosed(ctx, engine.Target{WorkflowID: "w/1"})
		if err != nil {
			t.Error(err)
		}
		done <- j
	}()
	jobs, err := e.Claim(ctx, testClaim)
	if err != nil || len(jobs) != 1 {
		t.Fatal(jobs, err)
	}
	if _, err := e.Complete(ctx, engine.Complete{LeaseRef: jobs[0].Lease()}); err != nil {
		t.Fatal(err)
	}
	if j := <-done; j == nil || j.Status != engine.StatusCompleted {
		t.Fatalf("WaitClosed = %+v", j)
	}
}

// Close ends the long polls in progress: they answer 503 closed, so
// clients go to another node instead of asking this one again.
func TestCloseEndsLongPolls(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	svc := newCountingService(e)
	s, hs := serve(t, ServerConfig{Service: svc})
	done := make(chan rawResponse, 1)
	go func() { done <- postJSON(t, hs.URL+"/v1/jobs/claim?wait=1m", testClaim, nil) }()
	<-svc.emptied
	s.Close()
	r := <-done
	if r.status != http.StatusServiceUnavailable || errorBodyOf(t, r).Name != "closed" {
		t.Fatalf("%d %s, want 503 closed", r.status, r.body)
	}
}

// A history read with a wait answers as soon as the job has events after
// the seq, or an empty page when the wait is over; the client's
// WatchHistory asks again until something arrives.
func TestWatchHistoryLongPoll(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := e.Create(ctx, engine.CreateJob{WorkflowID: "w", Type: "T", Queue: "lp"})
	if err != nil {
		t.Fatal(err)
	}
	var empty engine.HistoryPage
	r := doRaw(t, "GET", hs.URL+"/v1/jobs/1/history?after=1&wait=10ms", nil, nil)
	if err := decodeAnswer(formatJSON, r.body, &empty); err != nil || r.status != 200 || len(empty.Events) != 0 {
		t.Fatalf("timed-out watch answered %d %s", r.status, r.body)
	}
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}, PollWait: 20 * time.Millisecond})
	done := make(chan *engine.HistoryPage, 1)
	go func() {
		p, err := c.WatchHistory(ctx, created.Job, 1, 10)
		if err != nil {
			t.Error(err)
		}
		done <- p
	}()
	if _, err := e.Signal(ctx, engine.Signal{Target: engine.Target{Job: created.Job}, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	if p := <-done; p == nil || len(p.Events) != 1 || p.Events[0].Type != engine.EventSignalReceived {
		t.Fatalf("WatchHistory = %+v", p)
	}
}

// slowClaims is a Service whose claims wait until the HTTP request that
// asked for them has ended, then claim: a claim the node applies after its
// caller went away.
type slowClaims struct {
	engine.Service
	entered chan struct{}
}

type requestCtxKey struct{}

func (s *slowClaims) Claim(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	close(s.entered)
	<-ctx.Value(requestCtxKey{}).(context.Context).Done()
	return s.Service.Claim(ctx, c)
}

// A claim applied after its caller went away (a worker that stops cuts
// its long poll) used to leave its jobs Running, leased to nobody, until
// their leases ran out; the server now gives them back at once.
func TestClaimOfAGoneCallerIsReleased(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	created, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: "w", Type: "T", Queue: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	svc := &slowClaims{Service: e, entered: make(chan struct{})}
	s, err := NewServer(ServerConfig{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{}, 1) // the claim's request was answered
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestCtxKey{}, r.Context())))
		if r.URL.Path == "/v1/jobs/claim" {
			served <- struct{}{}
		}
	}))
	t.Cleanup(func() {
		s.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithCancel(context.Background())
	claimed := make(chan error, 1)
	go func() {
		_, err := c.Claim(ctx, engine.Claim{Queue: "gone", Owner: "w1", Max: 1, LeaseMS: 60_000})
		claimed <- err
	}()
	<-svc.entered
	cancel()
	if err := <-claimed; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut claim: %v", err)
	}
	<-served
	j, err := e.Describe(context.Background(), engine.Target{Job: created.Job})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != engine.StatusQueued || j.Attempt != 1 {
		t.Fatalf("the job is %s at attempt %d (lease owner %q), want Queued again after its one claim", j.Status, j.Attempt, j.LeaseOwner)
	}
}
