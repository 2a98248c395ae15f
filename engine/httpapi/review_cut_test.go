package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// fakeTaskNodes are two nodes of a sharded cluster, as far as a client's
// task claims see them. Node a answers the first long poll with task 1 at
// once; node b holds its first poll until the client cuts it, and then
// answers it with task 2, as a node does that was applying a claim when the
// cut came. Every later poll waits until its request ends. With holdCut,
// node b's cut answers only once holdCut is closed, as a node that hangs
// would; cutAbandoned counts the cuts of node b whose client gave up first.
type fakeTaskNodes struct {
	a, b         *httptest.Server
	cut          chan struct{}
	cutOnce      sync.Once
	holdCut      chan struct{} // nil: node b's cut answers at once
	cancelled    atomic.Int64  // first polls of node b that ended by their request, unanswered
	cutAbandoned atomic.Int64
	done         chan struct{}
}

func newFakeTaskNodes(t *testing.T, holdCut chan struct{}) *fakeTaskNodes {
	t.Helper()
	f := &fakeTaskNodes{cut: make(chan struct{}), holdCut: holdCut, done: make(chan struct{})}
	f.a = httptest.NewServer(f.handler("a", engine.ClaimedReview{Review: 1<<engine.ShardIDShift | 1, Attempt: 1}))
	f.b = httptest.NewServer(f.handler("b", engine.ClaimedReview{Review: 2<<engine.ShardIDShift | 1, Attempt: 1}))
	t.Cleanup(func() {
		close(f.done)
		f.a.CloseClientConnections()
		f.b.CloseClientConnections()
		f.a.Close()
		f.b.Close()
	})
	return f
}

func (f *fakeTaskNodes) handler(name string, task engine.ClaimedReview) http.Handler {
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Heddle-Placement", "3 1")
		_ = json.NewEncoder(w).Encode(v)
	}
	task.Type, task.LeaseExpiryMS = "write", 1
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster/shards", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, engine.ShardMap{Version: 1, Shards: 3, Leaders: []string{"a", "a", "b"},
			Nodes: []engine.ShardNode{{ID: "a", HTTPAddr: f.a.Listener.Addr().String()}, {ID: "b", HTTPAddr: f.b.Listener.Addr().String()}}})
	})
	var polls atomic.Int64 // this node's long polls
	mux.HandleFunc("POST /v1/tasks/claim", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cut") == "1" {
			if name == "b" {
				if f.holdCut != nil {
					select {
					case <-f.holdCut:
					case <-r.Context().Done():
						f.cutAbandoned.Add(1)
						return
					case <-f.done:
						return
					}
				}
				f.cutOnce.Do(func() { close(f.cut) })
			}
			answer(w, engine.ClaimReviewsResult{})
			return
		}
		n := polls.Add(1)
		switch {
		case n == 1 && name == "a":
			answer(w, engine.ClaimReviewsResult{Reviews: []engine.ClaimedReview{task}})
		case n == 1 && name == "b":
			select {
			case <-f.cut:
				answer(w, engine.ClaimReviewsResult{Reviews: []engine.ClaimedReview{task}})
			case <-r.Context().Done():
				f.cancelled.Add(1)
			case <-f.done:
			}
		default:
			select {
			case <-r.Context().Done():
			case <-f.done:
			}
		}
	})
	return mux
}

