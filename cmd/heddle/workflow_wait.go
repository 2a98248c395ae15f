package main

// This file waits for a workflow's outcome for start --wait. A run that
// continues as new, or fails and is retried under its retry policy, is not
// the workflow's end: the wait follows the workflow id to its next run, as
// the SDK client's WorkflowRun.Get does, and returns the last run.

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// wfAwait waits until the workflow that job id starts has ended and returns
// its last run with that run's closing event.
func wfAwait(ctx context.Context, svc engine.Service, id engine.JobID) (*engine.Job, *engine.Event, error) {
	for {
		j, err := svc.WaitClosed(ctx, engine.Target{Job: id})
		if err != nil {
			return nil, nil, err
		}
		last, err := wfClosing(ctx, svc, j)
		if err != nil {
			return nil, nil, err
		}
		if last == nil {
			return nil, nil, fmt.Errorf("job %d was reported closed but is %s", j.ID, j.Status)
		}
		if last.Reason != engine.ReasonContinuedAsNew && last.Reason != engine.ReasonRetried {
			return j, last, nil
		}
		next, err := svc.Describe(ctx, engine.Target{WorkflowID: j.WorkflowID})
		if err != nil {
			return nil, nil, err
		}
		if next.ID <= id {
			return nil, nil, fmt.Errorf("run %d of %q went on as a new run, but the workflow has no newer run", id, j.WorkflowID)
		}
		id = next.ID
	}
}
