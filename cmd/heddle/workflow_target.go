package main

// This file turns a verb's ID argument into an engine.Target. Operators have
// either a workflow id (what they started) or a job id (what list, history
// and logs show), so ID accepts both: a number names a job, unless no job
// has that id and a workflow does, since a workflow id may be all digits.

import (
	"context"
	"errors"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

// wfResolve returns the target arg names. When it had to ask the server (a
// numeric arg), it also returns the job it found, else nil.
func wfResolve(ctx context.Context, svc engine.Service, arg string) (engine.Target, *engine.Job, error) {
	if arg == "" {
		return engine.Target{}, nil, wfUsagef("ID must not be empty")
	}
	byWorkflow := engine.Target{WorkflowID: arg}
	n, err := strconv.ParseUint(arg, 10, 64)
	if err != nil || n == 0 {
		return byWorkflow, nil, nil
	}
	byJob := engine.Target{Job: engine.JobID(n)}
	j, err := svc.Describe(ctx, byJob)
	if err == nil {
		return byJob, j, nil
	}
	if !errors.Is(err, engine.ErrUnknownJob) {
		return engine.Target{}, nil, err
	}
	if wj, werr := svc.Describe(ctx, byWorkflow); werr == nil {
		return byWorkflow, wj, nil
	}
	return engine.Target{}, nil, err // the job's error: a number is a job id first
}

// wfDescribe returns the job arg names: the run itself for a job id, the
// current run for a workflow id.
func wfDescribe(ctx context.Context, svc engine.Service, arg string) (*engine.Job, error) {
	t, j, err := wfResolve(ctx, svc, arg)
	if err != nil || j != nil {
		return j, err
	}
	return svc.Describe(ctx, t)
}
