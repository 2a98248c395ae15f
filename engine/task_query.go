package engine

import (
	"context"
	"math"
)

// TaskService is what clients, workers and reviewers ask of heddle about
// review tasks. *embedded.Engine implements it in-process and package
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
