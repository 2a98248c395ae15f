package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
)

// keptNode is the one node of a sharded cluster (two shards), as far as kept
// claims see it: it answers every claim empty at once (a long poll after a
// short wait) and records the jobs given back to it.
func keptNode(t *testing.T) (*Client, chan engine.JobID) {
	t.Helper()
	requeued := make(chan engine.JobID, 64)
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
	mux.HandleFunc("POST /v1/jobs/claim", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, engine.ClaimResult{Jobs: []engine.ClaimedJob{}})
	})
	mux.HandleFunc("POST /v1/jobs/requeue", func(w http.ResponseWriter, r *http.Request) {
		var cmd engine.Requeue
		if err := msgpack.NewDecoder(r.Body).Decode(&cmd); err == nil {
			requeued <- cmd.Job
		}
		answer(w, engine.StatusResult{})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := NewClient(ClientConfig{Addrs: []string{srv.Listener.Addr().String()}, PollWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, requeued
}

func keptCount(c *Client) int {
	return c.kept.count()
}

// gaveBack reports the job given back by now: keep and ReleaseKept give
// back before they return.
func gaveBack(requeued chan engine.JobID) (engine.JobID, bool) {
	select {
	case id := <-requeued:
		return id, true
	default:
		return 0, false
	}
}

// A job kept from a claim whose keeping time is over already (its answer
// came late) is given back at once, not handed to a worker on a lease that
// may be nearly over.
func TestKeepGivesBackWhatIsOverAlready(t *testing.T) {
	c, requeued := keptNode(t)
	claim := engine.Claim{Queue: "q", Owner: "w", LeaseMS: 400} // kept for 100 ms
	c.keep(claim, []engine.ClaimedJob{{Job: 5, Attempt: 1}}, time.Now().Add(-time.Second))
	if id, ok := gaveBack(requeued); !ok || id != 5 || keptCount(c) != 0 {
		t.Fatalf("given back %v (%d), %d kept; want job 5 given back and nothing kept", ok, id, keptCount(c))
	}
}

// ReleaseKept gives back what is kept for a worker's claims, and what its
// late answers bring until it claims again.
func TestReleaseKept(t *testing.T) {
	c, requeued := keptNode(t)
	claim := engine.Claim{Queue: "q", Owner: "w", LeaseMS: 60_000}
	other := engine.Claim{Queue: "q", Owner: "other", LeaseMS: 60_000}
	c.keep(claim, []engine.ClaimedJob{{Job: 1, Attempt: 1}}, time.Now())
	c.keep(other, []engine.ClaimedJob{{Job: 2, Attempt: 1}}, time.Now())
	c.ReleaseKept(context.Background(), "q", "w")
	if id, ok := gaveBack(requeued); !ok || id != 1 || keptCount(c) != 1 {
		t.Fatalf("given back %v (%d), %d kept; want job 1 given back and the other owner's kept", ok, id, keptCount(c))
	}
	c.keep(claim, []engine.ClaimedJob{{Job: 3, Attempt: 1}}, time.Now())
	if id, ok := gaveBack(requeued); !ok || id != 3 {
		t.Fatalf("a late answer after the stop: given back %v (%d); want job 3 given back at once", ok, id)
	}
	// A claim of that worker's identity (a worker started again) ends the
	// stop: what it leaves behind is kept again.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if jobs, _ := c.ClaimWait(ctx, claim); len(jobs) != 0 { // the node has nothing: it waits out ctx
		t.Fatalf("claim: %+v; want nothing", jobs)
	}
	c.keep(claim, []engine.ClaimedJob{{Job: 4, Attempt: 1}}, time.Now())
	if id, ok := gaveBack(requeued); ok || keptCount(c) != 2 {
		t.Fatalf("after the next claim: given back %v (%d), %d kept; want job 4 kept", ok, id, keptCount(c))
	}
}

// Only a long poll takes kept jobs: a claim without a wait may be a retry
// under a request id, which must get what that claim took.
func TestClaimWithoutWaitTakesNothingKept(t *testing.T) {
	c, _ := keptNode(t)
	claim := engine.Claim{Queue: "q", Owner: "w", Max: 5, LeaseMS: 60_000}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.probeShards(ctx)
	c.keep(claim, []engine.ClaimedJob{{Job: 7, Attempt: 1}}, time.Now())
	if jobs, err := c.Claim(ctx, claim); err != nil || len(jobs) != 0 {
		t.Fatalf("a claim without a wait: %+v, %v; want nothing (the node has nothing)", jobs, err)
	}
	jobs, err := c.ClaimWait(ctx, claim)
	if err != nil || len(jobs) != 1 || jobs[0].Job != 7 {
		t.Fatalf("a long poll: %+v, %v; want the kept job 7", jobs, err)
	}
}
