package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// TestClaimRetryTakesItsLeasesOutOfTheKeptSet: a claim without a wait is
// how a worker learns, retrying under a long poll's request id, what the
// poll took when it was cut short, to give it back; a cut poll of that
// long poll may have kept the same lease for the claimer's next long
// poll. The retry's answer goes to its caller alone: its leases leave the
// kept set, and what else was kept stays. Before, the next long poll got
// the lease the worker had just given back (found by a review).
func TestClaimRetryTakesItsLeasesOutOfTheKeptSet(t *testing.T) {
	j := engine.ClaimedJob{Job: 1<<engine.ShardIDShift | 3, Attempt: 2, Type: "t", LeaseExpiryMS: 1}
	k := engine.ClaimedJob{Job: 1<<engine.ShardIDShift | 4, Attempt: 1, Type: "t", LeaseExpiryMS: 1}
	var srv *httptest.Server
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(placementHeader, "2 1")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster/shards", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, engine.ShardMap{Version: 1, Shards: 2, Leaders: []string{"a", "a"},
			Nodes: []engine.ShardNode{{ID: "a", HTTPAddr: srv.Listener.Addr().String()}}})
	})
	mux.HandleFunc("POST /v1/jobs/claim", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wait") != "" {
			answer(w, engine.ClaimResult{Jobs: []engine.ClaimedJob{}})
			return
		}
		answer(w, engine.ClaimResult{Jobs: []engine.ClaimedJob{j}}) // the retry of the claim that took j
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := NewClient(ClientConfig{Addrs: []string{srv.Listener.Addr().String()}, PollWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	claim := engine.Claim{Header: engine.Header{RequestID: "claim-1"}, Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}
	c.keep(claim, []engine.ClaimedJob{j, k}, time.Now())
	if n := keptCount(c); n != 2 {
		t.Fatalf("%d jobs kept, want 2", n)
	}
	c.probeShards(context.Background()) // as a worker's long polls have by then
	got, err := c.Claim(context.Background(), claim)
	if err != nil || len(got) != 1 || leaseOf(got[0]) != leaseOf(j) {
		t.Fatalf("the retry answered %+v, %v; want job %d", got, err, j.Job)
	}
	kept, _ := c.takeKept(claim, 10)
	if len(kept) != 1 || kept[0].Job != k.Job {
		t.Fatalf("kept after the retry: %+v; want job %d alone", kept, k.Job)
	}
}
