package ui

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// The bounds of the look-ups one run page makes for its remote steps: a
// run with thousands of children still renders at once, with the first
// maxLinked of them linked.
const (
	maxLinked    = 50
	maxScanPages = 2
)

// linkSteps finds the job of each remote step of run j (up to maxLinked).
func linkSteps(ctx context.Context, api engine.Service, j *engine.Job, steps []*stepView) error {
	n := 0
	for _, s := range steps {
		if !s.Remote || n == maxLinked {
			continue
		}
		n++
		found, err := findStepJob(ctx, api, j, s)
		if err != nil {
			return err
		}
		s.Job = found
	}
	return nil
}

// maxResetHops bounds the runs a reset run's links are followed back
// through to find its steps' jobs.
const maxResetHops = 8

// findStepJob finds the job that runs step s of run j, or nil. The SDK
// gives such a job the workflow id "<parent workflow id>/<parent job>/<step>"
// unless the code chose one; either way the job names its parent and step,
// so when the usual id does not lead to it, the jobs of its type created
// after the parent are searched (at most maxScanPages pages of them).
func findStepJob(ctx context.Context, api engine.Service, j *engine.Job, s *stepView) (*engine.Job, error) {
	isStep := func(c *engine.Job) bool { return c.ParentID == j.ID && c.ParentStep == s.Step }
	c, err := api.Describe(ctx, engine.Target{WorkflowID: fmt.Sprintf("%s/%d/%s", j.WorkflowID, j.ID, s.Step)})
	switch {
	case err == nil && isStep(c):
		return c, nil
	case err != nil && !errors.Is(err, engine.ErrUnknownJob):
		return nil, err
	}
	// A run a reset made holds the steps of the run it was reset from: a
	// child that run started has that run's id in its workflow id, and
	// names it as its parent, or this run once the reset reconnected it.
	for base, hops := j.ResetBaseRunID, 0; base != 0 && hops < maxResetHops; hops++ {
		c, err := api.Describe(ctx, engine.Target{WorkflowID: fmt.Sprintf("%s/%d/%s", j.WorkflowID, base, s.Step)})
		switch {
		case err == nil && c.ParentStep == s.Step && (c.ParentID == j.ID || c.ParentID == base):
			return c, nil
		case err != nil && !errors.Is(err, engine.ErrUnknownJob):
			return nil, err
		}
		b, err := api.Describe(ctx, engine.Target{Job: base})
		if errors.Is(err, engine.ErrUnknownJob) {
			break
		}
		if err != nil {
			return nil, err
		}
		base = b.ResetBaseRunID
	}
	typ := s.Name
	if s.Kind == "activity" {
		typ = engine.ActivityTypePrefix + s.Name
	}
	if typ == "" {
		return nil, nil
	}
	q := engine.ListQuery{Type: typ, After: j.ID, Limit: engine.MaxPage}
	for range maxScanPages {
		page, err := api.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, c := range page.Jobs {
			if isStep(c) {
				return c, nil
			}
		}
		if page.Next == 0 {
			break
		}
		q.After = page.Next
	}
	return nil, nil
}
