package embedded

import (
	"context"

	"github.com/heddlewf/heddle/engine"
)

// WatchHistory implements Service: it answers the job's events after
// afterSeq as soon as there are any, waking only for writes of that job's
// record (every appended event writes it). It reads the node's own applied
// state without a read barrier: the events it returns are committed, but a
// node that lags the leader answers later than the leader would, which is
// all a notification needs.
func (e *Engine) WatchHistory(ctx context.Context, id engine.JobID, afterSeq uint64, limit int) (*engine.HistoryPage, error) {
	read := engine.WithStaleRead(ctx)
	for {
		changed := e.jobChanged(id) // before the read, so no write is missed
		page, err := e.History(read, id, afterSeq, limit)
		if err != nil || len(page.Events) > 0 {
			e.forgetWaiter(id, changed)
			return page, err
		}
		select {
		case <-changed: // closed and dropped by NotifyCommitted
		case <-ctx.Done():
			e.forgetWaiter(id, changed)
			return nil, ctx.Err()
		}
	}
}
