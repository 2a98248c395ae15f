package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// fakeClaimNodes are two nodes of a sharded cluster, as far as a client's
// claims see them. Node a answers a claim's first long poll with job 1 at
// once; node b holds its first poll until the client cuts it, and then
// answers it with job 2, as a node does that was applying a claim when the
// cut came. Every later poll waits until its request ends. Requeues are
// recorded.
type fakeClaimNodes struct {
	a, b     *httptest.Server
	requeued chan engine.JobID
	mu       sync.Mutex
	polls    map[string]int // long polls per node
	cut      chan struct{}  // closed by the first cut of node b
	cutOnce  sync.Once
	done     chan struct{} // closed at the test's end: every poll answers
}

func newFakeClaimNodes(t *testing.T) *fakeClaimNodes {
	t.Helper()
	return newFakeClaimNodesOf(t, engine.ClaimedJob{Job: 1<<engine.ShardIDShift | 1, Attempt: 1}, engine.ClaimedJob{Job: 2<<engine.ShardIDShift | 1, Attempt: 1})
}

// newFakeClaimNodesOf is newFakeClaimNodes with the jobs node a and node b
// answer.
func newFakeClaimNodesOf(t *testing.T, ofA, ofB engine.ClaimedJob) *fakeClaimNodes {
	t.Helper()
	f := &fakeClaimNodes{requeued: make(chan engine.JobID, 16), polls: map[string]int{}, cut: make(chan struct{}), done: make(chan struct{})}
	f.a = httptest.NewServer(f.handler("a", ofA))
	f.b = httptest.NewServer(f.handler("b", ofB))
	t.Cleanup(func() {
		close(f.done)
		f.a.CloseClientConnections()
		f.b.CloseClientConnections()
		f.a.Close()
		f.b.Close()
	})
	return f
}

func (f *fakeClaimNodes) handler(name string, job engine.ClaimedJob) http.Handler {
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Heddle-Placement", "3 1")
		_ = json.NewEncoder(w).Encode(v)
	}
	claimed := func() engine.ClaimResult {
		j := job
		j.Type, j.LeaseExpiryMS = "t", 1
		return engine.ClaimResult{Jobs: []engine.ClaimedJob{j}}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster/shards", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, engine.ShardMap{Version: 1, Shards: 3, Leaders: []string{"a", "a", "b"},
			Nodes: []engine.ShardNode{{ID: "a", HTTPAddr: f.a.Listener.Addr().String()}, {ID: "b", HTTPAddr: f.b.Listener.Addr().String()}}})
	})
	mux.HandleFunc("POST /v1/jobs/claim", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case q.Get("cut") == "1":
			if name == "b" {
				f.cutOnce.Do(func() { close(f.cut) })
			}
			answer(w, engine.ClaimResult{})
			return
		case q.Get("recall") == "1":
			answer(w, engine.ClaimResult{})
			return
		}
		f.mu.Lock()
		f.polls[name]++
		n := f.polls[name]
		f.mu.Unlock()
		switch {
		case n == 1 && name == "a":
			answer(w, claimed())
		case n == 1 && name == "b":
			select {
			case <-f.cut:
				answer(w, claimed())
			case <-r.Context().Done():
			case <-f.done:
			}
		default:
			select {
			case <-r.Context().Done():
			case <-f.done:
			}
		}
	})
	mux.HandleFunc("POST /v1/jobs/requeue", func(w http.ResponseWriter, r *http.Request) {
		var cmd engine.Requeue
		if err := msgpack.NewDecoder(r.Body).Decode(&cmd); err == nil {
			f.requeued <- cmd.Job
		}
		answer(w, engine.StatusResult{})
	})
	return mux
}

func (f *fakeClaimNodes) client(t *testing.T) *httpapi.Client {
	t.Helper()
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{f.a.Listener.Addr().String(), f.b.Listener.Addr().String()}, PollWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestClaimKeepsWhatACutPollTook: the job a cut long poll answered with
// (claimed as the cut came) answers the next claim of the same worker,
// instead of going back to its queue and being claimed again: two Raft
// commands a job saved, and the job's wait (docs/sharding.md, "Claims").
func TestClaimKeepsWhatACutPollTook(t *testing.T) {
	f := newFakeClaimNodes(t)
	cl := f.client(t)
	claim := engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := cl.ClaimWait(ctx, claim)
	if err != nil || len(first) != 1 || first[0].Job != 1<<engine.ShardIDShift|1 {
		t.Fatalf("first claim: %+v, %v; want node a's job", first, err)
	}
	// Node b's poll answers its job once cut, after the first claim
	// returned; the second claim gets it, whether it was kept before the
	// claim began or while its polls waited.
	second, err := cl.ClaimWait(ctx, claim)
	if err != nil || len(second) != 1 || second[0].Job != 2<<engine.ShardIDShift|1 {
		t.Fatalf("second claim: %+v, %v; want the job node b's cut poll took", second, err)
	}
	// It was not given back.
	select {
	case id := <-f.requeued:
		t.Fatalf("job %d was given back; want it kept for the claimer", id)
	default:
	}
}

// TestClaimGivesBackWhatNoClaimTook: a job kept from a cut poll that no
// claim of its claimer takes within a quarter of its lease goes back to its
// queue, fenced by its lease, as a cut claim's jobs did before.
func TestClaimGivesBackWhatNoClaimTook(t *testing.T) {
	f := newFakeClaimNodes(t)
	cl := f.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := cl.ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 400})
	if err != nil || len(first) != 1 {
		t.Fatalf("first claim: %+v, %v", first, err)
	}
	select {
	case id := <-f.requeued:
		if id != 2<<engine.ShardIDShift|1 {
			t.Fatalf("job %d given back; want node b's", id)
		}
	case <-ctx.Done():
		t.Fatal("the kept job was never given back")
	}
}

// TestClaimKeepsTheNextAttemptOfAJobItTook: a cut poll that claimed the
// next attempt of a job the claim took (the job's turn ended, and it was
// ready again before the cut reached that node) answers a lease of its
// own: it is kept for the next claim, not dropped as the same answer twice
// and left leased to nobody until its lease ran out (a 30 s stall).
func TestClaimKeepsTheNextAttemptOfAJobItTook(t *testing.T) {
	const job = 1<<engine.ShardIDShift | 7
	f := newFakeClaimNodesOf(t, engine.ClaimedJob{Job: job, Attempt: 1}, engine.ClaimedJob{Job: job, Attempt: 2})
	cl := f.client(t)
	claim := engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := cl.ClaimWait(ctx, claim)
	if err != nil || len(first) != 1 || first[0].Attempt != 1 {
		t.Fatalf("first claim: %+v, %v; want attempt 1", first, err)
	}
	second, err := cl.ClaimWait(ctx, claim)
	if err != nil || len(second) != 1 || second[0].Job != job || second[0].Attempt != 2 {
		t.Fatalf("second claim: %+v, %v; want attempt 2 of the same job, which node b's cut poll took", second, err)
	}
}
