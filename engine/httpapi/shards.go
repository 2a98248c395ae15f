package httpapi

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync/atomic"

	"github.com/heddlewf/heddle/engine"
)

// ShardSet is what a node of a sharded cluster (docs/sharding.md) gives
// the ShardRouter: its replicas of the shards, and what it knows of their
// leaders. raftfsm.Host is one. Its methods are called concurrently.
type ShardSet interface {
	// ShardCount is the cluster's shard count.
	ShardCount() int
	// ShardEngine returns this node's replica of shard k (an
	// engine.Service that is also the engine's optional interfaces, as
	// *embedded.Engine is), or nil when the node holds none.
	ShardEngine(k int) engine.Service
	// LeadsShard reports whether this node leads shard k now.
	LeadsShard(k int) bool
	// ShardLeader returns the leader of shard k as this node knows it,
	// with its HTTP address (either may be empty).
	ShardLeader(k int) (id, httpAddr string)
	// ShardReplicas returns the HTTP addresses of the nodes holding a
	// replica of shard k, the leader ShardLeader names first, this node
	// left out: where a read that the leader does not answer (its node
	// down, or leading no more) is asked next, since any node forwards
	// to the shard's leader.
	ShardReplicas(k int) []string
	// NoteShardLeader records that the node at httpAddr applied a command
	// this node forwarded for shard k, of which this node holds no
	// replica, and so leads k; ShardLeader and ShardMap name it from then
	// on. (Such a node knows no leader of k but the placement's desired
	// one, which keeps its place while its node is down.) It must not
	// block; the Server calls it from its handlers, concurrently.
	NoteShardLeader(k int, httpAddr string)
	// ShardsChanged returns a channel closed at the next commit or
	// change of leader of any shard this node holds.
	ShardsChanged() <-chan struct{}
	// ShardMap is what a client routes by.
	ShardMap() engine.ShardMap
	// PlacementVersion is the version of the placement the node applied.
	PlacementVersion() uint64
}

// ShardRouter is the engine.Service of a node of a sharded cluster: it
// sends each command and read to the engine of the shard it belongs to
// (engine.ShardOfCommand), on this node. Where this node follows that
// shard, the shard's engine answers not-leader naming its leader, and the
// Server forwards the request there; where the node holds no replica, the
// router answers so itself. Claims are served from the shards this node
// leads. It also implements the engine's optional interfaces
// (ScheduleService, ReviewService, AsyncService, BoundedReader,
// ResourceWaiterReader) by routing them the same way.
type ShardRouter struct {
	set   ShardSet
	count int
	next  atomic.Uint64 // the shard of the next create that names none
	// remote reads a shard at its leader with the caller's credentials;
	// NewServer sets it. Nil: the shards this node follows are read from
	// its replicas.
	remote *shardReaders
}

var (
	_ engine.Service              = (*ShardRouter)(nil)
	_ engine.ScheduleService      = (*ShardRouter)(nil)
	_ engine.ReviewService        = (*ShardRouter)(nil)
	_ engine.AsyncService         = (*ShardRouter)(nil)
	_ engine.BoundedReader        = (*ShardRouter)(nil)
	_ engine.ResourceWaiterReader = (*ShardRouter)(nil)
	_ engine.CancelSafeClaimer    = (*ShardRouter)(nil)
	_ engine.ClosingWaiter        = (*ShardRouter)(nil)
)

// NewShardRouter returns the router over set.
func NewShardRouter(set ShardSet) *ShardRouter {
	return &ShardRouter{set: set, count: set.ShardCount()}
}

// PlacementVersion is the set's; the Server puts it on every answer
// (placementHeader), so that a client learns the cluster is sharded and
// when its map is stale.
func (r *ShardRouter) PlacementVersion() uint64 { return r.set.PlacementVersion() }

// ShardCount is the cluster's number of shards, fixed at its creation.
func (r *ShardRouter) ShardCount() int { return r.count }

// ShardMap is the set's (GET /v1/cluster/shards).
func (r *ShardRouter) ShardMap() engine.ShardMap { return r.set.ShardMap() }

// at returns the engine of shard k on this node, or the error that sends
// the caller to the node that leads it.
func (r *ShardRouter) at(k int) (engine.Service, error) {
	if k < 0 || k >= r.count {
		return nil, fmt.Errorf("%w: shard %d is not one of the cluster's %d", engine.ErrUnknownJob, k, r.count)
	}
	if svc := r.set.ShardEngine(k); svc != nil {
		return svc, nil
	}
	id, httpAddr := r.set.ShardLeader(k)
	nl := &engine.NotLeaderError{LeaderID: id, LeaderHTTP: httpAddr}
	for _, a := range r.set.ShardReplicas(k) {
		if a != httpAddr {
			nl.Others = append(nl.Others, a)
		}
	}
	return nil, &unheldShardError{shard: k, nl: nl, teaches: true}
}

// unheldShardError is the not-leader error of a shard this node holds no
// replica of. The Server forwards the request as for any not-leader error,
// and, when teaches, tells the set which node applied a forwarded command
// (ShardSet.NoteShardLeader): false when the node it goes to picks the
// shard anew (a create whose shard is a turn).
type unheldShardError struct {
	shard   int
	nl      *engine.NotLeaderError
	teaches bool
}

func (e *unheldShardError) Error() string { return e.nl.Error() }
func (e *unheldShardError) Unwrap() error { return e.nl }

