package engine

import (
	"context"
	"errors"
	"math"

	"github.com/heddlewf/heddle/storage"
)

// TaskService is what clients, workers and reviewers ask of heddle about
// review tasks. *Engine implements it in-process and package
// engine/httpapi over HTTP. Every method is safe for concurrent use; errors
// match this package's sentinels (ErrIllegalTaskCommand, ErrStaleTaskAttempt,
// ErrUnknownTask, ...) with errors.Is.
type TaskService interface {
	CreateTask(ctx context.Context, c CreateTask) (*TaskResult, error)
	TaskCommand(ctx context.Context, c TaskCommand) (*TaskResult, error)
	ClaimTasks(ctx context.Context, c ClaimTasks) ([]ClaimedTask, error)
	TaskReport(ctx context.Context, c TaskReport) (*TaskResult, error)
	TaskHeartbeat(ctx context.Context, c TaskHeartbeat) (*TaskHeartbeatResult, error)
	DescribeTask(ctx context.Context, t TaskTarget) (*Task, error)
	TaskHistory(ctx context.Context, id TaskID) ([]TaskEvent, error)
	// ListTasks returns the tasks of job in creation order.
	ListTasks(ctx context.Context, job string) ([]Task, error)
	// ListAwaitingTasks returns a page of the tasks of every job that
	// await a person, in creation order.
	ListAwaitingTasks(ctx context.Context, q AwaitingQuery) (*AwaitingPage, error)
	// TaskManifest returns the manifest of job (ErrUnknownTask when it
	// has no task).
	TaskManifest(ctx context.Context, job string) (*Manifest, error)
}

var _ TaskService = (*Engine)(nil)

// CreateTask creates a review task.
func (e *Engine) CreateTask(ctx context.Context, c CreateTask) (*TaskResult, error) {
	return propose[*TaskResult](ctx, e, &c)
}

// TaskCommand applies a human command to a task.
func (e *Engine) TaskCommand(ctx context.Context, c TaskCommand) (*TaskResult, error) {
	return propose[*TaskResult](ctx, e, &c)
}

// ClaimTasks claims claimable tasks for a worker or a reviewer.
func (e *Engine) ClaimTasks(ctx context.Context, c ClaimTasks) ([]ClaimedTask, error) {
	r, err := propose[*ClaimTasksResult](ctx, e, &c)
	if err != nil {
		return nil, err
	}
	return r.Tasks, nil
}

// TaskReport records a lease holder's report.
func (e *Engine) TaskReport(ctx context.Context, c TaskReport) (*TaskResult, error) {
	return propose[*TaskResult](ctx, e, &c)
}

// TaskHeartbeat renews task leases.
func (e *Engine) TaskHeartbeat(ctx context.Context, c TaskHeartbeat) (*TaskHeartbeatResult, error) {
	return propose[*TaskHeartbeatResult](ctx, e, &c)
}

// ClaimTasksWait is ClaimTasks that, while nothing is claimable, waits for
// the next commit and tries again, until it claims something or ctx ends.
// It never polls on a fixed tick.
func (e *Engine) ClaimTasksWait(ctx context.Context, c ClaimTasks) ([]ClaimedTask, error) {
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
func (e *Engine) MayHaveTasks(role TaskRole, queue string) (bool, error) {
	found := false
	err := e.store.View(func(r *storage.Reader) error {
		var err error
		found, err = HasTasks(r, role, queue)
		return err
	})
	return found, err
}

// HasTasks reports whether queue holds a task ready for role.
func HasTasks(r *storage.Reader, role TaskRole, queue string) (bool, error) {
	prefix := storage.TaskWorkQueuePrefix(queue)
	if role == TaskRoleReview {
		prefix = storage.TaskReviewQueuePrefix(queue)
	}
	found := false
	err := r.Scan(prefix, nil, false, func([]byte, []byte) (bool, error) { found = true; return false, nil })
	return found, err
}

// DescribeTask returns the record of the task t names.
func (e *Engine) DescribeTask(ctx context.Context, t TaskTarget) (*Task, error) {
	var out *Task
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = ReadTaskTarget(r, t)
		return err
	})
	return out, err
}

// TaskHistory returns the whole history of task id.
func (e *Engine) TaskHistory(ctx context.Context, id TaskID) ([]TaskEvent, error) {
	var out []TaskEvent
	err := e.view(ctx, func(r *storage.Reader) error {
		if _, err := ReadTask(r, id); err != nil {
			return err
		}
		var err error
		out, err = ReadTaskHistory(r, id)
		return err
	})
	return out, err
}

// ListTasks returns the tasks of job in creation order.
func (e *Engine) ListTasks(ctx context.Context, job string) ([]Task, error) {
	var out []Task
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = ReadJobTasks(r, job)
		return err
	})
	return out, err
}

