package embedded

import (
	"context"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Ready reports whether the engine serves, as a health check asks: its
// log accepts commands and its store reads. It returns ErrClosed after
// Close. An engine over another Backend answers for its store alone; a Raft
// node has its own readiness (raftfsm.Node.Ready).
func (e *Engine) Ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.local != nil && e.local.isClosed() {
		return engine.ErrClosed
	}
	return machine.MarkStorageError(e.store.View(func(*storage.Reader) error { return nil }))
}

// isClosed reports whether Close was called.
func (l *LocalLog) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}