// job returns the engine of the shard of job id.
func (r *ShardRouter) job(id engine.JobID) (engine.Service, error) {
	k := engine.ShardOfJob(id)
	if k >= r.count {
		return nil, fmt.Errorf("%w: %d (its id names shard %d of %d)", engine.ErrUnknownJob, id, k, r.count)
	}
	return r.at(k)
}

// of returns the engine of cmd's shard (a RouteOne command).
func (r *ShardRouter) of(cmd engine.Command) (engine.Service, error) {
	k, route := engine.ShardOfCommand(cmd, r.count)
	if route != engine.RouteOne {
		return nil, fmt.Errorf("%w: %s does not route to one shard", engine.ErrInvalidCommand, cmd.Kind())
	}
	if k < 0 {
		// A create that names no workflow id, parent or request id: the
		// shards take turns. Forwarded, it takes the turn of the node it
		// goes to, whose answer says nothing of this shard's leader.
		k = int(r.next.Add(1) % uint64(r.count))
		svc, err := r.at(k)
		var unheld *unheldShardError
		if errors.As(err, &unheld) {
			unheld.teaches = false
		}
		return svc, err
	}
	if k >= r.count {
		switch cmd.(type) {
		case *engine.ReviewReport, *engine.ReviewCommand:
			return nil, fmt.Errorf("%w: its id names shard %d of %d", engine.ErrUnknownReview, k, r.count)
		case *engine.Deliver:
			// A delivery names its target shard itself; no job is unknown.
			return nil, engine.InvalidField("Deliver", "Target", fmt.Sprintf("is %d, not a shard of %d", k, r.count))
		}
		return nil, fmt.Errorf("%w: its id names shard %d of %d", engine.ErrUnknownJob, k, r.count)
	}
	return r.at(k)
}

// route sends cmd to its shard's engine with call.
func route[C engine.Command, R any](r *ShardRouter, cmd C, call func(engine.Service) (R, error)) (R, error) {
	svc, err := r.of(cmd)
	if err != nil {
		var zero R
		return zero, err
	}
	return call(svc)
}

// optional returns svc as the optional interface I, or an error saying the
// shard's engine lacks it.
func optional[I any](svc engine.Service) (I, error) {
	i, ok := svc.(I)
	if !ok {
		return i, fmt.Errorf("%w: a shard's engine (%T) does not serve this", ErrNoRoute, svc)
	}
	return i, nil
}

// Create implements engine.Service.
func (r *ShardRouter) Create(ctx context.Context, c engine.CreateJob) (*engine.CreateResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.CreateResult, error) { return s.Create(ctx, c) })
}

// Heartbeat implements engine.Service. A heartbeat naming leases of
// several shards is split by shard when this node leads them all, and
// refused with ErrCrossShard otherwise (the Go client splits it itself).
func (r *ShardRouter) Heartbeat(ctx context.Context, c engine.Heartbeat) (*engine.HeartbeatResult, error) {
	if _, rt := engine.ShardOfCommand(&c, r.count); rt == engine.RouteOne {
		return route(r, &c, func(s engine.Service) (*engine.HeartbeatResult, error) { return s.Heartbeat(ctx, c) })
	}
	parts := map[int][]engine.LeaseRef{}
	for _, l := range c.Leases {
		parts[engine.ShardOfJob(l.Job)] = append(parts[engine.ShardOfJob(l.Job)], l)
	}
	shards := sortedKeys(parts)
	for _, k := range shards {
		if !r.set.LeadsShard(k) {
			return nil, &engine.CrossShardError{Command: "Heartbeat", What: fmt.Sprintf("leases of shards %v, not all led by this node", shards), From: -1, To: -1}
		}
	}
	out := &engine.HeartbeatResult{}
	for _, k := range shards {
		svc, err := r.at(k)
		if err != nil {
			return nil, err
		}
		part := c
		part.Leases = parts[k]
		res, err := svc.Heartbeat(ctx, part)
		if err != nil {
			return nil, err
		}
		if out.LeaseExpiryMS == 0 || res.LeaseExpiryMS < out.LeaseExpiryMS {
			out.LeaseExpiryMS = res.LeaseExpiryMS
		}
		out.Refused = append(out.Refused, res.Refused...)
		out.CancelRequested = append(out.CancelRequested, res.CancelRequested...)
	}
	return out, nil
}

func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Append implements engine.Service.
func (r *ShardRouter) Append(ctx context.Context, c engine.AppendEvents) (*engine.AppendResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.AppendResult, error) { return s.Append(ctx, c) })
}

// CommitStep implements engine.Service.
func (r *ShardRouter) CommitStep(ctx context.Context, c engine.CommitStep) (*engine.AppendResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.AppendResult, error) { return s.CommitStep(ctx, c) })
}

// Wait implements engine.Service.
func (r *ShardRouter) Wait(ctx context.Context, c engine.Wait) (*engine.WaitResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.WaitResult, error) { return s.Wait(ctx, c) })
}

// Signal implements engine.Service.
func (r *ShardRouter) Signal(ctx context.Context, c engine.Signal) (*engine.SignalResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.SignalResult, error) { return s.Signal(ctx, c) })
}

// Cancel implements engine.Service.
func (r *ShardRouter) Cancel(ctx context.Context, c engine.Cancel) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Cancel(ctx, c) })
}

// Activate implements engine.Service.
func (r *ShardRouter) Activate(ctx context.Context, c engine.Activate) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Activate(ctx, c) })
}

// Suspend implements engine.Service.
func (r *ShardRouter) Suspend(ctx context.Context, c engine.Suspend) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Suspend(ctx, c) })
}

