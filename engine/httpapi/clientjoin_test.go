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
// claims see it, that grows under the worker's long poll: node a is its
// only node until the test calls join, after which node b, a node that
// joined the cluster and leads shard 1 now, holds a ready job of shard 1
// and a task, and every answer names placement version 2.
type joinedNodes struct {
	a, b   *httptest.Server
	polled chan struct{} // receives on each of node a's long polls
	joined chan struct{} // closed by join
	once   sync.Once
}

func newJoinedNodes(t *testing.T) *joinedNodes {
	t.Helper()
	f := &joinedNodes{polled: make(chan struct{}, 64), joined: make(chan struct{})}
	f.a = httptest.NewServer(f.handler("a"))
	f.b = httptest.NewServer(f.handler("b"))
	t.Cleanup(func() {
		f.join()
		f.a.CloseClientConnections()
		f.b.CloseClientConnections()
		f.a.Close()
		f.b.Close()
	})
	return f
}

func (f *joinedNodes) join() { f.once.Do(func() { close(f.joined) }) }

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
	// poll answers one long poll: node b with its work once it joined,
	// node a (and b before) empty once the poll's wait ran out. A real
	// node answers empty when the wait runs out after the join too; the
	// fake answers at the join, to keep the test short.
	poll := func(w http.ResponseWriter, r *http.Request, work any, empty any) {
		if name == "b" && f.isJoined() {
			answer(w, work)
			return
		}
		if name == "a" {
			select {
			case f.polled <- struct{}{}:
			default: // the test waits for the first only
			}
		}
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
		select {
		case <-f.joined:
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
		}
		answer(w, m)
	})
	mux.HandleFunc("POST /v1/jobs/claim", func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Get("cut") == "1" || q.Get("recall") == "1" {
			answer(w, engine.ClaimResult{})
			return
		}
		job := engine.ClaimedJob{Job: 1<<engine.ShardIDShift | 1, Attempt: 1, Type: "t", LeaseExpiryMS: 1}
		poll(w, r, engine.ClaimResult{Jobs: []engine.ClaimedJob{job}}, engine.ClaimResult{})
	})
	mux.HandleFunc("POST /v1/tasks/claim", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cut") == "1" {
			answer(w, engine.ClaimReviewsResult{})
			return
		}
		task := engine.ClaimedReview{Review: 1<<engine.ShardIDShift | 1, Attempt: 1}
		poll(w, r, engine.ClaimReviewsResult{Reviews: []engine.ClaimedReview{task}}, engine.ClaimReviewsResult{})
	})
	return mux
}

// TestLongPollFindsANodeThatJoined: a worker's long poll that began
// before a node joined the cluster, and a shard's leadership moved to it
// (heddle cluster move-shard), claims that shard's work from the new node.
// Before, the fan-out kept polling the nodes of the map it started with
// for as long as they answered empty, and a run of the moved shard stayed
// Queued until some other work reached one of those nodes: in a quiet
// queue, for ever (found by a probe: docs/sharding.md, "Claims").
func TestLongPollFindsANodeThatJoined(t *testing.T) {
	for _, kind := range []string{"jobs", "tasks"} {
		t.Run(kind, func(t *testing.T) {
			f := newJoinedNodes(t)
			cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{f.a.Listener.Addr().String()}, PollWait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				if kind == "jobs" {
					jobs, err := cl.ClaimWait(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
					done <- result{len(jobs), err}
					return
				}
				tasks, err := cl.ClaimReviewsWait(ctx, engine.ClaimReviews{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
				done <- result{len(tasks), err}
			}()
			select {
			case <-f.polled: // the long poll waits on node a, the only node it knows
			case r := <-done:
				t.Fatalf("the claim ended before the join: %+v", r)
			}
			f.join()
			if r := <-done; r.err != nil || r.n != 1 {
				t.Fatalf("the long poll begun before node b joined: %d claimed, %v; want node b's one", r.n, r.err)
			}
		})
	}
}
