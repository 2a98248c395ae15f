package httpapi

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/loopback"
)

// deadLeaderNode is a node of a sharded cluster that counts the runs of a
// shard led by another node, as ShardRouter reads another shard: over
// HTTP, with a client of that leader's address alone (shardReaders). Its
// first count finds that leader dead (nothing listens at its address); a
// new leader has been elected by the second.
type deadLeaderNode struct {
	engine.Service
	dead  string
	calls atomic.Int64
}

func (n *deadLeaderNode) Count(ctx context.Context, q engine.ListQuery) (*engine.CountResult, error) {
	if n.calls.Add(1) > 1 {
		return &engine.CountResult{Count: 7}, nil
	}
	leader, err := NewClient(ClientConfig{Addrs: []string{n.dead}, RetryTimeout: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	leader.pinned = true
	return leader.Count(ctx, q)
}

// TestReadOfADeadShardLeaderIsRetried: a read that a node of a sharded
// cluster could not make at another shard's leader (the leader died, and
// the node had not yet learned of the next one) answers 503 timeout, which
// the caller's client tries again, as docs/sharding.md says. Before, it
// answered 500 internal with the connection error, and the caller gave
// up: "heddle workflow count" and list failed for the seconds after a
// shard's leader was killed (found by a probe).
func TestReadOfADeadShardLeaderIsRetried(t *testing.T) {
	dead, err := loopback.Reserve() // a free port: nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	svc := &deadLeaderNode{dead: dead}
	_, hs := node(t, svc)
	cl, err := NewClient(ClientConfig{Addrs: []string{hs.URL}, RetryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.Count(context.Background(), engine.ListQuery{})
	if err != nil || got.Count != 7 {
		t.Fatalf("count through a node whose shard leader died: %+v, %v; want 7 once the node tried again", got, err)
	}
	if n := svc.calls.Load(); n != 2 {
		t.Fatalf("the node was asked %d times, want 2 (the failed read and its retry)", n)
	}
}