// Resume implements engine.Service.
func (r *ShardRouter) Resume(ctx context.Context, c engine.Resume) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Resume(ctx, c) })
}

// Complete implements engine.Service.
func (r *ShardRouter) Complete(ctx context.Context, c engine.Complete) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Complete(ctx, c) })
}

// Fail implements engine.Service.
func (r *ShardRouter) Fail(ctx context.Context, c engine.Fail) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Fail(ctx, c) })
}

// Requeue implements engine.Service.
func (r *ShardRouter) Requeue(ctx context.Context, c engine.Requeue) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Requeue(ctx, c) })
}

// RequestCancel implements engine.Service.
func (r *ShardRouter) RequestCancel(ctx context.Context, c engine.RequestCancel) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.RequestCancel(ctx, c) })
}

// Terminate implements engine.Service.
func (r *ShardRouter) Terminate(ctx context.Context, c engine.Terminate) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Terminate(ctx, c) })
}

// Pause implements engine.Service.
func (r *ShardRouter) Pause(ctx context.Context, c engine.Pause) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Pause(ctx, c) })
}

// Unpause implements engine.Service.
func (r *ShardRouter) Unpause(ctx context.Context, c engine.Unpause) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) { return s.Unpause(ctx, c) })
}

// PauseActivity implements engine.Service.
func (r *ShardRouter) PauseActivity(ctx context.Context, c engine.PauseActivity) (*engine.ActivityResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ActivityResult, error) { return s.PauseActivity(ctx, c) })
}

// UnpauseActivity implements engine.Service.
func (r *ShardRouter) UnpauseActivity(ctx context.Context, c engine.UnpauseActivity) (*engine.ActivityResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ActivityResult, error) { return s.UnpauseActivity(ctx, c) })
}

// ResetActivity implements engine.Service.
func (r *ShardRouter) ResetActivity(ctx context.Context, c engine.ResetActivity) (*engine.ActivityResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ActivityResult, error) { return s.ResetActivity(ctx, c) })
}

// UpdateActivityOptions implements engine.Service.
func (r *ShardRouter) UpdateActivityOptions(ctx context.Context, c engine.UpdateActivityOptions) (*engine.ActivityResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ActivityResult, error) { return s.UpdateActivityOptions(ctx, c) })
}

// Reset implements engine.Service: the new run lives on the base run's
// shard, since it keeps the base run's workflow id.
func (r *ShardRouter) Reset(ctx context.Context, c engine.ResetJob) (*engine.ResetResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ResetResult, error) { return s.Reset(ctx, c) })
}

// ContinueAsNew implements engine.Service.
func (r *ShardRouter) ContinueAsNew(ctx context.Context, c engine.ContinueAsNew) (*engine.CreateResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.CreateResult, error) { return s.ContinueAsNew(ctx, c) })
}

// LeaseStep implements engine.Service.
func (r *ShardRouter) LeaseStep(ctx context.Context, c engine.LeaseStep) (*engine.StepResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StepResult, error) { return s.LeaseStep(ctx, c) })
}

// StepHeartbeat implements engine.Service.
func (r *ShardRouter) StepHeartbeat(ctx context.Context, c engine.StepHeartbeat) (*engine.StepResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StepResult, error) { return s.StepHeartbeat(ctx, c) })
}

// EndStepAttempt implements engine.Service.
func (r *ShardRouter) EndStepAttempt(ctx context.Context, c engine.EndStepAttempt) (*engine.StepResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StepResult, error) { return s.EndStepAttempt(ctx, c) })
}

// AnswerStep implements engine.Service.
func (r *ShardRouter) AnswerStep(ctx context.Context, c engine.AnswerStep) (*engine.StepResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StepResult, error) { return s.AnswerStep(ctx, c) })
}

// AddResource implements engine.Service: on the resource home shard.
func (r *ShardRouter) AddResource(ctx context.Context, c engine.AddResource) (*engine.ResourceResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ResourceResult, error) { return s.AddResource(ctx, c) })
}

// DrainResource implements engine.Service: on the resource home shard.
func (r *ShardRouter) DrainResource(ctx context.Context, c engine.DrainResource) (*engine.ResourceResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ResourceResult, error) { return s.DrainResource(ctx, c) })
}

// RemoveResource implements engine.Service: on the resource home shard.
func (r *ShardRouter) RemoveResource(ctx context.Context, c engine.RemoveResource) (*engine.ResourceResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.ResourceResult, error) { return s.RemoveResource(ctx, c) })
}

// ConfigureJob configures a Draft job's input, on its shard.
func (r *ShardRouter) ConfigureJob(ctx context.Context, c engine.ConfigureJob) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) {
		jc, err := optional[interface {
			ConfigureJob(context.Context, engine.ConfigureJob) (*engine.StatusResult, error)
		}](s)
		if err != nil {
			return nil, err
		}
		return jc.ConfigureJob(ctx, c)
	})
}

// CompleteAsync implements engine.AsyncService, on the activity task's
// shard.
func (r *ShardRouter) CompleteAsync(ctx context.Context, c engine.CompleteAsync) (*engine.StatusResult, error) {
	return route(r, &c, func(s engine.Service) (*engine.StatusResult, error) {
		as, err := optional[engine.AsyncService](s)
		if err != nil {
			return nil, err
		}
		return as.CompleteAsync(ctx, c)
	})
}

// The reads by id.

