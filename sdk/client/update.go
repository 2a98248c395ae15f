package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// WorkflowUpdateStage is how far UpdateWorkflow waits.
type WorkflowUpdateStage int

// The stages, as Temporal's.
const (
	// WorkflowUpdateStageUnspecified waits for Completed.
	WorkflowUpdateStageUnspecified WorkflowUpdateStage = iota
	// WorkflowUpdateStageAdmitted returns once the request is in the
	// workflow's history.
	WorkflowUpdateStageAdmitted
	// WorkflowUpdateStageAccepted returns once the validator accepted it
	// (or with the rejection).
	WorkflowUpdateStageAccepted
	// WorkflowUpdateStageCompleted returns once the handler returned.
	WorkflowUpdateStageCompleted
)

// UpdateWorkflowOptions configure UpdateWorkflow.
type UpdateWorkflowOptions struct {
	// UpdateID identifies the update; "" gives a random one. Sending the
	// same id twice runs the handler once.
	UpdateID   string
	WorkflowID string
	// RunID is the run ("" for the latest).
	RunID        string
	UpdateName   string
	Args         []any
	WaitForStage WorkflowUpdateStage
}

// WorkflowUpdateHandle is an update sent to a workflow.
type WorkflowUpdateHandle interface {
	WorkflowID() string
	RunID() string
	UpdateID() string
	// Get waits for the handler to return and decodes its result into
	// valuePtr (nil to ignore it), or returns its error or the rejection.
	Get(ctx context.Context, valuePtr any) error
}

type updateHandle struct {
	c          *workflowClient
	workflowID string
	job        engine.JobID
	id         string
	// name is the update's name, which a rejection carries; a handle made
	// by GetWorkflowUpdateHandle learns it from the request in the history.
	name string
}

func (h *updateHandle) WorkflowID() string { return h.workflowID }
func (h *updateHandle) RunID() string      { return strconv.FormatUint(uint64(h.job), 10) }
func (h *updateHandle) UpdateID() string   { return h.id }

// UpdateWorkflow sends an update to a run and waits for WaitForStage
// (Completed when unspecified). As in Temporal, a worker with the
// workflow's code first validates the update (on a replay of the run's
// history, asked as queries are): a rejection (by the validator, a panic
// in it, an unknown update, arguments that do not decode) is returned at
// once and leaves nothing in the history. An accepted update is then sent
// as a signal, durable from then on, which the workflow validates again on
// its live state when it takes it: a rejection then, when the state
// changed in between, is recorded and returned at the Accepted or
// Completed stage. With no worker to validate it, UpdateWorkflow waits
// until ctx ends (its deadline: it fails with context.DeadlineExceeded).
func (c *workflowClient) UpdateWorkflow(ctx context.Context, o UpdateWorkflowOptions) (WorkflowUpdateHandle, error) {
	if o.WorkflowID == "" || o.UpdateName == "" {
		return nil, fmt.Errorf("%w: UpdateWorkflowOptions needs WorkflowID and UpdateName", engine.ErrInvalidCommand)
	}
	if o.UpdateID == "" {
		var b [12]byte
		_, _ = rand.Read(b[:]) // crypto/rand does not fail
		o.UpdateID = hex.EncodeToString(b[:])
	}
	args, err := c.encode(o.Args...)
	if err != nil {
		return nil, fmt.Errorf("client: update arguments: %w", err)
	}
	payload, err := json.Marshal(workflow.UpdateRequest{ID: o.UpdateID, Name: o.UpdateName, Args: args})
	if err != nil {
		return nil, err
	}
	j, err := c.e.Describe(ctx, target(o.WorkflowID, o.RunID))
	if err != nil {
		return nil, err
	}
	if j.Status.Terminal() {
		return nil, fmt.Errorf("%w: update %s of workflow %q: run %d is %s", engine.ErrJobClosed, o.UpdateName, j.WorkflowID, j.ID, j.Status)
	}
	decision, err := c.validateUpdate(ctx, j, payload)
	if err != nil {
		return nil, fmt.Errorf("client: update %s of workflow %q: validation: %w", o.UpdateName, j.WorkflowID, err)
	}
	if decision.Failure != nil {
		return nil, rejected(o.UpdateName, decision.Failure)
	}
	sig := engine.Signal{Target: target(o.WorkflowID, o.RunID), Name: workflow.UpdateSignalName, Payload: payload}
	sig.RequestID = "update/" + o.WorkflowID + "/" + o.UpdateID
	res, err := c.e.Signal(ctx, sig)
	if err != nil {
		return nil, err
	}
	h := &updateHandle{c: c, workflowID: o.WorkflowID, job: res.Job, id: o.UpdateID, name: o.UpdateName}
	switch o.WaitForStage {
	case WorkflowUpdateStageAdmitted:
		return h, nil
	case WorkflowUpdateStageAccepted:
		decision, err := h.wait(ctx, "decision")
		if err != nil {
			return nil, err
		}
		if decision.Failure != nil {
			return nil, rejected(o.UpdateName, decision.Failure)
		}
		return h, nil
	}
	if err := h.Get(ctx, nil); err != nil && isRejection(err) {
		return nil, err
	}
	return h, nil
}

