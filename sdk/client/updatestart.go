package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/heddlewf/heddle/engine"
)

// ErrWithStartOperationUsed: a WithStartWorkflowOperation was given to a
// second UpdateWithStartWorkflow; each one starts at most one run.
var ErrWithStartOperationUsed = errors.New("client: the WithStartWorkflowOperation was already used")

// WithStartWorkflowOperation is the start half of UpdateWithStartWorkflow,
// made by NewWithStartWorkflowOperation. Get waits until the call it was
// given to has started (or found) the run, and returns that run or the
// start's error.
type WithStartWorkflowOperation interface {
	Get(ctx context.Context) (WorkflowRun, error)
}

// UpdateWithStartWorkflowOptions configure UpdateWithStartWorkflow: the
// start operation and the update (whose RunID must be empty; its
// WorkflowID, if set, must be the start's ID).
type UpdateWithStartWorkflowOptions struct {
	StartWorkflowOperation WithStartWorkflowOperation
	UpdateOptions          UpdateWorkflowOptions
}

// GetWorkflowUpdateHandleOptions name an update sent earlier: its workflow,
// run ("" for the latest) and update id.
type GetWorkflowUpdateHandleOptions struct {
	WorkflowID string
	RunID      string
	UpdateID   string
}

// withStartOperation is the one WithStartWorkflowOperation.
type withStartOperation struct {
	options  StartWorkflowOptions
	workflow any
	args     []any
	err      error // an option refused when the operation was made

	mu   sync.Mutex
	used bool
	done chan struct{} // closed once run or runErr is set
	run  WorkflowRun
	// runErr is the start's error, or why the operation was never run.
	runErr error
}

// NewWithStartWorkflowOperation returns the start operation of an
// UpdateWithStartWorkflow: options, workflow and args as ExecuteWorkflow's.
// options.ID is required, since the update must name the run.
func (c *workflowClient) NewWithStartWorkflowOperation(options StartWorkflowOptions, workflow any, args ...any) WithStartWorkflowOperation {
	op := &withStartOperation{options: options, workflow: workflow, args: args, done: make(chan struct{})}
	if options.ID == "" {
		op.err = fmt.Errorf("%w: StartWorkflowOptions.ID is required for update-with-start", engine.ErrInvalidCommand)
	}
	return op
}

func (op *withStartOperation) Get(ctx context.Context) (WorkflowRun, error) {
	select {
	case <-op.done:
		return op.run, op.runErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// claim marks the operation used; only its first caller runs it.
func (op *withStartOperation) claim() error {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.used {
		return ErrWithStartOperationUsed
	}
	op.used = true
	return nil
}

func (op *withStartOperation) finish(run WorkflowRun, err error) {
	op.run, op.runErr = run, err
	close(op.done)
}

// UpdateWithStartWorkflow starts the operation's workflow, or takes its
// open run (refused, as Temporal's conflict policy FAIL, when the start
// options set WorkflowExecutionErrorWhenAlreadyStarted), then sends it the
// update and waits for options.UpdateOptions.WaitForStage. Unlike
// Temporal's, the two are not one atomic request: a start that succeeded
// stays started when the update then fails. The update is recorded in the
// run's history before the workflow reads it, so a handler set before the
// workflow first blocks receives it, as in Temporal.
func (c *workflowClient) UpdateWithStartWorkflow(ctx context.Context, options UpdateWithStartWorkflowOptions) (WorkflowUpdateHandle, error) {
	op, ok := options.StartWorkflowOperation.(*withStartOperation)
	if !ok {
		return nil, fmt.Errorf("%w: UpdateWithStartWorkflowOptions.StartWorkflowOperation must be made by NewWithStartWorkflowOperation", engine.ErrInvalidCommand)
	}
	if op.err != nil {
		return nil, op.err
	}
	u := options.UpdateOptions
	switch {
	case u.RunID != "":
		return nil, fmt.Errorf("%w: UpdateWorkflowOptions.RunID must be empty for update-with-start: the run may not exist yet", engine.ErrInvalidCommand)
	case u.WorkflowID != "" && u.WorkflowID != op.options.ID:
		return nil, fmt.Errorf("%w: UpdateWorkflowOptions.WorkflowID %q is not the start's ID %q", engine.ErrInvalidCommand, u.WorkflowID, op.options.ID)
	}
	if err := op.claim(); err != nil {
		return nil, err
	}
	run, err := c.ExecuteWorkflow(ctx, op.options, op.workflow, op.args...)
	op.finish(run, err)
	if err != nil {
		return nil, err
	}
	u.WorkflowID, u.RunID = run.GetID(), run.GetRunID()
	return c.UpdateWorkflow(ctx, u)
}

// GetWorkflowUpdateHandle returns a handle of an update sent earlier,
// whose Get waits for its outcome. As in Temporal it does not check that
// the update exists: an unknown run is Get's error, and Get of an update
// id the run never received waits until the run ends.
func (c *workflowClient) GetWorkflowUpdateHandle(ref GetWorkflowUpdateHandleOptions) WorkflowUpdateHandle {
	return &lazyUpdateHandle{c: c, ref: ref}
}

// lazyUpdateHandle finds its run on its first Get.
type lazyUpdateHandle struct {
	c   *workflowClient
	ref GetWorkflowUpdateHandleOptions
}

func (h *lazyUpdateHandle) WorkflowID() string { return h.ref.WorkflowID }
func (h *lazyUpdateHandle) RunID() string      { return h.ref.RunID }
func (h *lazyUpdateHandle) UpdateID() string   { return h.ref.UpdateID }

func (h *lazyUpdateHandle) Get(ctx context.Context, valuePtr any) error {
	if err := h.c.check(); err != nil {
		return err
	}
	j, err := h.c.e.Describe(ctx, target(h.ref.WorkflowID, h.ref.RunID))
	if err != nil {
		return err
	}
	return (&updateHandle{c: h.c, workflowID: j.WorkflowID, job: j.ID, id: h.ref.UpdateID}).Get(ctx, valuePtr)
}
