package raftfsm

import (
	"context"

	"github.com/hashicorp/raft"
)

// futureError returns f's error, or ctx's error when ctx ends first.
//
// hashicorp/raft never answers a future that is still queued in its apply
// channel when it shuts down (the channel is buffered: BatchApplyCh), so
// whoever waits for one while the node closes would wait for ever, and
// Close with it. The goroutine left waiting on such a future stays blocked;
// there is one per entry caught that way, only when a node closes.
func futureError(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select { // an answer that came at the same moment wins
		case err := <-done:
			return err
		default:
			return ctx.Err()
		}
	}
}
