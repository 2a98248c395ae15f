package raftfsm

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"
)

// readIndexer confirms leadership for many concurrent reads with one
// round of heartbeats. A read joins the next round that has not started
// yet; a round notes the commit index, then asks Raft to verify leadership,
// so every read in it is ordered after every write acknowledged before the
// read began (the read-index rule). Without grouping, each read would cost
// its own heartbeat round to a quorum.
type readIndexer struct {
	n *Node

	mu      sync.Mutex
	next    *readRound // the round new reads join; nil when none is waiting
	running bool       // a round's verification is in flight
}

type readRound struct {
	done   chan struct{}
	commit uint64
	err    error
}

// confirm returns the commit index a read may be served at once this
// node's state machine has applied it, or the error that refused it.
func (ri *readIndexer) confirm(ctx context.Context) (uint64, error) {
	ri.mu.Lock()
	if ri.next == nil {
		ri.next = &readRound{done: make(chan struct{})}
	}
	r := ri.next
	if !ri.running {
		ri.startLocked()
	}
	ri.mu.Unlock()
	select {
	case <-r.done:
		return r.commit, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// startLocked runs the waiting round; ri.mu is held.
func (ri *readIndexer) startLocked() {
	r := ri.next
	ri.next, ri.running = nil, true
	go func() {
		r.commit = ri.n.raft.CommitIndex()
		if err := ri.n.raft.VerifyLeader().Error(); err != nil {
			r.err = ri.n.notLeader()
		} else if ri.n.raft.State() != raft.Leader {
			r.err = ri.n.notLeader()
		}
		close(r.done)
		ri.mu.Lock()
		ri.running = false
		if ri.next != nil {
			ri.startLocked()
		}
		ri.mu.Unlock()
	}()
}
