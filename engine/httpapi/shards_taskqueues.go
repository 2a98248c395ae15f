package httpapi

import (
	"context"
	"slices"

	"github.com/heddlewf/heddle/engine"
)

// The task queue view of a sharded cluster (docs/sharding.md,
// "Visibility"). A queue's jobs live on every shard, so its backlog is the
// sum of each shard's, each read at the shard's leader as List reads it
// (this node's replica where it leads, else the leader asked with the
// shard pinned). Its pollers and rates are every node's own view,
// which the Server merges across the members as it does for a cluster of
// one group; a node's own view joins its shards' engines: the pollers are
// recorded by the first shard it holds (BeginPoll), each shard's engine
// counts the claims it served and the jobs that became ready in it, and a
// node's rates are the sum over its shards. With fewer replicas than nodes
// a node sees the rates of its shards only, and the cluster's figure is
// the largest node's.

var (
	_ engine.TaskQueueReader = (*ShardRouter)(nil)
	_ pollRecorder           = (*ShardRouter)(nil)
	_ taskQueueViewer        = (*ShardRouter)(nil)
)

// DescribeTaskQueue implements engine.TaskQueueReader.
func (r *ShardRouter) DescribeTaskQueue(ctx context.Context, queue string) (*engine.TaskQueueDescription, error) {
	var out *engine.TaskQueueDescription
	err := r.eachShardQueues(ctx, func(tq engine.TaskQueueReader, ctx context.Context) error {
		d, err := tq.DescribeTaskQueue(ctx, queue)
		if err == nil {
			out = addBacklog(out, d)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	r.ownView(out)
	return out, nil
}

// ListTaskQueues implements engine.TaskQueueReader: the union of the
// shards' queues, each with the sum of their backlogs.
func (r *ShardRouter) ListTaskQueues(ctx context.Context) (*engine.TaskQueueList, error) {
	out := &engine.TaskQueueList{Queues: []engine.TaskQueueDescription{}}
	err := r.eachShardQueues(ctx, func(tq engine.TaskQueueReader, ctx context.Context) error {
		l, err := tq.ListTaskQueues(ctx)
		if err != nil {
			return err
		}
		out.Truncated = out.Truncated || l.Truncated
		for _, d := range l.Queues {
			i, found := slices.BinarySearchFunc(out.Queues, d.Name, byName)
			switch {
			case found:
				addBacklog(&out.Queues[i], &d)
			case len(out.Queues) >= engine.MaxTaskQueues:
				out.Truncated = true
			default:
				out.Queues = slices.Insert(out.Queues, i, *addBacklog(nil, &d))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out.Queues {
		r.ownView(&out.Queues[i])
	}
	return out, nil
}

// QueuedReason implements engine.TaskQueueReader: as an engine explains
// it, with the queue's backlog over every shard and this node's pollers.
func (r *ShardRouter) QueuedReason(ctx context.Context, t engine.Target) (*engine.QueuedReason, error) {
	j, err := r.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	if j.Status != engine.StatusQueued {
		return &engine.QueuedReason{}, nil
	}
	d, err := r.DescribeTaskQueue(ctx, j.Queue)
	if err != nil {
		return nil, err
	}
	return engine.ExplainQueued(j, d, engine.PolledQueues(r.TaskQueueViews())), nil
}

// eachShardQueues calls read with each shard's task queue reader
// (eachShardService).
func (r *ShardRouter) eachShardQueues(ctx context.Context, read func(engine.TaskQueueReader, context.Context) error) error {
	return eachShardService(r, ctx, read)
}

// eachShardService calls read with each shard's service I at the shard's
// leader: this node's engine where it leads, else the leader's API with
// the shard pinned, as the other shards' reads are made; a read pinned to
// one shard (?shard=k, another node's router asking) reads that shard
// alone.
func eachShardService[I any](r *ShardRouter, ctx context.Context, read func(I, context.Context) error) error {
	if k, ok := pinnedShard(ctx); ok {
		svc, err := r.pinned(ctx, k)
		if err != nil {
			return err
		}
		i, err := optional[I](svc)
		if err != nil {
			return err
		}
		return read(i, ctx)
	}
	for k := range r.count {
		svc, rctx, err := r.reader(ctx, k)
		if err != nil {
			return err
		}
		i, err := optional[I](svc)
		if err != nil {
			return err
		}
		if err := read(i, rctx); err != nil {
			return err
		}
	}
	return nil
}

// addBacklog adds d's backlog (one shard's) to sum, a new description of
// d's queue when sum is nil, and returns sum. Pollers and rates are left
// to ownView.
func addBacklog(sum, d *engine.TaskQueueDescription) *engine.TaskQueueDescription {
	if sum == nil {
		return &engine.TaskQueueDescription{Name: d.Name, Pollers: []engine.TaskQueuePoller{}, NowMS: d.NowMS,
			Stats: engine.TaskQueueStats{BacklogCount: d.Stats.BacklogCount, BacklogCountCapped: d.Stats.BacklogCountCapped,
				BacklogAgeMS: d.Stats.BacklogAgeMS, DelayedCount: d.Stats.DelayedCount, DelayedCountCapped: d.Stats.DelayedCountCapped}}
	}
	s := &sum.Stats
	s.BacklogCount += d.Stats.BacklogCount
	s.BacklogCountCapped = s.BacklogCountCapped || d.Stats.BacklogCountCapped
	s.BacklogAgeMS = max(s.BacklogAgeMS, d.Stats.BacklogAgeMS)
	s.DelayedCount += d.Stats.DelayedCount
	s.DelayedCountCapped = s.DelayedCountCapped || d.Stats.DelayedCountCapped
	sum.NowMS = max(sum.NowMS, d.NowMS)
	return sum
}

// ownView sets d's pollers and rates to this node's own view of its
// queue.
func (r *ShardRouter) ownView(d *engine.TaskQueueDescription) {
	views := r.TaskQueueViews()
	if i, ok := slices.BinarySearchFunc(views, d.Name, byName); ok {
		v := views[i]
		d.Pollers, d.Stats.AddRate, d.Stats.DispatchRate = v.Pollers, v.Stats.AddRate, v.Stats.DispatchRate
		d.LastPollMS, d.LastPoller = v.LastPollMS, v.LastPoller
	}
}

// BeginPoll records a worker's poll in the first shard this node holds,
// whose engine keeps the node's pollers (one record per poll, whatever the
// shards it claims from).
func (r *ShardRouter) BeginPoll(c engine.Claim) func() {
	for k := range r.count {
		if pr, ok := r.set.ShardEngine(k).(pollRecorder); ok {
			return pr.BeginPoll(c)
		}
	}
	return func() {}
}

// TaskQueueViews returns this node's own view: its shards' engines' views
// joined, each queue's pollers merged by identity (their dispatch rates
// added, as each shard counts the claims it served) and its rates added.
func (r *ShardRouter) TaskQueueViews() []engine.TaskQueueDescription {
	out := []engine.TaskQueueDescription{}
	for k := range r.count {
		v, ok := r.set.ShardEngine(k).(taskQueueViewer)
		if !ok {
			continue
		}
		for _, d := range v.TaskQueueViews() {
			i, found := slices.BinarySearchFunc(out, d.Name, byName)
			if !found {
				d.Pollers = slices.Clone(d.Pollers)
				out = slices.Insert(out, i, d)
				continue
			}
			sum := &out[i]
			add, dispatch := sum.Stats.AddRate+d.Stats.AddRate, sum.Stats.DispatchRate+d.Stats.DispatchRate
			sum.Merge(&d)
			sum.Stats.AddRate, sum.Stats.DispatchRate = add, dispatch
			sum.NowMS = max(sum.NowMS, d.NowMS)
		}
	}
	return out
}
