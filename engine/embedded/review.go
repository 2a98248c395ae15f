package embedded

import (
	"context"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// ListAwaitingTasks lists the tasks of every job that await a person, in
// creation order. It walks the index of such tasks, which Apply keeps in
// the transaction of each state change, and filters state, queue and type
// from the records; so a filtered page reads at most every awaiting task,
// never the tasks that await nobody.
func (e *Engine) ListAwaitingTasks(ctx context.Context, q engine.AwaitingQuery) (*engine.AwaitingPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	var page *engine.AwaitingPage
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		page, err = machine.ReadAwaitingTasks(r, q)
		return err
	})
	return page, err
}

var _ engine.TaskService = (*Engine)(nil)

// CreateTask creates a review task.
func (e *Engine) CreateTask(ctx context.Context, c engine.CreateTask) (*engine.TaskResult, error) {
	return propose[*engine.TaskResult](ctx, e, &c)
}

// TaskCommand applies a human command to a task.
func (e *Engine) TaskCommand(ctx context.Context, c engine.TaskCommand) (*engine.TaskResult, error) {
	return propose[*engine.TaskResult](ctx, e, &c)
}

// ClaimTasks claims claimable tasks for a worker or a reviewer.
func (e *Engine) ClaimTasks(ctx context.Context, c engine.ClaimTasks) ([]engine.ClaimedTask, error) {
	r, err := propose[*engine.ClaimTasksResult](ctx, e, &c)
	if err != nil {
		return nil, err
	}
	return r.Tasks, nil
}

// TaskReport records a lease holder's report.
func (e *Engine) TaskReport(ctx context.Context, c engine.TaskReport) (*engine.TaskResult, error) {
	return propose[*engine.TaskResult](ctx, e, &c)
}

// TaskHeartbeat renews task leases.
func (e *Engine) TaskHeartbeat(ctx context.Context, c engine.TaskHeartbeat) (*engine.TaskHeartbeatResult, error) {
	return propose[*engine.TaskHeartbeatResult](ctx, e, &c)
}

// ClaimTasksWait is ClaimTasks that, while nothing is claimable, waits for
// the next commit and tries again, until it claims something or ctx ends.
// It never polls on a fixed tick.
func (e *Engine) ClaimTasksWait(ctx context.Context, c engine.ClaimTasks) ([]engine.ClaimedTask, error) {
	for {
		changed := e.Committed()
		ready, err := e.MayHaveTasks(c.Role, c.Queue)
		if err != nil {
			return nil, err
		}
		if ready {
			// Not cancelled with ctx: a claim applied after its caller
			// gave up would hold tasks under leases nobody renews.
			ts, err := e.ClaimTasks(context.WithoutCancel(ctx), c)
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

// MayHaveTasks reports, from the applied state and without a read barrier,
// whether queue's claim index of role holds a task, so that waiting
// claimers propose nothing (in a cluster, no Raft entry) while it is empty.
func (e *Engine) MayHaveTasks(role engine.TaskRole, queue string) (bool, error) {
	found := false
	err := e.store.View(func(r *storage.Reader) error {
		var err error
		found, err = machine.HasTasks(r, role, queue)
		return err
	})
	return found, machine.MarkStorageError(err)
}

// DescribeTask returns the record of the task t names.
func (e *Engine) DescribeTask(ctx context.Context, t engine.TaskTarget) (*engine.Task, error) {
	var out *engine.Task
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = machine.ReadTaskTarget(r, t)
		return err
	})
	return out, err
}

// TaskHistory returns the whole history of task id.
func (e *Engine) TaskHistory(ctx context.Context, id engine.TaskID) ([]engine.TaskEvent, error) {
	var out []engine.TaskEvent
	err := e.view(ctx, func(r *storage.Reader) error {
		if _, err := machine.ReadTask(r, id); err != nil {
			return err
		}
		var err error
		out, err = machine.ReadTaskHistory(r, id)
		return err
	})
	return out, err
}

// ListTasks returns the tasks of job in creation order.
func (e *Engine) ListTasks(ctx context.Context, job string) ([]engine.Task, error) {
	var out []engine.Task
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = machine.ReadJobTasks(r, job)
		return err
	})
	return out, err
}

// TaskManifest returns the manifest of job, its running spans counted up
// to the engine's latest command time.
func (e *Engine) TaskManifest(ctx context.Context, job string) (*engine.Manifest, error) {
	var m *engine.Manifest
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		m, err = machine.ReadManifest(r, job)
		return err
	})
	return m, err
}
