package httpapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// Batch operations on a sharded cluster (docs/sharding.md, "Batch
// operations"). A batch acts on the runs its query finds, which live on
// every shard, so the router starts it on every shard under one batch id:
// each shard records the batch and its leader's runner acts on that
// shard's runs (from the shard's largest run id when it started, as a
// batch of one group does). Stopping stops every shard's part; a batch is
// described as the sum of its parts: running while a part runs,
// terminated when a part was stopped, completed when every part
// completed.

var _ engine.BatchService = (*ShardRouter)(nil)

// batchesAt returns the batch service of shard k's leader: this node's
// engine where it leads the shard, else the leader's API speaking for the
// caller with the shard pinned (?shard=k), as the reads of other shards
// are made.
func (r *ShardRouter) batchesAt(ctx context.Context, k int) (engine.BatchService, context.Context, error) {
	if svc := r.set.ShardEngine(k); svc != nil && r.set.LeadsShard(k) {
		bs, err := optional[engine.BatchService](svc)
		return bs, ctx, err
	}
	if svc := r.remoteAt(ctx, k); svc != nil {
		bs, err := optional[engine.BatchService](engine.Service(svc))
		return bs, withShardPin(ctx, k), err
	}
	id, httpAddr := r.set.ShardLeader(k)
	if httpAddr == "" {
		return nil, nil, &engine.NotLeaderError{LeaderID: id}
	}
	return nil, nil, fmt.Errorf("%w: a batch acts on every shard, and shard %d's leader %s cannot be asked for a caller authenticated by its certificate; use a token",
		engine.ErrInvalidCommand, k, id)
}

// pinnedBatches returns this node's engine of the shard a pinned command
// names, which this node must lead.
func (r *ShardRouter) pinnedBatches(ctx context.Context, k int) (engine.BatchService, error) {
	svc, err := r.pinned(ctx, k)
	if err != nil {
		return nil, err
	}
	return optional[engine.BatchService](svc)
}

// shardRequestID is the request id of shard k's part of a command sent to
// every shard: each part is idempotent on its own, so a retry of the whole
// starts no part twice.
func shardRequestID(id string, k int) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf("%s/shard-%d", id, k)
}

// StartBatch implements engine.BatchService: the batch starts on every
// shard, under one id.
func (r *ShardRouter) StartBatch(ctx context.Context, c engine.StartBatch) (*engine.BatchResult, error) {
	if k, ok := pinnedShard(ctx); ok {
		bs, err := r.pinnedBatches(ctx, k)
		if err != nil {
			return nil, err
		}
		return bs.StartBatch(ctx, c)
	}
	if c.ID == "" {
		c.ID = randomID("batch-")
	}
	if c.RequestID == "" {
		c.RequestID = "start-" + c.ID
	}
	parts := make([]*engine.Batch, 0, r.count)
	for k := range r.count {
		bs, kctx, err := r.batchesAt(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("starting batch %q on shard %d: %w", c.ID, k, err)
		}
		part := c
		part.RequestID = shardRequestID(c.RequestID, k)
		res, err := bs.StartBatch(kctx, part)
		if err != nil {
			return nil, fmt.Errorf("starting batch %q on shard %d of %d (a retry with the same batch id starts the others): %w", c.ID, k, r.count, err)
		}
		parts = append(parts, res.Batch)
	}
	return &engine.BatchResult{Batch: joinBatches(parts)}, nil
}

// StopBatch implements engine.BatchService: every shard's part stops.
func (r *ShardRouter) StopBatch(ctx context.Context, c engine.StopBatch) (*engine.BatchResult, error) {
	if k, ok := pinnedShard(ctx); ok {
		bs, err := r.pinnedBatches(ctx, k)
		if err != nil {
			return nil, err
		}
		return bs.StopBatch(ctx, c)
	}
	if c.RequestID == "" {
		c.RequestID = randomID("stop-")
	}
	parts := make([]*engine.Batch, 0, r.count)
	var unknown error
	for k := range r.count {
		bs, kctx, err := r.batchesAt(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("stopping batch %q on shard %d: %w", c.ID, k, err)
		}
		part := c
		part.RequestID = shardRequestID(c.RequestID, k)
		res, err := bs.StopBatch(kctx, part)
		switch {
		case errors.Is(err, engine.ErrUnknownBatch):
			unknown = err // a shard the batch's start did not reach (see DescribeBatch)
		case err != nil:
			return nil, fmt.Errorf("stopping batch %q on shard %d of %d: %w", c.ID, k, r.count, err)
		default:
			parts = append(parts, res.Batch)
		}
	}
	if len(parts) == 0 {
		return nil, unknown
	}
	return &engine.BatchResult{Batch: joinBatches(parts)}, nil
}