// Describe implements engine.Service.
func (r *ShardRouter) Describe(ctx context.Context, t engine.Target) (*engine.Job, error) {
	svc, err := r.target(t)
	if err != nil {
		return nil, err
	}
	return svc.Describe(ctx, t)
}

func (r *ShardRouter) target(t engine.Target) (engine.Service, error) {
	if t.Job != 0 {
		return r.job(t.Job)
	}
	return r.at(engine.ShardOfTarget(t, r.count))
}

// History implements engine.Service.
func (r *ShardRouter) History(ctx context.Context, id engine.JobID, afterSeq uint64, limit int) (*engine.HistoryPage, error) {
	svc, err := r.job(id)
	if err != nil {
		return nil, err
	}
	return svc.History(ctx, id, afterSeq, limit)
}

// WatchHistory implements engine.Service, from this node's replica of the
// job's shard, which need not lead it.
func (r *ShardRouter) WatchHistory(ctx context.Context, id engine.JobID, afterSeq uint64, limit int) (*engine.HistoryPage, error) {
	svc, err := r.job(id)
	if err != nil {
		return nil, err
	}
	return svc.WatchHistory(ctx, id, afterSeq, limit)
}

// Effect implements engine.Service.
func (r *ShardRouter) Effect(ctx context.Context, id engine.JobID, step string) (*engine.Effect, error) {
	svc, err := r.job(id)
	if err != nil {
		return nil, err
	}
	return svc.Effect(ctx, id, step)
}

// Steps implements engine.Service.
func (r *ShardRouter) Steps(ctx context.Context, t engine.Target) ([]engine.StepInfo, error) {
	svc, err := r.target(t)
	if err != nil {
		return nil, err
	}
	return svc.Steps(ctx, t)
}

// WaitClosed implements engine.Service.
func (r *ShardRouter) WaitClosed(ctx context.Context, t engine.Target) (*engine.Job, error) {
	svc, err := r.target(t)
	if err != nil {
		return nil, err
	}
	return svc.WaitClosed(ctx, t)
}

// WaitClosing implements engine.ClosingWaiter, at the run's shard.
func (r *ShardRouter) WaitClosing(ctx context.Context, t engine.Target) (*engine.Closing, error) {
	svc, err := r.target(t)
	if err != nil {
		return nil, err
	}
	return engine.WaitClosing(ctx, svc, t)
}

// QueryHistory implements engine.BoundedReader.
func (r *ShardRouter) QueryHistory(ctx context.Context, q engine.HistoryQuery) (*engine.HistoryPage, error) {
	svc, err := r.job(q.Job)
	if err != nil {
		return nil, err
	}
	br, err := optional[engine.BoundedReader](svc)
	if err != nil {
		return nil, err
	}
	return br.QueryHistory(ctx, q)
}

// QuerySteps implements engine.BoundedReader.
func (r *ShardRouter) QuerySteps(ctx context.Context, q engine.StepsQuery) ([]engine.StepInfo, error) {
	svc, err := r.target(q.Target)
	if err != nil {
		return nil, err
	}
	br, err := optional[engine.BoundedReader](svc)
	if err != nil {
		return nil, err
	}
	return br.QuerySteps(ctx, q)
}

// Resources implements engine.Service: the pool on the resource home
// shard.
func (r *ShardRouter) Resources(ctx context.Context) ([]*engine.Resource, error) {
	svc, err := r.at(engine.ResourceHomeShard)
	if err != nil {
		return nil, err
	}
	return svc.Resources(ctx)
}

// ResourceWaiters implements engine.ResourceWaiterReader: the waiters of
// the resource home shard, the only shard where a step may wait for a
// unit.
func (r *ShardRouter) ResourceWaiters(ctx context.Context, limit int) ([]engine.ResourceWaiter, error) {
	svc, err := r.at(engine.ResourceHomeShard)
	if err != nil {
		return nil, err
	}
	wr, err := optional[engine.ResourceWaiterReader](svc)
	if err != nil {
		return nil, err
	}
	return wr.ResourceWaiters(ctx, limit)
}

// reader returns the engine that reads shard k for a list, and the context
// to read it with (docs/sharding.md, "Visibility"): this node's own
// engine where it leads the shard; else the shard's leader over HTTP,
// with the caller's credentials and the shard pinned; else, for a caller
// that showed none or asked for a stale read, this node's replica, as a
// stale read. A node that holds no replica of k and cannot ask its leader
// refuses.
func (r *ShardRouter) reader(ctx context.Context, k int) (engine.Service, context.Context, error) {
	local := r.set.ShardEngine(k)
	if local != nil && (r.set.LeadsShard(k) || engine.IsStaleRead(ctx)) {
		return local, ctx, nil
	}
	if svc := r.remoteAt(ctx, k); svc != nil {
		return svc, withShardPin(ctx, k), nil
	}
	if local == nil {
		return nil, nil, &engine.CrossShardError{Command: "List", What: fmt.Sprintf("shard %d (this node holds no replica of it, and a caller authenticated by its certificate cannot be spoken for at its leader)", k), From: -1, To: k}
	}
	return local, engine.WithStaleRead(ctx), nil
}

// remoteAt returns a client reading shard k at its leader with the
// caller's credentials, trying the shard's other replicas when the leader
// this node knows does not answer, or nil when there is none or the
// caller cannot be spoken for.
func (r *ShardRouter) remoteAt(ctx context.Context, k int) *Client {
	if r.remote == nil {
		return nil
	}
	return r.remote.reader(ctx, r.set.ShardReplicas(k))
}

