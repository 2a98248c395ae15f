package client

import (
	"context"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// WorkflowRun is one run of a workflow.
type WorkflowRun interface {
	GetID() string
	// GetRunID is the run's id, "" when GetWorkflow could not find it.
	GetRunID() string
	// Get waits for the run to end, following continue-as-new and
	// workflow retries to the last run, and decodes its result into
	// valuePtr (nil to ignore it). A run that did not complete returns a
	// *temporal.WorkflowExecutionError wrapping why: the workflow's error,
	// a *temporal.CanceledError, a *temporal.TimeoutError or a
	// *temporal.TerminatedError.
	Get(ctx context.Context, valuePtr any) error
	// GetWithOptions is Get with options.
	GetWithOptions(ctx context.Context, valuePtr any, options WorkflowRunGetOptions) error
}

// WorkflowRunGetOptions configure WorkflowRun.GetWithOptions.
type WorkflowRunGetOptions struct {
	// DisableFollowingRuns: Get reports the run itself, not the last run
	// it continued as (a continued or retried run then returns an error
	// saying so).
	DisableFollowingRuns bool
}

type run struct {
	c     *workflowClient
	id    string
	runID engine.JobID
	typ   string
	err   error // GetWorkflow's lookup failed
}

func (r *run) GetID() string { return r.id }

func (r *run) GetRunID() string {
	if r.runID == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(r.runID), 10)
}

func (r *run) Get(ctx context.Context, valuePtr any) error {
	return r.GetWithOptions(ctx, valuePtr, WorkflowRunGetOptions{})
}

func (r *run) GetWithOptions(ctx context.Context, valuePtr any, options WorkflowRunGetOptions) error {
	if r.err != nil {
		return r.err
	}
	if err := r.c.check(); err != nil {
		return err
	}
	id := r.runID
	var j *engine.Job
	var last engine.Event
	for {
		// One call where the engine answers the end and its event together
		// (engine.ClosingWaiter): against a cluster, one request.
		closing, err := engine.WaitClosing(ctx, r.c.e, engine.Target{Job: id})
		if err != nil {
			return err
		}
		j, last = &closing.Job, closing.Event
		cronTimedOut := j.CronSchedule != "" && last.Reason == engine.ReasonRunTimeout // the chain goes on
		if last.Reason != engine.ReasonContinuedAsNew && last.Reason != engine.ReasonRetried && last.Reason != engine.ReasonCronNext && !cronTimedOut {
			break
		}
		if options.DisableFollowingRuns {
			return temporal.NewWorkflowExecutionError(j.WorkflowID, strconv.FormatUint(uint64(j.ID), 10), j.Type,
				fmt.Errorf("client: run %d went on as a new run (%s)", j.ID, last.Reason))
		}
		// The run went on as a new run of the same workflow id: follow it.
		next, err := r.c.e.Describe(ctx, engine.Target{WorkflowID: j.WorkflowID})
		if err != nil {
			return err
		}
		if next.ID <= id {
			return fmt.Errorf("client: run %d continued, but no newer run of %q exists", id, j.WorkflowID)
		}
		id = next.ID
	}
	runID := strconv.FormatUint(uint64(j.ID), 10)
	var cause error
	switch j.Status {
	case engine.StatusCompleted:
		if valuePtr == nil {
			return nil
		}
		return r.c.decode(last.Payload, valuePtr)
	case engine.StatusCancelled:
		cause = temporal.NewCanceledError()
		if len(last.Payload) > 0 {
			cause = r.c.decodeFailure(last.Payload)
		}
	case engine.StatusTerminated:
		cause = sdkhook.NewTerminatedError(fmt.Sprintf("terminated (run %d)", j.ID))
		if len(last.Payload) > 0 {
			cause = r.c.decodeFailure(last.Payload)
		}
	default: // Failed, TimedOut
		cause = r.c.decodeFailure(last.Payload)
	}
	return temporal.NewWorkflowExecutionError(j.WorkflowID, runID, j.Type, cause)
}
