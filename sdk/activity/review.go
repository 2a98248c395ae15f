package activity

import (
	"context"
	"errors"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
)

// ReviewInfo describes one run of a review task's work
// (workflow.ExecuteReview): which task, which run, and what the previous
// run's review and rejection said, so a rework can act on them.
type ReviewInfo struct {
	// Review is the review task's id.
	Review uint64
	// Task is Review under its former name.
	//
	// Deprecated: use Review.
	Task  uint64
	Job   string
	Phase string
	// Run counts the task's runs, this one included.
	Run int
	// Objective, Details and AcceptanceCriteria are the task's
	// configuration.
	Objective          string
	Details            string
	AcceptanceCriteria []string
	// Feedback is the words of the latest rejection, resubmission or fix;
	// Recommendations and ReviewSummary the latest review's. Empty on the
	// first run.
	Feedback        string
	Recommendations []string
	ReviewSummary   string
	// PreviousOutput is the output of the run before, encoded as the work
	// returned it (nil on the first run).
	PreviousOutput []byte
}

// reviewEnv is what the worker adds to the environment of a task's work.
type reviewEnv interface {
	ReviewInfo() ReviewInfo
	AddCost(cost float64)
}

// GetReviewInfo returns the task the work running under ctx does, and false
// when it is an ordinary activity.
func GetReviewInfo(ctx context.Context) (ReviewInfo, bool) {
	if e, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(reviewEnv); ok {
		return e.ReviewInfo(), true
	}
	return ReviewInfo{}, false
}

// ReportCost adds cost (in whatever unit the job counts: tokens, cents) to
// the task's cumulative cost, recorded with its output and summed in the
// job's manifest (metrics.cumulative_cost). It reports false, and records
// nothing, when ctx is not a task's.
func ReportCost(ctx context.Context, cost float64) bool {
	if e, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(reviewEnv); ok {
		e.AddCost(cost)
		return true
	}
	return false
}

// ReportSummary sets the summary recorded with the task's output (the
// manifest shows the latest summary of each phase). It reports false when
// ctx is not a task's.
func ReportSummary(ctx context.Context, summary string) bool {
	if e, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(interface{ SetSummary(string) }); ok {
		e.SetSummary(summary)
		return true
	}
	return false
}

// reviewPauser is what the worker adds for a task's work to wait out a rate
// limit in PAUSED.
type reviewPauser interface {
	PauseFor(ctx context.Context, d time.Duration) error
}

// RateLimited tells the engine the task's work is rate limited: the task
// goes RUNNING → PAUSED, the worker keeps renewing its lease while it
// waits d (or until ctx ends), and it goes back to RUNNING. A person may
// resume it early (heddle task resume) or cancel it. It returns an error
// when ctx is not a task's, when the lease was lost (the work must stop),
// or when ctx ended.
func RateLimited(ctx context.Context, d time.Duration) error {
	if p, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(reviewPauser); ok {
		return p.PauseFor(ctx, d)
	}
	return errNotReview
}

var errNotReview = errors.New("activity: the context is not a review task's work")

// TaskInfo is the former name of ReviewInfo.
//
// Deprecated: use ReviewInfo.
type TaskInfo = ReviewInfo

// GetTaskInfo is the former name of GetReviewInfo.
//
// Deprecated: use GetReviewInfo.
func GetTaskInfo(ctx context.Context) (TaskInfo, bool) { return GetReviewInfo(ctx) }
