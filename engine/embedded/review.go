package embedded

import (
	"context"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// ListAwaitingReviews lists the tasks of every job that await a person, in
// creation order. It walks the index of such tasks, which Apply keeps in
// the transaction of each state change, and filters state, queue and type
// from the records; so a filtered page reads at most every awaiting task,
// never the tasks that await nobody.
func (e *Engine) ListAwaitingReviews(ctx context.Context, q engine.AwaitingQuery) (*engine.AwaitingPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	var page *engine.AwaitingPage
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		page, err = machine.ReadAwaitingReviews(r, q)
		return err
	})
	return page, err
}

var _ engine.ReviewService = (*Engine)(nil)

// CreateReview creates a review task. On a shard of a sharded cluster, a
// workflow step's task whose review job routes to another shard is created
// there through this shard's outbox: CreateReview waits for the entry's
// acknowledgement and answers the task's id (awaitRemoteReview).
func (e *Engine) CreateReview(ctx context.Context, c engine.CreateReview) (*engine.ReviewResult, error) {
	r, err := propose[*engine.ReviewResult](ctx, e, &c)
	if err != nil || r.Delivery == nil {
		return r, err
	}
	return e.awaitRemoteReview(ctx, c.ParentJob, c.ParentStep, *r.Delivery)
}

// ReviewCommand applies a human command to a task.
func (e *Engine) ReviewCommand(ctx context.Context, c engine.ReviewCommand) (*engine.ReviewResult, error) {
	return propose[*engine.ReviewResult](ctx, e, &c)
}

// ClaimReviews claims claimable tasks for a worker or a reviewer.
func (e *Engine) ClaimReviews(ctx context.Context, c engine.ClaimReviews) ([]engine.ClaimedReview, error) {
	r, err := propose[*engine.ClaimReviewsResult](ctx, e, &c)
	if err != nil {
		return nil, err
	}
	return r.Reviews, nil
}

// ReviewReport records a lease holder's report.
func (e *Engine) ReviewReport(ctx context.Context, c engine.ReviewReport) (*engine.ReviewResult, error) {
	return propose[*engine.ReviewResult](ctx, e, &c)
}

// ReviewHeartbeat renews task leases.
func (e *Engine) ReviewHeartbeat(ctx context.Context, c engine.ReviewHeartbeat) (*engine.ReviewHeartbeatResult, error) {
	return propose[*engine.ReviewHeartbeatResult](ctx, e, &c)
}

// ClaimReviewsWait is ClaimReviews that, while nothing is claimable, waits for
// the next commit and tries again, until it claims something or ctx ends.
// It never polls on a fixed tick.
func (e *Engine) ClaimReviewsWait(ctx context.Context, c engine.ClaimReviews) ([]engine.ClaimedReview, error) {
	for {
		changed := e.Committed()
		ready, err := e.MayHaveReviews(c.Role, c.Queue)
		if err != nil {
			return nil, err
		}
		if ready {
			// Not cancelled with ctx: a claim applied after its caller
			// gave up would hold tasks under leases nobody renews.
			ts, err := e.ClaimReviews(context.WithoutCancel(ctx), c)
			if err != nil || len(ts) > 0 {
				return ts, err
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// MayHaveReviews reports, from the applied state and without a read barrier,
// whether queue's claim index of role holds a task, so that waiting
// claimers propose nothing (in a cluster, no Raft entry) while it is empty.
func (e *Engine) MayHaveReviews(role engine.ReviewRole, queue string) (bool, error) {
	found := false
	err := e.store.View(func(r *storage.Reader) error {
		var err error
		found, err = machine.HasReviews(r, role, queue)
		return err
	})
	return found, machine.MarkStorageError(err)
}

// DescribeReview returns the record of the task t names.
func (e *Engine) DescribeReview(ctx context.Context, t engine.ReviewTarget) (*engine.Review, error) {
	var out *engine.Review
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = machine.ReadReviewTarget(r, t)
		return err
	})
	return out, err
}

// ReviewHistory returns the whole history of task id.
func (e *Engine) ReviewHistory(ctx context.Context, id engine.ReviewID) ([]engine.ReviewEvent, error) {
	var out []engine.ReviewEvent
	err := e.view(ctx, func(r *storage.Reader) error {
		if _, err := machine.ReadReview(r, id); err != nil {
			return err
		}
		var err error
		out, err = machine.ReadReviewHistory(r, id)
		return err
	})
	return out, err
}

// ListReviews returns the tasks of job in creation order.
func (e *Engine) ListReviews(ctx context.Context, job string) ([]engine.Review, error) {
	var out []engine.Review
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = machine.ReadJobReviews(r, job)
		return err
	})
	return out, err
}

// ReviewManifest returns the manifest of job, its running spans counted up
// to the engine's latest command time.
func (e *Engine) ReviewManifest(ctx context.Context, job string) (*engine.Manifest, error) {
	var m *engine.Manifest
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		m, err = machine.ReadManifest(r, job)
		return err
	})
	return m, err
}