// describeAtLeader reads the run t names from its shard's leader, wherever
// that is, as a list reads each shard (reader): this node's engine where it
// leads the shard, else the leader over HTTP speaking for the caller, else
// this node's replica as a stale read. The query broker lives on the
// metadata group's leader, which leads some shards only, and resolves the
// runs of every shard with it; a plain Describe there answered not-leader,
// and the query went back and forth between the two leaders until it
// timed out.
func (r *ShardRouter) describeAtLeader(ctx context.Context, t engine.Target) (*engine.Job, error) {
	k := engine.ShardOfTarget(t, r.count)
	if k >= r.count {
		return nil, fmt.Errorf("%w: %d (its id names shard %d of %d)", engine.ErrUnknownJob, t.Job, k, r.count)
	}
	svc, rctx, err := r.reader(ctx, k)
	if err != nil {
		return nil, err
	}
	return svc.Describe(rctx, t)
}

// pinned returns the engine of the shard a pinned read (?shard=k) asks
// for, which this node must lead (or hold, for a stale read).
func (r *ShardRouter) pinned(ctx context.Context, k int) (engine.Service, error) {
	if k >= r.count {
		return nil, fmt.Errorf("%w: shard %d is not one of the cluster's %d", engine.ErrInvalidCommand, k, r.count)
	}
	if svc := r.set.ShardEngine(k); svc != nil && (r.set.LeadsShard(k) || engine.IsStaleRead(ctx)) {
		return svc, nil
	}
	id, httpAddr := r.set.ShardLeader(k)
	return nil, &engine.NotLeaderError{LeaderID: id, LeaderHTTP: httpAddr}
}

// List implements engine.Service (docs/sharding.md, "Visibility"). The
// runs of one workflow id live on its shard, which answers alone. With the
// After cursor (oldest first by id) the shards answer one after another,
// shard 0 first, which is job-id order, as ids carry their shard.
// Otherwise every shard's page is merged into the query's order
// (listMerged), and the page tokens, both ways, are the router's own
// (mergedToken): where each shard's part of the listing stands.
func (r *ShardRouter) List(ctx context.Context, q engine.ListQuery) (*engine.ListPage, error) {
	if q.Limit < 0 || q.Limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: list limit %d is not in [0, %d]", engine.ErrInvalidCommand, q.Limit, engine.MaxPage)
	}
	if k, ok := pinnedShard(ctx); ok {
		svc, err := r.pinned(ctx, k)
		if err != nil {
			return nil, err
		}
		return svc.List(ctx, q)
	}
	if q.WorkflowID != "" {
		svc, rctx, err := r.reader(ctx, engine.ShardOfKey(q.WorkflowID, r.count))
		if err != nil {
			return nil, err
		}
		return svc.List(rctx, q)
	}
	limit := q.Limit
	if limit == 0 {
		limit = 100
	}
	if q.After != 0 {
		if q.PageToken != "" {
			return nil, fmt.Errorf("%w: a list takes After or a page token, not both", engine.ErrInvalidCommand)
		}
		return r.listAfter(ctx, q, limit)
	}
	return r.listMerged(ctx, q, limit)
}

// listAfter is List with the After cursor: job-id order, shard by shard.
func (r *ShardRouter) listAfter(ctx context.Context, q engine.ListQuery, limit int) (*engine.ListPage, error) {
	page := &engine.ListPage{Jobs: []*engine.Job{}}
	start := engine.ShardOfJob(q.After)
	for k := start; k < r.count; k++ {
		sq := q
		sq.Limit = limit - len(page.Jobs)
		if k != start {
			sq.After = engine.JobIDOf(k, 0)
		}
		svc, rctx, err := r.reader(ctx, k)
		if err != nil {
			return nil, err
		}
		p, err := svc.List(rctx, sq)
		if err != nil {
			return nil, err
		}
		page.Jobs = append(page.Jobs, p.Jobs...)
		page.Order = p.Order
		if p.Next != 0 {
			page.Next = p.Next
			return page, nil
		}
		if len(page.Jobs) >= limit {
			if k+1 < r.count {
				page.Next = engine.JobIDOf(k+1, 0)
			}
			return page, nil
		}
	}
	return page, nil
}

var _ engine.WorkflowCounter = (*ShardRouter)(nil)

// Count implements engine.WorkflowCounter: the sum of every shard's count
// (one workflow id's runs: its shard's).
func (r *ShardRouter) Count(ctx context.Context, q engine.ListQuery) (*engine.CountResult, error) {
	shards := []int{}
	if k, ok := pinnedShard(ctx); ok {
		svc, err := r.pinned(ctx, k)
		if err != nil {
			return nil, err
		}
		wc, err := optional[engine.WorkflowCounter](svc)
		if err != nil {
			return nil, err
		}
		return wc.Count(ctx, q)
	}
	if q.WorkflowID != "" {
		shards = append(shards, engine.ShardOfKey(q.WorkflowID, r.count))
	} else {
		for k := range r.count {
			shards = append(shards, k)
		}
	}
	out := &engine.CountResult{ByStatus: map[string]uint64{}}
	for _, k := range shards {
		svc, rctx, err := r.reader(ctx, k)
		if err != nil {
			return nil, err
		}
		wc, err := optional[engine.WorkflowCounter](svc)
		if err != nil {
			return nil, err
		}
		c, err := wc.Count(rctx, q)
		if err != nil {
			return nil, err
		}
		out.Count += c.Count
		out.ContinuedAsNew += c.ContinuedAsNew
		for st, n := range c.ByStatus {
			out.ByStatus[st] += n
		}
	}
	return out, nil
}

