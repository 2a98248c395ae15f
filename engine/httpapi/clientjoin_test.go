package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// joinedNodes is a sharded cluster of two shards, as far as a worker's
// claims see it, that grows under the worker's long polls: node a is its
// only node until the test calls join, after which node b, a node that
// joined the cluster and leads shard 1 now, holds a ready job and a ready
// task of shard 1, and every answer names placement version 2.
//
// After the join node a answers its task polls empty at once, and its job
// polls only once the client has read the new map (which the task polls'
// end makes it do): the job polls then see an answer naming the version
// of the map the client holds, newer than the one they began with.
type joinedNodes struct {
	a, b      *httptest.Server
	polled    chan string   // the kind of each of node a's first long polls
	joined    chan struct{} // closed by join
	mapRead   chan struct{} // closed once the client read the map of version 2
	joinOnce  sync.Once
	mapReadOn sync.Once
}

func newJoinedNodes(t *testing.T) *joinedNodes {
	t.Helper()
	f := &joinedNodes{polled: make(chan string, 2), joined: make(chan struct{}), mapRead: make(chan struct{})}
	f.a = httptest.NewServer(f.handler("a"))
	f.b = httptest.NewServer(f.handler("b"))
	t.Cleanup(func() {
		f.join()
		f.mapReadOn.Do(func() { close(f.mapRead) })
		f.a.CloseClientConnections()
		f.b.CloseClientConnections()
		f.a.Close()
		f.b.Close()
	})
	return f
}

func (f *joinedNodes) join() { f.joinOnce.Do(func() { close(f.joined) }) }

func (f *joinedNodes) isJoined() bool {
	select {
	case <-f.joined:
		return true
	default:
		return false
	}
}

func (f *joinedNodes) handler(name string) http.Handler {
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		version := "2 1"
		if f.isJoined() {
			version = "2 2"
		}
		w.Header().Set("X-Heddle-Placement", version)
		_ = json.NewEncoder(w).Encode(v)
	}
	// poll answers one long poll: node b with its work once it joined;
	// node a (and b before) empty once the poll's wait ran out, or after
	// the join as the type comment says. A real node answers empty when
	// the wait runs out after the join too; the fake answers earlier, to
	// keep the test short.
	poll := func(w http.ResponseWriter, r *http.Request, kind string, work any, empty any) {
		if name == "b" && f.isJoined() {
			answer(w, work)
			return
		}
		if name == "a" && !f.isJoined() {
			select {
			case f.polled <- kind:
			default: // the test waits for the first ones only
			}
		}
		after := f.joined
		if kind == "jobs" {
			after = f.mapRead
		}
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
		select {
		case <-after:
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
		answer(w, empty)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster/shards", func(w http.ResponseWriter, _ *http.Request) {
		m := engine.ShardMap{Version: 1, Shards: 2, Leaders: []string{"a", "a"},
			Nodes: []engine.ShardNode{{ID: "a", HTTPAddr: f.a.Listener.Addr().String()}}}
		if f.isJoined() {
			m = engine.ShardMap{Version: 2, Shards: 2, Leaders: []string{"a", "b"},
				Nodes: []engine.ShardNode{{ID: "a", HTTPAddr: f.a.Listener.Addr().String()}, {ID: "b", HTTPAddr: f.b.Listener.Addr().String()}}}
			defer f.mapReadOn.Do(func() { close(f.mapRead) })
		}
		answer(w, m)
	})
	mux.HandleFunc("POST /v1/jobs/claim", func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Get("cut") == "1" || q.Get("recall") == "1" {
			answer(w, engine.ClaimResult{})
			return
		}
		job := engine.ClaimedJob{Job: 1<<engine.ShardIDShift | 1, Attempt: 1, Type: "t", LeaseExpiryMS: 1}
		poll(w, r, "jobs", engine.ClaimResult{Jobs: []engine.ClaimedJob{job}}, engine.ClaimResult{})
	})
	mux.HandleFunc("POST /v1/tasks/claim", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cut") == "1" {
			answer(w, engine.ClaimReviewsResult{})
			return
		}
		task := engine.ClaimedReview{Review: 1<<engine.ShardIDShift | 1, Attempt: 1}
		poll(w, r, "tasks", engine.ClaimReviewsResult{Reviews: []engine.ClaimedReview{task}}, engine.ClaimReviewsResult{})
	})
	return mux
}

// TestLongPollFindsANodeThatJoined: a worker's long polls for jobs and for
// review tasks, begun before a node joined the cluster and a shard's
// leadership moved to it (heddle cluster move-shard), claim that shard's
// work from the new node, also the one whose poll learns of the change
// only after the other poll had the client read the new map. Before, a
// fan-out kept polling the nodes of the map it began with for as long as
// they answered empty, and a run of the moved shard stayed Queued until
// some other work reached one of those nodes: in a quiet queue, for ever
// (found by a probe: docs/sharding.md, "Claims").
func TestLongPollFindsANodeThatJoined(t *testing.T) {
	f := newJoinedNodes(t)
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{f.a.Listener.Addr().String()}, PollWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		kind string
		n    int
		err  error
	}
	done := make(chan result, 2)
	go func() {
		jobs, err := cl.ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
		done <- result{"jobs", len(jobs), err}
	}()
	go func() {
		tasks, err := cl.ClaimReviewsWait(ctx, engine.ClaimReviews{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
		done <- result{"tasks", len(tasks), err}
	}()
	for range 2 {
		select {
		case <-f.polled: // a long poll waits on node a, the only node it knows
		case r := <-done:
			t.Fatalf("a claim ended before the join: %+v", r)
		}
	}
	f.join()
	for range 2 {
		if r := <-done; r.err != nil || r.n != 1 {
			t.Fatalf("the long poll for %s begun before node b joined: %d claimed, %v; want node b's one", r.kind, r.n, r.err)
		}
	}
}
