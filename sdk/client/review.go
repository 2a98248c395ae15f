package client

import (
	"context"
	"errors"

	"github.com/heddlewf/heddle/engine"
)

// ErrNoReviews: the client's service has no review tasks (both the engine
// and engine/httpapi's client have them).
var ErrNoReviews = errors.New("client: the service has no review tasks")

// ReviewClient reads review tasks and issues the human commands on them.
// Each command returns the task's state after it, or a
// *engine.ReviewStateError naming the state and the commands legal in it.
type ReviewClient interface {
	DescribeReviewJob(ctx context.Context, job string) (*engine.Manifest, error)
	ListReviews(ctx context.Context, job string) ([]engine.Review, error)
	DescribeReview(ctx context.Context, job, phase string) (*engine.Review, error)
	ActivateReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	ConfigureReview(ctx context.Context, d ReviewDecision, cf engine.ReviewConfig) (engine.ReviewState, error)
	SuspendReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	ResumeReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	CancelReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	StepReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	ApproveReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	RejectReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	ResubmitReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	FixReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	TerminateReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
}

func (c *workflowClient) reviews() (engine.ReviewService, error) {
	ts, ok := c.e.(engine.ReviewService)
	if !ok {
		return nil, ErrNoReviews
	}
	return ts, nil
}

// DescribeReviewJob returns the manifest of job: its status, current phase,
// cumulative cost and time, and each phase's status and summary.
func (c *workflowClient) DescribeReviewJob(ctx context.Context, job string) (*engine.Manifest, error) {
	ts, err := c.reviews()
	if err != nil {
		return nil, err
	}
	return ts.ReviewManifest(ctx, job)
}

// ListReviews returns the tasks of job in creation order.
func (c *workflowClient) ListReviews(ctx context.Context, job string) ([]engine.Review, error) {
	ts, err := c.reviews()
	if err != nil {
		return nil, err
	}
	return ts.ListReviews(ctx, job)
}

// DescribeReview returns the record of the task of job and phase.
func (c *workflowClient) DescribeReview(ctx context.Context, job, phase string) (*engine.Review, error) {
	ts, err := c.reviews()
	if err != nil {
		return nil, err
	}
	return ts.DescribeReview(ctx, engine.ReviewTarget{Job: job, Phase: phase})
}

// ReviewDecision is a human command on a task: the task, who decides and
// why. Reason is the feedback a rejected, resubmitted or fixed task's next
// run reads.
type ReviewDecision struct {
	Job, Phase string
	By         string
	Reason     string
}

func (c *workflowClient) decide(ctx context.Context, op engine.ReviewOp, d ReviewDecision, cf *engine.ReviewConfig) (engine.ReviewState, error) {
	ts, err := c.reviews()
	if err != nil {
		return engine.ReviewNone, err
	}
	res, err := ts.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{Job: d.Job, Phase: d.Phase},
		Op: op, By: d.By, Reason: d.Reason, Config: cf})
	if err != nil {
		return engine.ReviewNone, err
	}
	return res.State, nil
}

// Each of these gives one human command and returns the task's new state.
// A command the task's state does not allow fails with an error matching
// engine.ErrIllegalReviewCommand; errors.As gives the *engine.ReviewStateError
// with the state and the commands legal in it.

// ActivateReview moves a DRAFT task to PENDING.
func (c *workflowClient) ActivateReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpActivate, d, nil)
}

// ConfigureReview changes a DRAFT task's configuration (the fields set in cf).
func (c *workflowClient) ConfigureReview(ctx context.Context, d ReviewDecision, cf engine.ReviewConfig) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpConfig, d, &cf)
}

// SuspendReview suspends a task.
func (c *workflowClient) SuspendReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpSuspend, d, nil)
}

// ResumeReview resumes a SUSPENDED (to PENDING) or PAUSED (to RUNNING) task.
func (c *workflowClient) ResumeReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpResume, d, nil)
}

// CancelReview cancels a task.
func (c *workflowClient) CancelReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpCancel, d, nil)
}

// StepReview starts the review of a REVIEW_REQUIRED task.
func (c *workflowClient) StepReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpStep, d, nil)
}

// ApproveReview approves a task's reviewed output: SUCCESS.
func (c *workflowClient) ApproveReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpApprove, d, nil)
}

// RejectReview sends a task back to run again with d.Reason as feedback.
func (c *workflowClient) RejectReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpReject, d, nil)
}

// ResubmitReview sends a task that needs intervention back to PENDING.
func (c *workflowClient) ResubmitReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpResubmit, d, nil)
}