// validateUpdate asks a worker of run j to validate the update request
// payload (workflow.ValidateUpdateQuery) and returns its decision.
// As in Temporal, an update with no worker to take it waits for one until
// ctx ends: a query's own wait, when ctx has no deadline, is only one
// round of it.
func (c *workflowClient) validateUpdate(ctx context.Context, j *engine.Job, payload []byte) (*workflow.UpdateOutcome, error) {
	var v converter.EncodedValue
	var err error
	for {
		if c.opts.Querier != nil {
			v, err = c.opts.Querier.QueryWorkflow(ctx, j.WorkflowID, strconv.FormatUint(uint64(j.ID), 10), workflow.ValidateUpdateQuery, json.RawMessage(payload))
		} else {
			v, err = c.askWorkers(ctx, j, workflow.ValidateUpdateQuery, json.RawMessage(payload))
		}
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			break
		}
	}
	if errors.Is(err, workflow.ErrUnknownQuery) {
		// A worker of an earlier version, which validates updates only when
		// the workflow takes them: admit the update, and read its decision
		// from the history.
		return &workflow.UpdateOutcome{}, nil
	}
	if err != nil {
		return nil, err
	}
	var o workflow.UpdateOutcome
	if err := v.Get(&o); err != nil {
		return nil, fmt.Errorf("the worker's decision: %w", err)
	}
	return &o, nil
}

// UpdateRejectedError is an update the workflow's validator refused (or
// whose arguments did not decode). Unwrap gives the validator's error.
type UpdateRejectedError struct {
	UpdateName string
	Cause      error
}

func (e *UpdateRejectedError) Error() string {
	return fmt.Sprintf("update %s rejected: %v", e.UpdateName, e.Cause)
}
func (e *UpdateRejectedError) Unwrap() error { return e.Cause }

func rejected(name string, failure []byte) error {
	return &UpdateRejectedError{UpdateName: name, Cause: sdkhook.DecodeFailure(failure)}
}

func isRejection(err error) bool {
	var r *UpdateRejectedError
	return errors.As(err, &r)
}

func (h *updateHandle) Get(ctx context.Context, valuePtr any) error {
	decision, err := h.wait(ctx, "decision")
	if err != nil {
		return err
	}
	if decision.Failure != nil {
		return rejected(h.name, decision.Failure)
	}
	done, err := h.wait(ctx, "completed")
	if err != nil {
		return err
	}
	if done.Failure != nil {
		return sdkhook.DecodeFailure(done.Failure)
	}
	if valuePtr == nil || done.Result == nil {
		return nil
	}
	return h.c.decode(done.Result, valuePtr)
}

// wait reads the run's history until the update's marker of stage is there.
func (h *updateHandle) wait(ctx context.Context, stage string) (*workflow.UpdateOutcome, error) {
	step := "k:" + workflow.UpdateMarkerKey(h.id, stage)
	for after := uint64(0); ; {
		page, err := h.c.e.WatchHistory(ctx, h.job, after, engine.MaxPage)
		if err != nil {
			return nil, err
		}
		for _, ev := range page.Events {
			after = ev.Seq
			if h.name == "" && ev.Type == engine.EventSignalReceived && ev.Name == workflow.UpdateSignalName {
				var req workflow.UpdateRequest
				if json.Unmarshal(ev.Payload, &req) == nil && req.ID == h.id {
					h.name = req.Name // for the rejection's UpdateName
				}
			}
			if ev.Type == engine.EventMarkerRecorded && ev.Step == step {
				var o workflow.UpdateOutcome
				if err := json.Unmarshal(ev.Payload, &o); err != nil {
					return nil, fmt.Errorf("client: update %s: %s marker: %w", h.id, stage, err)
				}
				o.Failure = h.c.failureFromStored(o.Failure)
				return &o, nil
			}
			if engine.IsStatusEvent(ev.Type) && (ev.Type == engine.EventJobCompleted || ev.Type == engine.EventJobFailed ||
				ev.Type == engine.EventJobCancelled || ev.Type == engine.EventJobTerminated || ev.Type == engine.EventJobTimedOut) {
				return nil, fmt.Errorf("client: update %s: run %d ended (%s) before the update was %s", h.id, h.job, ev.Type, stage)
			}
		}
	}
}
