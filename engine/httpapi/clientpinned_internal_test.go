package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// A node's reader of one shard (a pinned Client) asks the shard's leader
// first, then its other replicas. It starts every read at the first
// address it was made with: after a read the leader missed (its node
// away) and a follower answered, the next read goes to the leader again.
// Remembering the follower, as an unpinned Client remembers the node that
// answered last, kept a node's pinned reads (its deliveries backlog) on
// the follower's replica after the leader came back.
func TestPinnedReaderStartsAtItsFirstNode(t *testing.T) {
	var leaderDown atomic.Bool
	var leaderHits, followerHits atomic.Int64
	job := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(engine.Job{ID: 7, Status: engine.StatusQueued})
	}
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		leaderHits.Add(1)
		if leaderDown.Load() {
			w.WriteHeader(http.StatusBadGateway) // as a proxy in front of a node that is down
			return
		}
		job(w)
	}))
	defer leader.Close()
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		followerHits.Add(1)
		job(w)
	}))
	defer follower.Close()
	c, err := NewClient(ClientConfig{Addrs: []string{leader.URL, follower.URL}, RetryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.pinned = true
	ctx := context.Background()

	leaderDown.Store(true)
	if j, err := c.Describe(ctx, engine.Target{Job: 7}); err != nil || j.ID != 7 {
		t.Fatalf("a read while the leader is away: %v, %v", j, err)
	}
	if leaderHits.Load() != 1 || followerHits.Load() != 1 {
		t.Fatalf("the read asked the leader %d times and the follower %d, want once each", leaderHits.Load(), followerHits.Load())
	}
	leaderDown.Store(false)
	if _, err := c.Describe(ctx, engine.Target{Job: 7}); err != nil {
		t.Fatal(err)
	}
	if leaderHits.Load() != 2 || followerHits.Load() != 1 {
		t.Fatalf("the read after the leader came back asked the leader %d times in all and the follower %d, want 2 and 1",
			leaderHits.Load(), followerHits.Load())
	}
}
