package client

import (
	"context"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// AsyncHeartbeatSignal names the signal_received events that
// RecordActivityHeartbeat writes into an activity task's history. A parked
// task does not wait for it, so recording one never wakes the task.
const AsyncHeartbeatSignal = "heddle.async_heartbeat"

// RecordActivityHeartbeat records a heartbeat, with details, of an
// activity that returned activity.ErrResultPending (or still runs), by the
// task token of its attempt, as Temporal's. It returns a
// *temporal.CanceledError when the activity was cancelled (its workflow
// asked for it, or it ended as Cancelled), so the code completing it can
// stop, and an error matching engine.ErrStaleAttempt when the token's
// attempt is no longer the activity's or the activity has ended. The
// details are kept in the task's history (signal_received events named
// AsyncHeartbeatSignal); a later try's activity.GetHeartbeatDetails does
// not see them.
func (c *workflowClient) RecordActivityHeartbeat(ctx context.Context, taskToken []byte, details ...any) error {
	if err := c.check(); err != nil {
		return err
	}
	t, err := sdkhook.DecodeTaskToken(taskToken)
	if err != nil {
		return err
	}
	return c.asyncHeartbeat(ctx, t.Lease(), details)
}

// RecordActivityHeartbeatByID is RecordActivityHeartbeat by workflow id,
// run id ("" for the latest run) and activity id (the activity's step),
// whatever its attempt. namespace must be "" or "default".
func (c *workflowClient) RecordActivityHeartbeatByID(ctx context.Context, namespace, workflowID, runID, activityID string, details ...any) error {
	if err := c.check(); err != nil {
		return err
	}
	task, err := c.activityTask(ctx, namespace, workflowID, runID, activityID)
	if err != nil {
		return err
	}
	return c.asyncHeartbeat(ctx, engine.LeaseRef{Job: task.ID, Attempt: task.Attempt}, details)
}

// activityTask finds the activity task of step activityID of a run.
func (c *workflowClient) activityTask(ctx context.Context, namespace, workflowID, runID, activityID string) (*engine.Job, error) {
	if namespace != "" && namespace != DefaultNamespace {
		return nil, fmt.Errorf("%w: namespace %q: heddle has no namespaces", engine.ErrInvalidCommand, namespace)
	}
	if workflowID == "" || activityID == "" {
		return nil, fmt.Errorf("%w: a workflow id and an activity id are required", engine.ErrInvalidCommand)
	}
	if runID == "" {
		j, err := c.e.Describe(ctx, engine.Target{WorkflowID: workflowID})
		if err != nil {
			return nil, err
		}
		runID = strconv.FormatUint(uint64(j.ID), 10)
	}
	return c.e.Describe(ctx, engine.Target{WorkflowID: workflowID + "/" + runID + "/" + activityID})
}

// asyncHeartbeat checks that ref is the task's live attempt and records
// the details. The check and the write are two requests: a heartbeat that
// races the task's end may be recorded just after it, which is harmless,
// since the signal is refused once the task has ended.
func (c *workflowClient) asyncHeartbeat(ctx context.Context, ref engine.LeaseRef, details []any) error {
	j, err := c.e.Describe(ctx, engine.Target{Job: ref.Job})
	if err != nil {
		return err
	}
	if j.CancelRequested || j.Status == engine.StatusCancelled {
		return temporal.NewCanceledError()
	}
	if j.Status.Terminal() || j.Attempt != ref.Attempt {
		return &engine.StaleAttemptError{Job: j.ID, Attempt: ref.Attempt, Current: j.Attempt, Status: j.Status, Command: "RecordActivityHeartbeat"}
	}
	payload, err := c.encode(details...)
	if err != nil {
		return fmt.Errorf("client: heartbeat details: %w", err)
	}
	_, err = c.e.Signal(ctx, engine.Signal{Target: engine.Target{Job: ref.Job}, Name: AsyncHeartbeatSignal, Payload: payload})
	return err
}
