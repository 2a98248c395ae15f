package client

import (
	"context"
	"errors"

	"github.com/heddlewf/heddle/engine"
)

// ErrNoTasks: the client's service has no review tasks (both the engine
// and engine/httpapi's client have them).
var ErrNoTasks = errors.New("client: the service has no review tasks")

// TaskClient reads review tasks and issues the human commands on them.
// Each command returns the task's state after it, or a
// *engine.TaskStateError naming the state and the commands legal in it.
type TaskClient interface {
	DescribeTaskJob(ctx context.Context, job string) (*engine.Manifest, error)
	ListTasks(ctx context.Context, job string) ([]engine.Task, error)
	DescribeTask(ctx context.Context, job, phase string) (*engine.Task, error)
	ActivateTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	ConfigureTask(ctx context.Context, d TaskDecision, cf engine.TaskConfig) (engine.TaskState, error)
	SuspendTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	ResumeTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	CancelTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	StepTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	ApproveTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	RejectTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	ResubmitTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	FixTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
	TerminateTask(ctx context.Context, d TaskDecision) (engine.TaskState, error)
}

func (c *workflowClient) tasks() (engine.TaskService, error) {
	ts, ok := c.e.(engine.TaskService)
	if !ok {
		return nil, ErrNoTasks
	}
	return ts, nil
}

// DescribeTaskJob returns the manifest of job: its status, current phase,
// cumulative cost and time, and each phase's status and summary.
func (c *workflowClient) DescribeTaskJob(ctx context.Context, job string) (*engine.Manifest, error) {
	ts, err := c.tasks()
	if err != nil {
		return nil, err
	}
	return ts.TaskManifest(ctx, job)
}

// ListTasks returns the tasks of job in creation order.
func (c *workflowClient) ListTasks(ctx context.Context, job string) ([]engine.Task, error) {
	ts, err := c.tasks()
	if err != nil {
		return nil, err
	}
	return ts.ListTasks(ctx, job)
}

// DescribeTask returns the record of the task of job and phase.
func (c *workflowClient) DescribeTask(ctx context.Context, job, phase string) (*engine.Task, error) {
	ts, err := c.tasks()
	if err != nil {
		return nil, err
	}
	return ts.DescribeTask(ctx, engine.TaskTarget{Job: job, Phase: phase})
}

// TaskDecision is a human command on a task: the task, who decides and
// why. Reason is the feedback a rejected, resubmitted or fixed task's next
// run reads.
type TaskDecision struct {
	Job, Phase string
	By         string
	Reason     string
}

func (c *workflowClient) decide(ctx context.Context, op engine.TaskOp, d TaskDecision, cf *engine.TaskConfig) (engine.TaskState, error) {
	ts, err := c.tasks()
	if err != nil {
		return engine.TaskNone, err
	}
	res, err := ts.TaskCommand(ctx, engine.TaskCommand{TaskTarget: engine.TaskTarget{Job: d.Job, Phase: d.Phase},
		Op: op, By: d.By, Reason: d.Reason, Config: cf})
	if err != nil {
		return engine.TaskNone, err
	}
	return res.State, nil
}

// Each of these gives one human command and returns the task's new state.
// A command the task's state does not allow fails with an error matching
// engine.ErrIllegalTaskCommand; errors.As gives the *engine.TaskStateError
// with the state and the commands legal in it.

// ActivateTask moves a DRAFT task to PENDING.
func (c *workflowClient) ActivateTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpActivate, d, nil)
}

// ConfigureTask changes a DRAFT task's configuration (the fields set in cf).
func (c *workflowClient) ConfigureTask(ctx context.Context, d TaskDecision, cf engine.TaskConfig) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpConfig, d, &cf)
}

// SuspendTask suspends a task.
func (c *workflowClient) SuspendTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpSuspend, d, nil)
}

// ResumeTask resumes a SUSPENDED (to PENDING) or PAUSED (to RUNNING) task.
func (c *workflowClient) ResumeTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpResume, d, nil)
}

// CancelTask cancels a task.
func (c *workflowClient) CancelTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpCancel, d, nil)
}

// StepTask starts the review of a REVIEW_REQUIRED task.
func (c *workflowClient) StepTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpStep, d, nil)
}

// ApproveTask approves a task's reviewed output: SUCCESS.
func (c *workflowClient) ApproveTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpApprove, d, nil)
}

// RejectTask sends a task back to run again with d.Reason as feedback.
func (c *workflowClient) RejectTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpReject, d, nil)
}

// ResubmitTask sends a task that needs intervention back to PENDING.
func (c *workflowClient) ResubmitTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpResubmit, d, nil)
}

// FixTask marks a task that needed intervention fixed: REVIEW_REQUIRED.
func (c *workflowClient) FixTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpFix, d, nil)
}

// TerminateTask ends a task that needs intervention: CANCELED.
func (c *workflowClient) TerminateTask(ctx context.Context, d TaskDecision) (engine.TaskState, error) {
	return c.decide(ctx, engine.TaskOpTerminate, d, nil)
}
