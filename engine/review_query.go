package engine

import (
	"context"
	"math"
)

// ReviewService is what clients, workers and reviewers ask of heddle about
// review tasks. *embedded.Engine implements it in-process and package
// engine/httpapi over HTTP. Every method is safe for concurrent use; errors
// match this package's sentinels (ErrIllegalReviewCommand, ErrStaleReviewAttempt,
// ErrUnknownReview, ...) with errors.Is.
type ReviewService interface {
	CreateReview(ctx context.Context, c CreateReview) (*ReviewResult, error)
	ReviewCommand(ctx context.Context, c ReviewCommand) (*ReviewResult, error)
	ClaimReviews(ctx context.Context, c ClaimReviews) ([]ClaimedReview, error)
	ReviewReport(ctx context.Context, c ReviewReport) (*ReviewResult, error)
	ReviewHeartbeat(ctx context.Context, c ReviewHeartbeat) (*ReviewHeartbeatResult, error)
	DescribeReview(ctx context.Context, t ReviewTarget) (*Review, error)
	ReviewHistory(ctx context.Context, id ReviewID) ([]ReviewEvent, error)
	// ListReviews returns the tasks of job in creation order.
	ListReviews(ctx context.Context, job string) ([]Review, error)
	// ListAwaitingReviews returns a page of the tasks of every job that
	// await a person, in creation order.
	ListAwaitingReviews(ctx context.Context, q AwaitingQuery) (*AwaitingPage, error)
	// ReviewManifest returns the manifest of job (ErrUnknownReview when it
	// has no task).
	ReviewManifest(ctx context.Context, job string) (*Manifest, error)
}

// Manifest is the document a job of review tasks is read as (the origin
// model's job_manifest.json): its status is its current phase's, its
// metrics sum those of its tasks, and its history lists every task.
type Manifest struct {
	JobID        string          `json:"job_id"`
	Description  string          `json:"description"`
	Status       ReviewState     `json:"status"`
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
	Phase    string      `json:"phase"`
	Status   ReviewState `json:"status"`
	Summary  string      `json:"summary"`
	ReviewID ReviewID    `json:"task_id"`
	// DecidedBy is who made the phase's latest human decision.
	DecidedBy string `json:"decided_by,omitempty"`
}

// BuildManifest makes the manifest of job from its tasks in creation order.
// The current phase is the first task that has not succeeded (the last
// task when all have); a span still running counts up to nowMS. Times are
// in seconds, to the millisecond.
func BuildManifest(job string, reviews []Review, nowMS int64) *Manifest {
	m := &Manifest{JobID: job, History: []ManifestEntry{}}
	var activeMS int64
	cur := -1
	for i := range reviews {
		t := &reviews[i]
		if m.Description == "" {
			m.Description = t.JobDescription
		}
		m.Metrics.CumulativeCost += t.CostTotal
		activeMS += t.ActiveMS
		if t.ActiveSinceMS != 0 && nowMS > t.ActiveSinceMS {
			activeMS += nowMS - t.ActiveSinceMS
		}
		if cur < 0 && t.State != ReviewSuccess {
			cur = i
		}
		m.History = append(m.History, ManifestEntry{Phase: t.Phase, Status: t.State, Summary: t.Summary, ReviewID: t.ID, DecidedBy: t.DecidedBy})
	}
	if cur < 0 {
		cur = len(reviews) - 1
	}
	if cur >= 0 {
		m.Status, m.CurrentPhase = reviews[cur].State, reviews[cur].Phase
		if m.Description == "" {
			m.Description = reviews[cur].Description
		}
	}
	m.Metrics.CumulativeTimeSeconds = math.Round(float64(activeMS)) / 1000
	return m
}
