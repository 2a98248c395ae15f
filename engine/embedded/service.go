package embedded

import (
	"context"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

var _ engine.Service = (*Engine)(nil)

// ClaimWait implements Service: it claims, and while nothing was claimed
// sleeps until the next commit that wrote something.
func (e *Engine) ClaimWait(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	defer e.BeginPoll(c)()
	for {
		changed := e.Committed() // before the look, so no commit is missed
		ready, err := e.MayHaveReady(c.Queue)
		if err != nil {
			return nil, err
		}
		if ready {
			// The claim itself is not cancelled with ctx: a claim applied
			// after its caller gave up would leave jobs leased to nobody
			// until their leases expire.
			jobs, err := e.Claim(context.WithoutCancel(ctx), c)
			if err != nil || len(jobs) > 0 {
				return jobs, err
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// MayHaveReady reports, from the applied state and without a read barrier,
// whether queue holds a job ready to claim. Waiting claimers ask it before
// proposing, so an idle queue costs no proposals (in a cluster, no Raft
// entries). A "no" can be stale by the commits in flight; a caller that
// took Committed() before asking is woken by them and asks again.
func (e *Engine) MayHaveReady(queue string) (bool, error) {
	found := false
	err := e.store.View(func(r *storage.Reader) error {
		var err error
		found, err = machine.HasReady(r, queue)
		return err
	})
	return found, machine.MarkStorageError(err)
}