// Claim implements engine.Service: it claims from the shards this node
// leads, in turn, up to c.Max jobs (docs/sharding.md, "Claims").
func (r *ShardRouter) Claim(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	jobs, _, err := r.claimLocal(ctx, c, false)
	return jobs, err
}

// claimLocal claims from the shards this node leads, starting at the shard
// c's request id picks (so a retry under it asks the shard that answered
// first, first); with look, only from those whose state shows ready work.
// It also returns whether any shard was looked at.
func (r *ShardRouter) claimLocal(ctx context.Context, c engine.Claim, look bool) ([]engine.ClaimedJob, bool, error) {
	var out []engine.ClaimedJob
	asked := false
	max := max(c.Max, 1)
	start := r.startShard(c.RequestID)
	for i := range r.count {
		k := (start + i) % r.count
		if !r.set.LeadsShard(k) {
			continue
		}
		svc := r.set.ShardEngine(k)
		if svc == nil {
			continue
		}
		asked = true
		if rc, ok := svc.(readyChecker); ok && look {
			ready, err := rc.MayHaveReady(c.Queue)
			if err != nil {
				return out, asked, err
			}
			if !ready {
				continue
			}
		}
		part := c
		part.Max = max - len(out)
		jobs, err := svc.Claim(context.WithoutCancel(ctx), part)
		if err != nil {
			if errors.Is(err, engine.ErrNotLeader) && len(out) > 0 {
				break // leadership moved meanwhile; answer what was claimed
			}
			if errors.Is(err, engine.ErrNotLeader) {
				continue
			}
			return out, asked, err
		}
		out = append(out, jobs...)
		if len(out) >= max {
			break
		}
	}
	return out, asked, nil
}

// RecallClaim returns the jobs the claims under requestID took on the
// shards this node holds (a replica's record of a claim its leader
// applied), claiming nothing (claimRecaller).
func (r *ShardRouter) RecallClaim(requestID string) ([]engine.ClaimedJob, error) {
	type recorder interface {
		RecordedClaim(requestID string) ([]engine.ClaimedJob, error)
	}
	var out []engine.ClaimedJob
	for k := range r.count {
		rec, ok := r.set.ShardEngine(k).(recorder)
		if !ok {
			continue
		}
		jobs, err := rec.RecordedClaim(requestID)
		if err != nil {
			return out, err
		}
		out = append(out, jobs...)
	}
	return out, nil
}

// startShard is where a claim starts looking: a hash of its request id, or
// shard 0 without one.
func (r *ShardRouter) startShard(requestID string) int {
	if requestID == "" {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(requestID))
	return int(h.Sum64() % uint64(r.count))
}