// DescribeBatch implements engine.BatchService: the batch's parts, joined.
// A batch may have parts on some shards only: its start failed part-way
// (a retry with the same id starts the others), or an administrator
// started it on one shard (POST /v1/batches?shard=k, the route the nodes
// use among themselves). It is described and stopped by the parts it has,
// as it is listed: a shard that does not know it holds no part of it. It
// is unknown only when no shard knows it.
func (r *ShardRouter) DescribeBatch(ctx context.Context, id string) (*engine.Batch, error) {
	var parts []*engine.Batch
	var unknown error
	err := r.eachShardBatches(ctx, func(bs engine.BatchService, ctx context.Context) error {
		b, err := bs.DescribeBatch(ctx, id)
		switch {
		case errors.Is(err, engine.ErrUnknownBatch):
			unknown = err // a shard the batch's start did not reach
			return nil
		case err != nil:
			return err
		}
		parts = append(parts, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, unknown
	}
	return joinBatches(parts), nil
}

// ListBatches implements engine.BatchService: every shard's page after
// the cursor, merged by id, each batch its parts joined.
func (r *ShardRouter) ListBatches(ctx context.Context, q engine.BatchListQuery) (*engine.BatchListPage, error) {
	// As a shard's engine refuses it: a negative limit is not read as the
	// default.
	if q.Limit < 0 || q.Limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: batch list limit %d is not in [0, %d]", engine.ErrInvalidCommand, q.Limit, engine.MaxPage)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	byID := map[string][]*engine.Batch{}
	// A batch listed on one shard but cut from another's page (that page
	// was full of smaller ids) would be joined from some of its parts: the
	// page ends before the smallest id past which any full page of a
	// shard knows nothing.
	end := ""
	err := r.eachShardBatches(ctx, func(bs engine.BatchService, ctx context.Context) error {
		p, err := bs.ListBatches(ctx, engine.BatchListQuery{After: q.After, Limit: limit})
		if err != nil {
			return err
		}
		for _, b := range p.Batches {
			byID[b.ID] = append(byID[b.ID], b)
		}
		if p.Next != "" && len(p.Batches) > 0 {
			if last := p.Batches[len(p.Batches)-1].ID; end == "" || last < end {
				end = last
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		if end == "" || id <= end {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	page := &engine.BatchListPage{Batches: []*engine.Batch{}}
	for _, id := range ids {
		if len(page.Batches) == limit {
			break
		}
		page.Batches = append(page.Batches, joinBatches(byID[id]))
	}
	if n := len(page.Batches); n > 0 && (n == limit || end != "") {
		page.Next = page.Batches[n-1].ID
	}
	return page, nil
}

// eachShardBatches calls read with each shard's batch service, read as
// List reads a shard (eachShardService).
func (r *ShardRouter) eachShardBatches(ctx context.Context, read func(engine.BatchService, context.Context) error) error {
	return eachShardService(r, ctx, read)
}

// joinBatches joins the parts of one batch, one per shard: counts added,
// running while a part runs, terminated when one was stopped (and none
// runs), completed when all completed; the earliest start, the latest
// update and end, and the last error of the first part that has one.
func joinBatches(parts []*engine.Batch) *engine.Batch {
	if len(parts) == 0 {
		return nil
	}
	b := *parts[0]
	b.Pending, b.Cursor, b.MaxJob = nil, 0, 0
	b.Total, b.Done, b.Failed, b.Skipped = 0, 0, 0, 0
	running, stopped := false, false
	var errs []string
	for _, p := range parts {
		b.Total += p.Total
		b.Done += p.Done
		b.Failed += p.Failed
		b.Skipped += p.Skipped
		b.CreatedMS = min(b.CreatedMS, p.CreatedMS)
		b.UpdatedMS = max(b.UpdatedMS, p.UpdatedMS)
		b.ClosedMS = max(b.ClosedMS, p.ClosedMS)
		running = running || p.State == engine.BatchRunning
		stopped = stopped || p.State == engine.BatchTerminated
		if p.LastError != "" && !slices.Contains(errs, p.LastError) {
			errs = append(errs, p.LastError)
		}
		if p.StopBy != "" {
			b.StopBy, b.StopReason = p.StopBy, p.StopReason
		}
	}
	switch {
	case running:
		b.State, b.ClosedMS = engine.BatchRunning, 0
	case stopped:
		b.State = engine.BatchTerminated
	default:
		b.State = engine.BatchCompleted
	}
	b.LastError = strings.Join(errs, "; ")
	return &b
}
