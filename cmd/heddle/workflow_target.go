package main

// This file names the run a verb acts on. Operators have either a workflow
// id (what they started) or a job id (what list, history and logs show), so
// the ID argument accepts both: a number names a job, unless no job has that
// id and a workflow does, since a workflow id may be all digits. The flags
// -w/--workflow-id and -r/--run-id (Temporal's spellings) say which it is,
// with no guess; both together name a run and check it is that workflow's.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/pflag"
)

// wfTargetFlags are -w and -r.
type wfTargetFlags struct {
	fs         *pflag.FlagSet
	workflowID string
	runID      string
	job        engine.JobID // runID, parsed by args
}

func addTargetFlags(fs *pflag.FlagSet) *wfTargetFlags {
	t := &wfTargetFlags{fs: fs}
	fs.StringVarP(&t.workflowID, "workflow-id", "w", "", "the workflow `id` whose current run to use, instead of the ID argument")
	fs.StringVarP(&t.runID, "run-id", "r", "", "the job (run) `id` of the run to use, instead of the ID argument")
	return t
}

// given reports whether -w or -r was given.
func (t *wfTargetFlags) given() bool {
	return t.fs.Changed("workflow-id") || t.fs.Changed("run-id")
}

// args checks the positional arguments: ID (unless -w or -r named the
// run) and then the names in rest. It returns the ID ("" with -w or -r)
// and the rest.
func (t *wfTargetFlags) args(args []string, rest ...string) (string, []string, error) {
	if !t.given() {
		pos, err := wantArgs(args, append([]string{"ID"}, rest...)...)
		if err != nil {
			if len(args) == 0 {
				return "", nil, usagef("missing argument ID (or -w/--workflow-id, -r/--run-id)")
			}
			return "", nil, err
		}
		return pos[0], pos[1:], nil
	}
	if len(args) > len(rest) {
		return "", nil, usagef("unexpected argument %q (-w/-r name the run)", args[len(rest)])
	}
	pos, err := wantArgs(args, rest...)
	if err != nil {
		return "", nil, err
	}
	if t.fs.Changed("workflow-id") && t.workflowID == "" {
		return "", nil, usagef("-w/--workflow-id must not be empty")
	}
	if t.fs.Changed("run-id") {
		n, err := strconv.ParseUint(t.runID, 10, 64)
		if err != nil || n == 0 {
			return "", nil, usagef("-r/--run-id %q is not a job (run) id, a positive number", t.runID)
		}
		t.job = engine.JobID(n)
	}
	return "", pos, nil
}

// resolve returns the target the ID argument or the flags name. When it
// had to ask the server, it also returns the job it found, else nil.
func (t *wfTargetFlags) resolve(ctx context.Context, svc engine.Service, id string) (engine.Target, *engine.Job, error) {
	switch {
	case !t.given():
		return wfResolve(ctx, svc, id)
	case t.job == 0:
		return engine.Target{WorkflowID: t.workflowID}, nil, nil
	}
	// The run is read even without -w, for the workflow id the verbs print.
	byJob := engine.Target{Job: t.job}
	j, err := svc.Describe(ctx, byJob)
	if err != nil {
		return engine.Target{}, nil, err
	}
	if t.workflowID != "" && j.WorkflowID != t.workflowID {
		return engine.Target{}, nil, fmt.Errorf("job %d is a run of workflow %q, not of %q", j.ID, j.WorkflowID, t.workflowID)
	}
	return byJob, j, nil
}

// describe returns the run the ID argument or the flags name: the run
// itself for a job id, the current run for a workflow id.
func (t *wfTargetFlags) describe(ctx context.Context, svc engine.Service, id string) (*engine.Job, error) {
	target, j, err := t.resolve(ctx, svc, id)
	if err != nil || j != nil {
		return j, err
	}
	return svc.Describe(ctx, target)
}

// wfResolve returns the target arg names. When it had to ask the server (a
// numeric arg), it also returns the job it found, else nil.
func wfResolve(ctx context.Context, svc engine.Service, arg string) (engine.Target, *engine.Job, error) {
	if arg == "" {
		return engine.Target{}, nil, usagef("ID must not be empty")
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