// TaskManifest returns the manifest of job, its running spans counted up
// to the engine's latest command time.
func (e *Engine) TaskManifest(ctx context.Context, job string) (*Manifest, error) {
	var m *Manifest
	err := e.view(ctx, func(r *storage.Reader) error {
		ts, err := ReadJobTasks(r, job)
		if err != nil {
			return err
		}
		if len(ts) == 0 {
			return unknownTask(TaskTarget{Job: job})
		}
		now, err := storage.ReadU64(r, storage.KeyLastNow)
		if err != nil {
			return err
		}
		m = BuildManifest(job, ts, int64(now))
		return nil
	})
	return m, err
}

// ReadTask reads one task record.
func ReadTask(r *storage.Reader, id TaskID) (*Task, error) {
	key := storage.TaskKey(uint64(id))
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownTask(TaskTarget{ID: id})
	}
	if err != nil {
		return nil, err
	}
	t := new(Task)
	if _, err := storage.DecodeAt(key, b, storage.KindTask, taskVersion, t); err != nil {
		return nil, err
	}
	return t, nil
}

// ReadTaskTarget reads the task t names.
func ReadTaskTarget(r *storage.Reader, t TaskTarget) (*Task, error) {
	if t.ID != 0 {
		return ReadTask(r, t.ID)
	}
	b, err := r.Get(storage.TaskPhaseKey(t.Job, t.Phase))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownTask(t)
	}
	if err != nil {
		return nil, err
	}
	id, err := storage.ParseU64(b)
	if err != nil {
		return nil, err
	}
	return ReadTask(r, TaskID(id))
}

// ReadTaskHistory reads the whole history of task id.
func ReadTaskHistory(r *storage.Reader, id TaskID) ([]TaskEvent, error) {
	var out []TaskEvent
	err := r.Scan(storage.TaskEventPrefix(uint64(id)), nil, true, func(k, b []byte) (bool, error) {
		e := new(TaskEvent)
		if _, err := storage.DecodeAt(k, b, storage.KindTaskEvent, taskEventVersion, e); err != nil {
			return false, err
		}
		out = append(out, *e)
		return true, nil
	})
	return out, err
}

// ReadJobTasks reads the tasks of job in creation order.
func ReadJobTasks(r *storage.Reader, job string) ([]Task, error) {
	var ids []TaskID
	err := r.Scan(storage.TaskJobPrefix(job), nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		ids = append(ids, TaskID(id))
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Task, 0, len(ids))
	for _, id := range ids {
		t, err := ReadTask(r, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// Manifest is the document a job of review tasks is read as (the origin
// model's job_manifest.json): its status is its current phase's, its
// metrics sum those of its tasks, and its history lists every task.
type Manifest struct {
	JobID        string          `json:"job_id"`
	Description  string          `json:"description"`
	Status       TaskState       `json:"status"`
	CurrentPhase string          `json:"current_phase"`
	Metrics      ManifestMetrics `json:"metrics"`
	History      []ManifestEntry `json:"history"`
}

// ManifestMetrics sums the tasks' reported costs and measured times.
type ManifestMetrics struct {
	CumulativeCost        float64 `json:"cumulative_cost"`
	CumulativeTimeSeconds float64 `json:"cumulative_time_seconds"`
}

// ManifestEntry is one task (phase) of a manifest's history.
type ManifestEntry struct {
	Phase   string    `json:"phase"`
	Status  TaskState `json:"status"`
	Summary string    `json:"summary"`
	TaskID  TaskID    `json:"task_id"`
	// DecidedBy is who made the phase's latest human decision.
	DecidedBy string `json:"decided_by,omitempty"`
}

// BuildManifest makes the manifest of job from its tasks in creation order.
// The current phase is the first task that has not succeeded (the last
// task when all have); a span still running counts up to nowMS. Times are
// in seconds, to the millisecond.
func BuildManifest(job string, tasks []Task, nowMS int64) *Manifest {
	m := &Manifest{JobID: job, History: []ManifestEntry{}}
	var activeMS int64
	cur := -1
	for i := range tasks {
		t := &tasks[i]
		if m.Description == "" {
			m.Description = t.JobDescription
		}
		m.Metrics.CumulativeCost += t.CostTotal
		activeMS += t.ActiveMS
		if t.ActiveSinceMS != 0 && nowMS > t.ActiveSinceMS {
			activeMS += nowMS - t.ActiveSinceMS
		}
		if cur < 0 && t.State != TaskSuccess {
			cur = i
		}
		m.History = append(m.History, ManifestEntry{Phase: t.Phase, Status: t.State, Summary: t.Summary, TaskID: t.ID, DecidedBy: t.DecidedBy})
	}
	if cur < 0 {
		cur = len(tasks) - 1
	}
	if cur >= 0 {
		m.Status, m.CurrentPhase = tasks[cur].State, tasks[cur].Phase
		if m.Description == "" {
			m.Description = tasks[cur].Description
		}
	}
	m.Metrics.CumulativeTimeSeconds = math.Round(float64(activeMS)) / 1000
	return m
}
