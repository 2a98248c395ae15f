package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// roundNodes are two nodes of a sharded cluster under one long poll that
// goes two rounds. Node b answers its first poll empty, naming a newer
// placement (a replica moved), once node a's first poll waits: the round
// ends, and a's poll is cut. A node applying a claim as the cut came
// answers with what it took: a's first poll answers job J, late (once the
// worker's next claim polls). The client
// reads the map again and polls anew under the same request id, and a's
// polls under it answer J again, as a node answers a retry of a claim it
// applied. Every other poll waits until its request ends.
type roundNodes struct {
	a, b    *httptest.Server
	j       engine.ClaimedJob
	version atomic.Int64
	aPolled chan struct{} // closed by a's first poll
	aCut    chan struct{} // closed by a's first cut
	// nextClaim is closed by a's first poll under another request id: the
	// call returned, and the worker's next claim polls.
	nextClaim  chan struct{}
	nextOnce   sync.Once
	lateAtOnce bool // a's first poll answers as soon as it is cut
	once       sync.Once
	cutOnce    sync.Once
	mu         sync.Mutex
	polls      map[string]int
	rid        string // the request id of a's first poll, which a's later polls under it answer again
	requeued   chan engine.JobID
	done       chan struct{}
}

func newRoundNodes(t *testing.T, lateAtOnce bool) *roundNodes {
	f := &roundNodes{lateAtOnce: lateAtOnce, j: engine.ClaimedJob{Job: 1<<engine.ShardIDShift | 7, Attempt: 1, Type: "t", LeaseExpiryMS: 1},
		aPolled: make(chan struct{}), aCut: make(chan struct{}), nextClaim: make(chan struct{}), polls: map[string]int{}, requeued: make(chan engine.JobID, 16),
		done: make(chan struct{})}
	f.version.Store(1)
	f.a = httptest.NewServer(f.handler("a"))
	f.b = httptest.NewServer(f.handler("b"))
	t.Cleanup(func() {
		close(f.done)
		f.a.CloseClientConnections()
		f.b.CloseClientConnections()
		f.a.Close()
		f.b.Close()
	})
	return f
}

func (f *roundNodes) handler(name string) http.Handler {
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Heddle-Placement", "2 "+strconv.FormatInt(f.version.Load(), 10))
		_ = json.NewEncoder(w).Encode(v)
	}
	hang := func(r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster/shards", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, engine.ShardMap{Version: uint64(f.version.Load()), Shards: 2, Leaders: []string{"a", "b"},
			Nodes: []engine.ShardNode{{ID: "a", HTTPAddr: f.a.Listener.Addr().String()}, {ID: "b", HTTPAddr: f.b.Listener.Addr().String()}}})
	})
	mux.HandleFunc("POST /v1/jobs/claim", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case q.Get("cut") == "1":
			if name == "a" {
				f.cutOnce.Do(func() { close(f.aCut) })
			}
			answer(w, engine.ClaimResult{})
			return
		case q.Get("recall") == "1":
			answer(w, engine.ClaimResult{})
			return
		}
		var claim engine.Claim
		if err := msgpack.NewDecoder(r.Body).Decode(&claim); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.polls[name]++
		n := f.polls[name]
		if n == 1 && name == "a" {
			f.rid = claim.RequestID
		}
		replay := name == "a" && n > 1 && claim.RequestID == f.rid
		if name == "a" && n > 1 && !replay {
			f.nextOnce.Do(func() { close(f.nextClaim) })
		}
		f.mu.Unlock()
		switch {
		case name == "a" && n == 1:
			f.once.Do(func() { close(f.aPolled) })
			select {
			case <-f.aCut:
			case <-r.Context().Done():
				return
			case <-f.done:
				return
			}
			// The cut poll's answer is slow, unless lateAtOnce: it comes
			// once a polls under another request id, the order in which
			// both were handed on when the rounds shared one id.
			if !f.lateAtOnce {
				select {
				case <-f.nextClaim:
				case <-r.Context().Done():
					return
				case <-f.done:
					return
				}
			}
			answer(w, engine.ClaimResult{Jobs: []engine.ClaimedJob{f.j}})
		case replay:
			answer(w, engine.ClaimResult{Jobs: []engine.ClaimedJob{f.j}})
		case name == "b" && n == 1:
			select {
			case <-f.aPolled:
				f.version.Store(2)
				answer(w, engine.ClaimResult{})
			case <-r.Context().Done():
			case <-f.done:
			}
		default:
			hang(r)
		}
	})
	mux.HandleFunc("POST /v1/jobs/requeue", func(w http.ResponseWriter, _ *http.Request) {
		f.requeued <- f.j.Job
		answer(w, engine.StatusResult{})
	})
	return mux
}

// TestLongPollRoundsHandOnALeaseOnce: one long poll's call polls in two
// rounds (the placement moved under the first), and job J, which the
// first round's cut poll answers late, is handed on once: the call
// answers it (kept, then taken), and the worker's next claim does not get
// it again. Before, every round polled under the call's one request id,
// node a answered the second round's claim as a retry of the first's, J,
// and the first round's late J was kept for the next claim as well: one
// worker ran the same lease twice at once (found by a ten-minute sharded
// chaos run: a resource's units over-leased, and the claims not
// linearizable).
func TestLongPollRoundsHandOnALeaseOnce(t *testing.T) {
	f := newRoundNodes(t, false)
	cl := f.client(t)
	claim := engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := cl.ClaimWait(ctx, claim)
	if err != nil || len(first) != 1 || first[0].Job != f.j.Job {
		t.Fatalf("the claim: %+v, %v; want job %d once", first, err, f.j.Job)
	}
	// Every later poll waits: the next claim gets nothing until its
	// deadline, unless J was kept for it (the kept jobs answer a claim as
	// soon as they are kept, so a second hand-on would show within it).
	nctx, ncancel := context.WithTimeout(ctx, 3*time.Second)
	defer ncancel()
	next, err := cl.ClaimWait(nctx, claim)
	if len(next) > 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the next claim: %+v, %v; want nothing by its deadline (job %d went to the first)", next, err, f.j.Job)
	}
	select {
	case j := <-f.requeued:
		t.Fatalf("job %d was given back while the first claim holds it", j)
	default:
	}
}

// TestLongPollRoundsDoNotSpin: as above, but the first round's late J is
// given back at once (a claim with the node's default lease keeps
// nothing). The call polls on, round after round only when the placement
// moves: here two rounds, then it waits until its deadline. With every
// round under the call's one request id, node a answered each later
// round's claim with J again, which the call dropped as a lease handed on
// already, and the rounds ended empty, at once, one after another (found
// by a review).
func TestLongPollRoundsDoNotSpin(t *testing.T) {
	f := newRoundNodes(t, true)
	cl := f.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	got, err := cl.ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1})
	if len(got) > 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the claim: %+v, %v; want nothing by its deadline (job %d was given back)", got, err, f.j.Job)
	}
	select {
	case <-f.requeued:
	case <-time.After(10 * time.Second):
		t.Fatal("the first round's late job was never given back")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.polls["a"] > 3 || f.polls["b"] > 3 {
		t.Fatalf("the call polled %v times; want a round per placement, two", f.polls)
	}
}

func (f *roundNodes) client(t *testing.T) *httpapi.Client {
	t.Helper()
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{f.a.Listener.Addr().String(), f.b.Listener.Addr().String()},
		PollWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
