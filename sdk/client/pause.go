package client

import (
	"context"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// PauseClient holds an operator's pause of a run and the operations on a
// run's activities, in the shapes of Temporal's requests
// (PauseWorkflowExecution, UnpauseWorkflowExecution, PauseActivity,
// UnpauseActivity, ResetActivity, UpdateActivityOptions), which Temporal's
// Go SDK reaches through its raw WorkflowService. See
// docs/state-machines.md §6 for what each one does to a run. A RequestID
// makes a call idempotent: a retry with the same one answers what the
// first answered and changes nothing more. Its methods may be called
// concurrently.
type PauseClient interface {
	// PauseWorkflowExecution holds a run: it takes no new turn and starts
	// no activity until it is unpaused; a turn that runs finishes. Timers
	// and signals still arrive, and timeouts keep running. Pausing a
	// paused run changes nothing.
	PauseWorkflowExecution(ctx context.Context, options PauseWorkflowExecutionOptions) error
	// UnpauseWorkflowExecution lets a paused run go on.
	UnpauseWorkflowExecution(ctx context.Context, options UnpauseWorkflowExecutionOptions) error
	// PauseActivity pauses activities of a run: none of their tries starts
	// until UnpauseActivity or ResetActivity; a try that runs finishes.
	PauseActivity(ctx context.Context, options PauseActivityOptions) (*engine.ActivityResult, error)
	// UnpauseActivity ends the pause of activities of a run.
	UnpauseActivity(ctx context.Context, options UnpauseActivityOptions) (*engine.ActivityResult, error)
	// ResetActivity starts the attempts of activities of a run over from
	// 1, their next try at once, and unpauses them unless KeepPaused.
	ResetActivity(ctx context.Context, options ResetActivityOptions) (*engine.ActivityResult, error)
	// UpdateActivityOptions changes the timeouts and retry policy of
	// pending activities of a run, from their next try.
	UpdateActivityOptions(ctx context.Context, options UpdateActivityOptionsRequest) (*engine.ActivityResult, error)
}

// PauseWorkflowExecutionOptions name the run to pause (RunID "": the
// workflow id's current run) and why.
type PauseWorkflowExecutionOptions struct {
	WorkflowID string
	RunID      string
	Reason     string
	// RequestID, if set, makes the call idempotent.
	RequestID string
}

// UnpauseWorkflowExecutionOptions name the run to unpause and why.
type UnpauseWorkflowExecutionOptions struct {
	WorkflowID string
	RunID      string
	Reason     string
	RequestID  string
}

// ActivitySelector names the pending activities of a run an activity
// operation acts on, as Temporal's requests do: one by its ActivityID
// (activity.GetInfo(ctx).ActivityID, the step `heddle step list` shows),
// every one of ActivityType, or every one (MatchAll). Exactly one is set.
type ActivitySelector struct {
	WorkflowID   string
	RunID        string
	ActivityID   string
	ActivityType string
	MatchAll     bool
}

// PauseActivityOptions name the activities to pause and why.
type PauseActivityOptions struct {
	ActivitySelector
	Reason    string
	RequestID string
}

// UnpauseActivityOptions name the activities to unpause; ResetAttempts
// also starts their attempts over.
type UnpauseActivityOptions struct {
	ActivitySelector
	Reason        string
	ResetAttempts bool
	RequestID     string
}

// ResetActivityOptions name the activities to reset. KeepPaused leaves a
// paused one paused; RestoreOriginalOptions drops the options an operator
// gave them.
type ResetActivityOptions struct {
	ActivitySelector
	KeepPaused             bool
	RestoreOriginalOptions bool
	Reason                 string
	RequestID              string
}

// UpdateActivityOptionsRequest names the activities and their new options:
// each non-zero timeout, and each non-zero field of RetryPolicy
// (InitialInterval, BackoffCoefficient, MaximumInterval,
// MaximumAttempts), replaces the one in force. RestoreOriginal instead
// goes back to the options the workflow gave (then set nothing else).
type UpdateActivityOptionsRequest struct {
	ActivitySelector
	ScheduleToCloseTimeout time.Duration
	ScheduleToStartTimeout time.Duration
	StartToCloseTimeout    time.Duration
	HeartbeatTimeout       time.Duration
	RetryPolicy            *temporal.RetryPolicy
	RestoreOriginal        bool
	RequestID              string
}

func (s ActivitySelector) engine() (engine.Target, engine.ActivitySelector) {
	return target(s.WorkflowID, s.RunID), engine.ActivitySelector{ActivityID: s.ActivityID, ActivityType: s.ActivityType, MatchAll: s.MatchAll}
}

func (c *workflowClient) PauseWorkflowExecution(ctx context.Context, o PauseWorkflowExecutionOptions) error {
	if err := c.check(); err != nil {
		return err
	}
	cmd := engine.Pause{Target: target(o.WorkflowID, o.RunID), Reason: o.Reason}
	cmd.RequestID = o.RequestID
	_, err := c.e.Pause(ctx, cmd)
	return err
}

func (c *workflowClient) UnpauseWorkflowExecution(ctx context.Context, o UnpauseWorkflowExecutionOptions) error {
	if err := c.check(); err != nil {
		return err
	}
	cmd := engine.Unpause{Target: target(o.WorkflowID, o.RunID), Reason: o.Reason}
	cmd.RequestID = o.RequestID
	_, err := c.e.Unpause(ctx, cmd)
	return err
}

func (c *workflowClient) PauseActivity(ctx context.Context, o PauseActivityOptions) (*engine.ActivityResult, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	t, sel := o.engine()
	cmd := engine.PauseActivity{Target: t, ActivitySelector: sel, Reason: o.Reason}
	cmd.RequestID = o.RequestID
	return c.e.PauseActivity(ctx, cmd)
}

func (c *workflowClient) UnpauseActivity(ctx context.Context, o UnpauseActivityOptions) (*engine.ActivityResult, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	t, sel := o.engine()
	cmd := engine.UnpauseActivity{Target: t, ActivitySelector: sel, Reason: o.Reason, ResetAttempts: o.ResetAttempts}
	cmd.RequestID = o.RequestID
	return c.e.UnpauseActivity(ctx, cmd)
}

func (c *workflowClient) ResetActivity(ctx context.Context, o ResetActivityOptions) (*engine.ActivityResult, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	t, sel := o.engine()
	cmd := engine.ResetActivity{Target: t, ActivitySelector: sel, KeepPaused: o.KeepPaused,
		RestoreOriginalOptions: o.RestoreOriginalOptions, Reason: o.Reason}
	cmd.RequestID = o.RequestID
	return c.e.ResetActivity(ctx, cmd)
}

func (c *workflowClient) UpdateActivityOptions(ctx context.Context, o UpdateActivityOptionsRequest) (*engine.ActivityResult, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	t, sel := o.engine()
	cmd := engine.UpdateActivityOptions{Target: t, ActivitySelector: sel, RestoreOriginal: o.RestoreOriginal,
		Options: ActivityOptionsOf(o.ScheduleToCloseTimeout, o.ScheduleToStartTimeout, o.StartToCloseTimeout, o.HeartbeatTimeout, o.RetryPolicy)}
	cmd.RequestID = o.RequestID
	return c.e.UpdateActivityOptions(ctx, cmd)
}

// ActivityOptionsOf is the engine's form of an activity options update:
// timeouts and retry intervals in milliseconds (a positive duration below
// one counts as one).
func ActivityOptionsOf(scheduleToClose, scheduleToStart, startToClose, heartbeat time.Duration, p *temporal.RetryPolicy) engine.ActivityOptions {
	o := engine.ActivityOptions{ScheduleToCloseTimeoutMS: ms(scheduleToClose), ScheduleToStartTimeoutMS: ms(scheduleToStart),
		StartToCloseTimeoutMS: ms(startToClose), HeartbeatTimeoutMS: ms(heartbeat)}
	if p != nil {
		o.RetryPolicy = &engine.RetryPolicy{InitialIntervalMS: ms(p.InitialInterval), BackoffCoefficient: p.BackoffCoefficient,
			MaximumIntervalMS: ms(p.MaximumInterval), MaximumAttempts: p.MaximumAttempts}
	}
	return o
}

func ms(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}