// FixReview marks a task that needed intervention fixed: REVIEW_REQUIRED.
func (c *workflowClient) FixReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpFix, d, nil)
}

// TerminateReview ends a task that needs intervention: CANCELED.
func (c *workflowClient) TerminateReview(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.decide(ctx, engine.ReviewOpTerminate, d, nil)
}

// ErrNoTasks is the former name of ErrNoReviews.
//
// Deprecated: use ErrNoReviews.
var ErrNoTasks = ErrNoReviews

// TaskDecision is the former name of ReviewDecision.
//
// Deprecated: use ReviewDecision.
type TaskDecision = ReviewDecision

// TaskClient is ReviewClient under its former names; Client has both.
//
// Deprecated: use ReviewClient.
type TaskClient interface {
	// Deprecated: use DescribeReviewJob.
	DescribeTaskJob(ctx context.Context, job string) (*engine.Manifest, error)
	// Deprecated: use ListReviews.
	ListTasks(ctx context.Context, job string) ([]engine.Review, error)
	// Deprecated: use DescribeReview.
	DescribeTask(ctx context.Context, job, phase string) (*engine.Review, error)
	// Deprecated: use ActivateReview.
	ActivateTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use ConfigureReview.
	ConfigureTask(ctx context.Context, d ReviewDecision, cf engine.ReviewConfig) (engine.ReviewState, error)
	// Deprecated: use SuspendReview.
	SuspendTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use ResumeReview.
	ResumeTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use CancelReview.
	CancelTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use StepReview.
	StepTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use ApproveReview.
	ApproveTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use RejectReview.
	RejectTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use ResubmitReview.
	ResubmitTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use FixReview.
	FixTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
	// Deprecated: use TerminateReview.
	TerminateTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error)
}

// DescribeTaskJob is DescribeReviewJob.
//
// Deprecated: use DescribeReviewJob.
func (c *workflowClient) DescribeTaskJob(ctx context.Context, job string) (*engine.Manifest, error) {
	return c.DescribeReviewJob(ctx, job)
}

// ListTasks is ListReviews.
//
// Deprecated: use ListReviews.
func (c *workflowClient) ListTasks(ctx context.Context, job string) ([]engine.Review, error) {
	return c.ListReviews(ctx, job)
}

// DescribeTask is DescribeReview.
//
// Deprecated: use DescribeReview.
func (c *workflowClient) DescribeTask(ctx context.Context, job, phase string) (*engine.Review, error) {
	return c.DescribeReview(ctx, job, phase)
}

// ConfigureTask is ConfigureReview.
//
// Deprecated: use ConfigureReview.
func (c *workflowClient) ConfigureTask(ctx context.Context, d ReviewDecision, cf engine.ReviewConfig) (engine.ReviewState, error) {
	return c.ConfigureReview(ctx, d, cf)
}

// ActivateTask is ActivateReview.
//
// Deprecated: use ActivateReview.
func (c *workflowClient) ActivateTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.ActivateReview(ctx, d)
}

// SuspendTask is SuspendReview.
//
// Deprecated: use SuspendReview.
func (c *workflowClient) SuspendTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.SuspendReview(ctx, d)
}

// ResumeTask is ResumeReview.
//
// Deprecated: use ResumeReview.
func (c *workflowClient) ResumeTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.ResumeReview(ctx, d)
}

// CancelTask is CancelReview.
//
// Deprecated: use CancelReview.
func (c *workflowClient) CancelTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.CancelReview(ctx, d)
}

// StepTask is StepReview.
//
// Deprecated: use StepReview.
func (c *workflowClient) StepTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.StepReview(ctx, d)
}

// ApproveTask is ApproveReview.
//
// Deprecated: use ApproveReview.
func (c *workflowClient) ApproveTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.ApproveReview(ctx, d)
}

// RejectTask is RejectReview.
//
// Deprecated: use RejectReview.
func (c *workflowClient) RejectTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.RejectReview(ctx, d)
}

// ResubmitTask is ResubmitReview.
//
// Deprecated: use ResubmitReview.
func (c *workflowClient) ResubmitTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.ResubmitReview(ctx, d)
}

// FixTask is FixReview.
//
// Deprecated: use FixReview.
func (c *workflowClient) FixTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.FixReview(ctx, d)
}

// TerminateTask is TerminateReview.
//
// Deprecated: use TerminateReview.
func (c *workflowClient) TerminateTask(ctx context.Context, d ReviewDecision) (engine.ReviewState, error) {
	return c.TerminateReview(ctx, d)
}
