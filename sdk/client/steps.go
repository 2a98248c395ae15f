package client

import (
	"context"

	"github.com/heddlewf/heddle/engine"
)

// StepClient holds what a client does with steps as engine state: list a
// run's steps, answer one that needs a person, and manage the resource
// pool steps lease units of. Its methods may be called concurrently.
type StepClient interface {
	// ListSteps returns the activity steps of a run (runID "": the
	// current run).
	ListSteps(ctx context.Context, workflowID, runID string) ([]engine.StepInfo, error)
	// AnswerStep answers a step that needs a person (NEEDS_USER).
	AnswerStep(ctx context.Context, t StepTarget, answer []byte) (*engine.StepResult, error)
	// AddResource registers a resource in the pool.
	AddResource(ctx context.Context, r Resource) (*engine.Resource, error)
	// DrainResource stops (undrain: lets again) a resource from taking new
	// step leases.
	DrainResource(ctx context.Context, id string, undrain bool) (*engine.Resource, error)
	// RemoveResource deletes a resource that holds no step lease.
	RemoveResource(ctx context.Context, id string) error
	// ListResources returns the resource pool, in id order.
	ListResources(ctx context.Context) ([]*engine.Resource, error)
}

// StepTarget names one step of a run: the run's workflow id and run id
// ("" for the current run) and the step's id, as ListSteps shows it.
type StepTarget struct {
	WorkflowID string
	RunID      string
	Step       string
}

// ListSteps returns the activity steps of a run: each one's state, try,
// resource, worker, last heartbeat, avoid-list and, while it needs a
// person, its question.
func (c *workflowClient) ListSteps(ctx context.Context, workflowID, runID string) ([]engine.StepInfo, error) {
	return c.e.Steps(ctx, target(workflowID, runID))
}

// AnswerStep answers a step that needs a person (NEEDS_USER): the
// activity runs again with answer in activity.GetInfo(ctx).Answer. A step
// that asks nothing is refused with an error matching engine.ErrStepState.
func (c *workflowClient) AnswerStep(ctx context.Context, t StepTarget, answer []byte) (*engine.StepResult, error) {
	return c.e.AnswerStep(ctx, engine.AnswerStep{Target: target(t.WorkflowID, t.RunID), Step: t.Step, Answer: answer})
}

// Resource describes a resource to register: its id, the capabilities it
// offers, its labels and how many steps may hold it at once (0 means 1).
type Resource struct {
	ID           string
	Capabilities []string
	Labels       map[string]string
	Capacity     int
}

// AddResource registers a resource in the pool. Steps waiting for what it
// offers are given its units at once, first come first served.
func (c *workflowClient) AddResource(ctx context.Context, r Resource) (*engine.Resource, error) {
	if r.Capacity == 0 {
		r.Capacity = 1
	}
	res, err := c.e.AddResource(ctx, engine.AddResource{ID: r.ID, Capabilities: r.Capabilities, Labels: r.Labels, Capacity: r.Capacity})
	if err != nil {
		return nil, err
	}
	return res.Resource, nil
}

// DrainResource stops a resource from taking new step leases; the leases
// it holds finish. undrain lets it take them again.
func (c *workflowClient) DrainResource(ctx context.Context, id string, undrain bool) (*engine.Resource, error) {
	res, err := c.e.DrainResource(ctx, engine.DrainResource{ID: id, Undrain: undrain})
	if err != nil {
		return nil, err
	}
	return res.Resource, nil
}

// RemoveResource deletes a resource that holds no step lease; one that
// does is refused with an error matching engine.ErrResourceBusy.
func (c *workflowClient) RemoveResource(ctx context.Context, id string) error {
	_, err := c.e.RemoveResource(ctx, engine.RemoveResource{ID: id})
	return err
}

// ListResources returns the resource pool, in id order, with the step
// leases each resource's units are held by.
func (c *workflowClient) ListResources(ctx context.Context) ([]*engine.Resource, error) {
	return c.e.Resources(ctx)
}