// ClaimWait implements engine.Service: Claim that, while nothing was
// claimed, waits for the next commit or leadership change of any shard this
// node holds, never on a timer. It ends empty once the node applied a newer
// placement than the one it began under (see placementMoved).
func (r *ShardRouter) ClaimWait(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	began := r.set.PlacementVersion()
	for {
		changed := r.set.ShardsChanged() // before the look, so no change is missed
		jobs, _, err := r.claimLocal(ctx, c, true)
		if err != nil || len(jobs) > 0 || r.placementMoved(began) {
			return jobs, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// placementMoved reports whether this node applied a placement newer than
// version began, the one a long poll began under. The poll then ends
// empty: its answer names the new version (the Server notes it after the
// handler ran), so the client reads the new map and polls over it. A quiet
// worker's long polls are all it sends; were they to go on waiting, a
// worker would learn of a node that joined, or of a shard whose replica
// moved to such a node, only when its poll's wait ran out (30 s by
// default), and would not claim that shard's work before.
func (r *ShardRouter) placementMoved(began uint64) bool {
	return r.set.PlacementVersion() > began
}

// CancelSafeClaims implements engine.CancelSafeClaimer: every claim is
// applied without its caller's cancellation and its jobs returned.
func (r *ShardRouter) CancelSafeClaims() bool { return true }

// The schedules, by schedule id.

func (r *ShardRouter) schedules(cmd engine.Command) (engine.ScheduleService, error) {
	svc, err := r.of(cmd)
	if err != nil {
		return nil, err
	}
	return optional[engine.ScheduleService](svc)
}

// CreateSchedule implements engine.ScheduleService.
func (r *ShardRouter) CreateSchedule(ctx context.Context, c engine.CreateSchedule) (*engine.ScheduleResult, error) {
	ss, err := r.schedules(&c)
	if err != nil {
		return nil, err
	}
	return ss.CreateSchedule(ctx, c)
}

// UpdateSchedule implements engine.ScheduleService.
func (r *ShardRouter) UpdateSchedule(ctx context.Context, c engine.UpdateSchedule) (*engine.ScheduleResult, error) {
	ss, err := r.schedules(&c)
	if err != nil {
		return nil, err
	}
	return ss.UpdateSchedule(ctx, c)
}

// PauseSchedule implements engine.ScheduleService.
func (r *ShardRouter) PauseSchedule(ctx context.Context, c engine.PauseSchedule) (*engine.ScheduleResult, error) {
	ss, err := r.schedules(&c)
	if err != nil {
		return nil, err
	}
	return ss.PauseSchedule(ctx, c)
}

// TriggerSchedule implements engine.ScheduleService.
func (r *ShardRouter) TriggerSchedule(ctx context.Context, c engine.TriggerSchedule) (*engine.ScheduleResult, error) {
	ss, err := r.schedules(&c)
	if err != nil {
		return nil, err
	}
	return ss.TriggerSchedule(ctx, c)
}

// DeleteSchedule implements engine.ScheduleService.
func (r *ShardRouter) DeleteSchedule(ctx context.Context, c engine.DeleteSchedule) error {
	ss, err := r.schedules(&c)
	if err != nil {
		return err
	}
	return ss.DeleteSchedule(ctx, c)
}

// BackfillSchedule implements engine.ScheduleService.
func (r *ShardRouter) BackfillSchedule(ctx context.Context, c engine.BackfillSchedule) (*engine.ScheduleResult, error) {
	ss, err := r.schedules(&c)
	if err != nil {
		return nil, err
	}
	return ss.BackfillSchedule(ctx, c)
}

// DescribeSchedule implements engine.ScheduleService.
func (r *ShardRouter) DescribeSchedule(ctx context.Context, id string) (*engine.ScheduleDescription, error) {
	svc, err := r.at(engine.ShardOfKey(id, r.count))
	if err != nil {
		return nil, err
	}
	ss, err := optional[engine.ScheduleService](svc)
	if err != nil {
		return nil, err
	}
	return ss.DescribeSchedule(ctx, id)
}

// ListSchedules implements engine.ScheduleService: every shard's page after
// the cursor, merged in id order.
func (r *ShardRouter) ListSchedules(ctx context.Context, q engine.ScheduleListQuery) (*engine.ScheduleListPage, error) {
	if k, ok := pinnedShard(ctx); ok {
		svc, err := r.pinned(ctx, k)
		if err != nil {
			return nil, err
		}
		ss, err := optional[engine.ScheduleService](svc)
		if err != nil {
			return nil, err
		}
		return ss.ListSchedules(ctx, q)
	}
	limit := q.Limit
	if limit == 0 {
		limit = 100
	}
	var all []*engine.ScheduleDescription
	more := false
	for k := range r.count {
		svc, rctx, err := r.reader(ctx, k)
		if err != nil {
			return nil, err
		}
		ss, err := optional[engine.ScheduleService](svc)
		if err != nil {
			return nil, err
		}
		p, err := ss.ListSchedules(rctx, q)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Schedules...)
		more = more || p.Next != ""
	}
	slices.SortFunc(all, func(a, b *engine.ScheduleDescription) int {
		switch {
		case a.Schedule.ID < b.Schedule.ID:
			return -1
		case a.Schedule.ID > b.Schedule.ID:
			return 1
		}
		return 0
	})
	page := &engine.ScheduleListPage{Schedules: all}
	if len(all) > limit {
		page.Schedules, more = all[:limit], true
	}
	if more && len(page.Schedules) > 0 {
		page.Next = page.Schedules[len(page.Schedules)-1].Schedule.ID
	}
	return page, nil
}

// The review tasks, by review job and task id.

func (r *ShardRouter) reviews(svc engine.Service, err error) (engine.ReviewService, error) {
	if err != nil {
		return nil, err
	}
	return optional[engine.ReviewService](svc)
}

func (r *ShardRouter) review(id engine.ReviewID) (engine.ReviewService, error) {
	k := engine.ShardOfReview(id)
	if k >= r.count {
		return nil, fmt.Errorf("%w: %d (its id names shard %d of %d)", engine.ErrUnknownReview, id, k, r.count)
	}
	return r.reviews(r.at(k))
}

// CreateReview implements engine.ReviewService.
func (r *ShardRouter) CreateReview(ctx context.Context, c engine.CreateReview) (*engine.ReviewResult, error) {
	ts, err := r.reviews(r.of(&c))
	if err != nil {
		return nil, err
	}
	return ts.CreateReview(ctx, c)
}

// ReviewCommand implements engine.ReviewService.
func (r *ShardRouter) ReviewCommand(ctx context.Context, c engine.ReviewCommand) (*engine.ReviewResult, error) {
	ts, err := r.reviews(r.of(&c))
	if err != nil {
		return nil, err
	}
	return ts.ReviewCommand(ctx, c)
}

// ReviewReport implements engine.ReviewService.
func (r *ShardRouter) ReviewReport(ctx context.Context, c engine.ReviewReport) (*engine.ReviewResult, error) {
	ts, err := r.review(c.Review)
	if err != nil {
		return nil, err
	}
	return ts.ReviewReport(ctx, c)
}

// ReviewHeartbeat implements engine.ReviewService; leases of several
// shards are split as Heartbeat's.
func (r *ShardRouter) ReviewHeartbeat(ctx context.Context, c engine.ReviewHeartbeat) (*engine.ReviewHeartbeatResult, error) {
	parts := map[int][]engine.ReviewLeaseRef{}
	for _, l := range c.Leases {
		parts[engine.ShardOfReview(l.Review)] = append(parts[engine.ShardOfReview(l.Review)], l)
	}
	shards := sortedKeys(parts)
	if len(shards) > 1 {
		for _, k := range shards {
			if !r.set.LeadsShard(k) {
				return nil, &engine.CrossShardError{Command: "TaskHeartbeat", What: fmt.Sprintf("leases of shards %v, not all led by this node", shards), From: -1, To: -1}
			}
		}
	}
	if len(shards) == 0 {
		shards = []int{0}
	}
	out := &engine.ReviewHeartbeatResult{}
	for _, k := range shards {
		ts, err := r.reviews(r.at(k))
		if err != nil {
			return nil, err
		}
		part := c
		part.Leases = parts[k]
		res, err := ts.ReviewHeartbeat(ctx, part)
		if err != nil {
			return nil, err
		}
		if out.LeaseExpiryMS == 0 || res.LeaseExpiryMS < out.LeaseExpiryMS {
			out.LeaseExpiryMS = res.LeaseExpiryMS
		}
		out.Refused = append(out.Refused, res.Refused...)
	}
	return out, nil
}

// ClaimReviews implements engine.ReviewService, from the shards this node
// leads, as Claim.
func (r *ShardRouter) ClaimReviews(ctx context.Context, c engine.ClaimReviews) ([]engine.ClaimedReview, error) {
	return r.claimReviewsLocal(ctx, c, false)
}

// ClaimReviewsWait is ClaimReviews that waits, and ends, as ClaimWait does.
func (r *ShardRouter) ClaimReviewsWait(ctx context.Context, c engine.ClaimReviews) ([]engine.ClaimedReview, error) {
	began := r.set.PlacementVersion()
	for {
		changed := r.set.ShardsChanged()
		got, err := r.claimReviewsLocal(ctx, c, true)
		if err != nil || len(got) > 0 || r.placementMoved(began) {
			return got, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (r *ShardRouter) claimReviewsLocal(ctx context.Context, c engine.ClaimReviews, look bool) ([]engine.ClaimedReview, error) {
	var out []engine.ClaimedReview
	max := max(c.Max, 1)
	start := r.startShard(c.RequestID)
	for i := range r.count {
		k := (start + i) % r.count
		if !r.set.LeadsShard(k) {
			continue
		}
		ts, err := r.reviews(r.at(k))
		if err != nil {
			continue
		}
		if rc, ok := ts.(interface {
			MayHaveReviews(engine.ReviewRole, string) (bool, error)
		}); ok && look {
			ready, err := rc.MayHaveReviews(c.Role, c.Queue)
			if err != nil {
				return out, err
			}
			if !ready {
				continue
			}
		}
		part := c
		part.Max = max - len(out)
		got, err := ts.ClaimReviews(context.WithoutCancel(ctx), part)
		if err != nil {
			if errors.Is(err, engine.ErrNotLeader) {
				continue
			}
			return out, err
		}
		out = append(out, got...)
		if len(out) >= max {
			break
		}
	}
	return out, nil
}

// DescribeReview implements engine.ReviewService.
func (r *ShardRouter) DescribeReview(ctx context.Context, t engine.ReviewTarget) (*engine.Review, error) {
	var ts engine.ReviewService
	var err error
	if t.ID != 0 {
		ts, err = r.review(t.ID)
	} else {
		ts, err = r.reviews(r.at(engine.ShardOfKey(t.Job, r.count)))
	}
	if err != nil {
		return nil, err
	}
	return ts.DescribeReview(ctx, t)
}

// ReviewHistory implements engine.ReviewService.
func (r *ShardRouter) ReviewHistory(ctx context.Context, id engine.ReviewID) ([]engine.ReviewEvent, error) {
	ts, err := r.review(id)
	if err != nil {
		return nil, err
	}
	return ts.ReviewHistory(ctx, id)
}

// ListReviews implements engine.ReviewService: a review job's tasks share
// its shard.
func (r *ShardRouter) ListReviews(ctx context.Context, job string) ([]engine.Review, error) {
	ts, err := r.reviews(r.at(engine.ShardOfKey(job, r.count)))
	if err != nil {
		return nil, err
	}
	return ts.ListReviews(ctx, job)
}

// ReviewManifest implements engine.ReviewService.
func (r *ShardRouter) ReviewManifest(ctx context.Context, job string) (*engine.Manifest, error) {
	ts, err := r.reviews(r.at(engine.ShardOfKey(job, r.count)))
	if err != nil {
		return nil, err
	}
	return ts.ReviewManifest(ctx, job)
}

// ListAwaitingReviews implements engine.ReviewService: the shards in
// task-id order, shard by shard, as List.
func (r *ShardRouter) ListAwaitingReviews(ctx context.Context, q engine.AwaitingQuery) (*engine.AwaitingPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if k, ok := pinnedShard(ctx); ok {
		svc, err := r.pinned(ctx, k)
		if err != nil {
			return nil, err
		}
		ts, err := optional[engine.ReviewService](svc)
		if err != nil {
			return nil, err
		}
		return ts.ListAwaitingReviews(ctx, q)
	}
	limit := q.Limit
	if limit == 0 {
		limit = 100
	}
	page := &engine.AwaitingPage{Reviews: []engine.Review{}}
	start := engine.ShardOfReview(q.After)
	for k := start; k < r.count; k++ {
		sq := q
		sq.Limit = limit - len(page.Reviews)
		if k != start {
			sq.After = engine.ReviewID(engine.JobIDOf(k, 0))
		}
		svc, rctx, err := r.reader(ctx, k)
		if err != nil {
			return nil, err
		}
		ts, err := optional[engine.ReviewService](svc)
		if err != nil {
			return nil, err
		}
		p, err := ts.ListAwaitingReviews(rctx, sq)
		if err != nil {
			return nil, err
		}
		page.Reviews = append(page.Reviews, p.Reviews...)
		if p.Next != 0 {
			page.Next = p.Next
			return page, nil
		}
		if len(page.Reviews) >= limit {
			if k+1 < r.count {
				page.Next = engine.ReviewID(engine.JobIDOf(k+1, 0))
			}
			return page, nil
		}
	}
	return page, nil
}