func (f *fakeTaskNodes) client(t *testing.T) *httpapi.Client {
	t.Helper()
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{f.a.Listener.Addr().String(), f.b.Listener.Addr().String()}, PollWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// claimOne makes a task long poll of claim and returns the one task it
// answers.
func claimOne(ctx context.Context, t *testing.T, cl *httpapi.Client, claim engine.ClaimReviews, what string) engine.ReviewID {
	t.Helper()
	got, err := cl.ClaimReviewsWait(ctx, claim)
	if err != nil || len(got) != 1 {
		t.Fatalf("%s: %+v, %v; want one task", what, got, err)
	}
	return got[0].Review
}

// TestReviewClaimKeepsWhatACutPollTook: a task long poll of a sharded
// cluster cuts the other nodes' polls on their nodes once one answered,
// and the task a cut poll answered with (claimed as the cut came) answers
// the same worker's next claim. Cancelled, that poll would have answered
// into a closed connection, and its task, which has no command that gives
// it back, would have been held by nobody until its lease ran out.
func TestReviewClaimKeepsWhatACutPollTook(t *testing.T) {
	f := newFakeTaskNodes(t, nil)
	cl := f.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claim := engine.ClaimReviews{Role: engine.ReviewRoleWork, Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}
	if got := claimOne(ctx, t, cl, claim, "first claim"); got != 1<<engine.ShardIDShift|1 {
		t.Fatalf("first claim: task %d; want node a's", got)
	}
	if got := claimOne(ctx, t, cl, claim, "second claim"); got != 2<<engine.ShardIDShift|1 {
		t.Fatalf("second claim: task %d; want the one node b's cut poll took", got)
	}
	if n := f.cancelled.Load(); n != 0 {
		t.Fatalf("%d polls of node b were cancelled; want them cut on their node", n)
	}
}

// TestReviewClaimDoesNotWaitForACut: a claim returns once one node
// answered, while its cut of another node is still unanswered (a node that
// hangs, or an older one whose poll the cut does not end): the cut polls
// end in the background, and what they took is kept for the next claim.
func TestReviewClaimDoesNotWaitForACut(t *testing.T) {
	hold := make(chan struct{})
	f := newFakeTaskNodes(t, hold)
	cl := f.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claim := engine.ClaimReviews{Role: engine.ReviewRoleWork, Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}
	if got := claimOne(ctx, t, cl, claim, "first claim"); got != 1<<engine.ShardIDShift|1 {
		t.Fatalf("first claim: task %d; want node a's", got)
	}
	if n := f.cutAbandoned.Load(); n != 0 {
		t.Fatalf("the claim returned after its client gave up %d cuts of node b; want it to return without waiting for them", n)
	}
	close(hold)
	if got := claimOne(ctx, t, cl, claim, "second claim"); got != 2<<engine.ShardIDShift|1 {
		t.Fatalf("second claim: task %d; want the one node b's cut poll took", got)
	}
}

// TestReviewClaimFanOutKeepsConnections: on a 3-node cluster of 4 shards,
// task long polls cut after another node answered leave their connections
// open for the next claims, and every claim's tasks are the caller's: each
// task is claimed once, and none is left held by nobody. Each round puts
// a task on a shard n1 leads and one on a shard n2 leads, so two nodes'
// polls may claim at once.
func TestReviewClaimFanOutKeepsConnections(t *testing.T) {
	const shards, rounds = 4, 8
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	var onN1, onN2 int
	for k := range shards {
		switch c.desired(k) {
		case "n1":
			onN1 = k
		case "n2":
			onN2 = k
		}
	}
	ctx := context.Background()
	// A claim may start while the polls the last one cut still end, so a
	// node may hold a few connections at once: they stay idle for reuse
	// rather than being closed at the default of two.
	cl, dials := c.dialCountingClient(8)
	creator := c.client("n3")
	claimed := map[engine.ReviewID]bool{}
	created := 0
	for i := range rounds {
		for _, k := range []int{onN1, onN2} {
			if _, err := creator.CreateReview(ctx, engine.CreateReview{Job: wfOn(fmt.Sprintf("task-%d-", i), k, shards), Phase: "p", Queue: "fan", Type: "write"}); err != nil {
				t.Fatal(err)
			}
			created++
		}
		for len(claimed) < created {
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			got, err := cl.ClaimReviewsWait(pctx, engine.ClaimReviews{Queue: "fan", Owner: "w", Max: 1, LeaseMS: 60_000})
			cancel()
			if err != nil || len(got) == 0 {
				t.Fatalf("round %d: claimed %+v, %v; want a task", i, got, err)
			}
			for _, r := range got {
				if claimed[r.Review] {
					t.Fatalf("round %d: task %d claimed twice", i, r.Review)
				}
				claimed[r.Review] = true
			}
		}
	}
	// Every task created was answered to the claimer: none is left running
	// under a lease nobody holds, and none is left to claim.
	if left, err := cl.ClaimReviews(ctx, engine.ClaimReviews{Queue: "fan", Owner: "w", Max: 10, LeaseMS: 60_000}); err != nil || len(left) != 0 {
		t.Fatalf("after the claims: %+v, %v; want nothing left", left, err)
	}
	// A node holds at most a claim's poll, a poll the claim before cut
	// that is still ending, and a cut: three nodes, at most four
	// connections each, however many claims. Cancelled polls close theirs,
	// a new one or two a claim.
	if n := dials.Load(); n > 4*3 {
		t.Fatalf("%d connections opened for the claims of %d tasks on 3 nodes; want the cut polls' connections reused", n, created)
	}
}
