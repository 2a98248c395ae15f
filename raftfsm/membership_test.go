package raftfsm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"
)

// members returns the server ids of n's latest configuration.
func members(t *testing.T, n *Node) map[string]bool {
	t.Helper()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range cf.Configuration().Servers {
		ids[string(s.ID)] = true
	}
	return ids
}

// A leader asked to remove itself hands leadership to another voter and
// answers not-leader, and the new leader removes it. It used to remove
// itself: hashicorp/raft shut its Raft down as the change committed, the
// removal of its HTTP address then failed (or waited for an entry Raft
// never answered, until the caller gave up), and now and then the change's
// own future was never answered, so the request outlived the node's Close.
func TestRemoveLeaderHandsLeadershipOver(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := c.leader()
	err := old.Remove(ctx, old.ID())
	var nl *engine.NotLeaderError
	if !errors.As(err, &nl) {
		t.Fatalf("the leader removing itself: %v, want a NotLeaderError", err)
	}
	if old.IsLeader() || old.raft.State() == raft.Shutdown {
		t.Fatalf("%s after removing itself: state %v; want a running follower", old.ID(), old.raft.State())
	}
	if !members(t, old)[old.ID()] {
		t.Fatalf("%s left the configuration itself; the next leader must remove it", old.ID())
	}
	// The request goes on to the new leader, as the HTTP API forwards it.
	var next *Node
	c.eventually("a new leader", func() bool {
		for _, n := range c.live() {
			if n != old && n.IsLeader() && n.readBarrier(ctx) == nil {
				next = n
				return true
			}
		}
		return false
	})
	if nl.LeaderID != "" && nl.LeaderID != next.ID() {
		t.Fatalf("the not-leader answer named %q, but %s leads", nl.LeaderID, next.ID())
	}
	if err := next.Remove(ctx, old.ID()); err != nil {
		t.Fatalf("%s removing %s: %v", next.ID(), old.ID(), err)
	}
	if members(t, next)[old.ID()] || len(members(t, next)) != 2 {
		t.Fatalf("after the removal %s has members %v", next.ID(), members(t, next))
	}
	if addr := next.fsm.nodeHTTP(old.ID()); addr != "" {
		t.Fatalf("the removed member's HTTP address %q is still recorded", addr)
	}
}

// A one-node cluster's leader has nobody to hand over to: removing it is
// refused as invalid, at once. It used to be answered ErrUnknownOutcome
// (Raft refuses a configuration without voters), which clients retry.
func TestRemoveOnlyMemberRefused(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := c.leader()
	err := l.Remove(ctx, l.ID())
	if !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("removing the only member: %v, want ErrInvalidCommand", err)
	}
	t.Logf("removing the only member: %v", err)
	if !l.IsLeader() || !members(t, l)[l.ID()] {
		t.Fatalf("%s after the refused removal: leader %v, members %v", l.ID(), l.IsLeader(), members(t, l))
	}
}

// A leader's change waits no longer than the leader's term: when the node
// closes, a change whose future Raft will never answer (hashicorp/raft
// leaves one unanswered when it shuts down) ends with ErrUnknownOutcome,
// so the request waiting for it does not outlive the node.
func TestChangeWaitEndsWithTheTerm(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := c.leader()
	termCtx, stop, err := l.leading(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	got := make(chan error, 1)
	go func() { got <- l.awaitChange(ctx, termCtx, stuckFuture{}) }()
	c.kill(l.ID())
	select {
	case err := <-got:
		if !errors.Is(err, engine.ErrUnknownOutcome) {
			t.Fatalf("the unanswered change ended with %v, want ErrUnknownOutcome", err)
		}
	case <-ctx.Done():
		t.Fatal("the change still waits for a future Raft never answers after the node closed")
	}
	if _, _, err := l.leading(ctx); !errors.Is(err, engine.ErrNotLeader) {
		t.Fatalf("a closed node's leading: %v, want ErrNotLeader", err)
	}
}
