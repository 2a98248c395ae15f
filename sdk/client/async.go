package client

import (
	"context"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
)

// CompleteActivity completes an activity that returned
// activity.ErrResultPending, by the activity.Info.TaskToken of the attempt
// that returned it: with result (nil for an activity that returns only an
// error), or as failed with err when err is not nil. A token of an attempt
// that is no longer the activity's, or of an activity that already ended,
// is refused with an error matching engine.ErrStaleAttempt.
func (c *workflowClient) CompleteActivity(ctx context.Context, taskToken []byte, result any, err error) error {
	t, derr := sdkhook.DecodeTaskToken(taskToken)
	if derr != nil {
		return derr
	}
	return c.completeAsync(ctx, t.Lease(), false, result, err)
}

// CompleteActivityByID completes the pending activity activityID (its step
// in the workflow's history) of run runID ("" for the latest run) of
// workflowID, whatever its attempt, once it is parked for asynchronous
// completion (its code returned activity.ErrResultPending): an attempt
// that still runs is its worker's, and the engine refuses this with an
// error matching engine.ErrStaleAttempt. namespace must be "" or
// "default": heddle has no namespaces.
func (c *workflowClient) CompleteActivityByID(ctx context.Context, namespace, workflowID, runID, activityID string, result any, err error) error {
	if namespace != "" && namespace != "default" {
		return fmt.Errorf("%w: namespace %q: heddle has no namespaces", engine.ErrInvalidCommand, namespace)
	}
	if workflowID == "" || activityID == "" {
		return fmt.Errorf("%w: CompleteActivityByID needs a workflow id and an activity id", engine.ErrInvalidCommand)
	}
	if runID == "" {
		j, derr := c.e.Describe(ctx, engine.Target{WorkflowID: workflowID})
		if derr != nil {
			return derr
		}
		runID = strconv.FormatUint(uint64(j.ID), 10)
	}
	task, derr := c.e.Describe(ctx, engine.Target{WorkflowID: workflowID + "/" + runID + "/" + activityID})
	if derr != nil {
		return derr
	}
	return c.completeAsync(ctx, engine.LeaseRef{Job: task.ID, Attempt: task.Attempt}, true, result, err)
}

// completeAsync ends the activity task ref names: by its task token's
// lease (byID false), or by id (Temporal's CompleteActivityByID), whose
// caller read the attempt and has no lease token.
func (c *workflowClient) completeAsync(ctx context.Context, ref engine.LeaseRef, byID bool, result any, err error) error {
	svc, ok := c.e.(engine.AsyncService)
	if !ok {
		return fmt.Errorf("client: the service %T cannot complete activities", c.e)
	}
	cmd := engine.CompleteAsync{LeaseRef: ref, ByID: byID}
	switch {
	case err != nil:
		cmd.Error = c.encodeFailure(err)
	case result != nil:
		b, eerr := c.encode(result)
		if eerr != nil {
			return fmt.Errorf("client: activity result: %w", eerr)
		}
		cmd.Result = b
	}
	_, perr := svc.CompleteAsync(ctx, cmd)
	return perr
}
