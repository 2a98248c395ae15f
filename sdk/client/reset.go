package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ResetType picks a reset point by what it is: Temporal's reset types, which
// its CLI resolves to an event id and its batch reset takes as
// ResetOptions' target. heddle resolves them in the engine, in the command
// that resets, so the point cannot move between the look and the reset.
type ResetType = engine.ResetType

// Reset types.
const (
	// ResetTypeUnspecified: the request's WorkflowTaskFinishEventId names
	// the point.
	ResetTypeUnspecified = engine.ResetToEvent
	// ResetTypeFirstWorkflowTask: the run's first turn; the workflow code
	// runs from its beginning.
	ResetTypeFirstWorkflowTask = engine.ResetFirstWorkflowTask
	// ResetTypeLastWorkflowTask: the last turn the run completed (its last
	// job_waiting, or its start); the turn after it is taken again.
	ResetTypeLastWorkflowTask = engine.ResetLastWorkflowTask
)

// ResetReapplyType says which events received after the reset point the
// new run gets again (Temporal's enums.ResetReapplyType, which Temporal
// deprecates in favour of ResetReapplyExcludeTypes).
type ResetReapplyType int32

// Reapply types, with Temporal's numbers.
const (
	// ResetReapplyTypeUnspecified is ResetReapplyTypeAllEligible.
	ResetReapplyTypeUnspecified ResetReapplyType = 0
	// ResetReapplyTypeSignal reapplies the signals, not the updates.
	ResetReapplyTypeSignal ResetReapplyType = 1
	// ResetReapplyTypeNone reapplies nothing.
	ResetReapplyTypeNone ResetReapplyType = 2
	// ResetReapplyTypeAllEligible reapplies the signals and the updates.
	ResetReapplyTypeAllEligible ResetReapplyType = 3
)

// ResetReapplyExcludeType is a kind of event received after the reset
// point that the new run does not get again (Temporal's
// enums.ResetReapplyExcludeType).
type ResetReapplyExcludeType int32

// Exclude types, with Temporal's numbers (heddle has no Nexus operations,
// and does not reapply cancel requests: see docs/state-machines.md §1).
const (
	ResetReapplyExcludeTypeUnspecified ResetReapplyExcludeType = 0
	// ResetReapplyExcludeTypeSignal leaves the signals out.
	ResetReapplyExcludeTypeSignal ResetReapplyExcludeType = 1
	// ResetReapplyExcludeTypeUpdate leaves the updates out.
	ResetReapplyExcludeTypeUpdate ResetReapplyExcludeType = 2
)

// ResetWorkflowExecutionRequest is Temporal's
// workflowservice.ResetWorkflowExecutionRequest: which run to reset, to
// which point, why, and what of the events after the point to reapply.
type ResetWorkflowExecutionRequest struct {
	// Namespace is "" or DefaultNamespace: heddle has no other.
	Namespace string
	// WorkflowExecution names the run to reset: its workflow id, and its
	// run id ("" for the workflow id's latest run).
	WorkflowExecution *workflow.Execution
	// Reason is recorded on the new run's workflow_reset event and on the
	// end of the run it replaces.
	Reason string
	// WorkflowTaskFinishEventId is the reset point's event id: a turn
	// boundary of the run (its job_created, or a job_waiting). Give it or
	// ResetType, not both.
	WorkflowTaskFinishEventId int64 //nolint:revive // Temporal's (protobuf's) spelling
	// ResetType picks the point by what it is (heddle's addition; Temporal
	// has it only in batch resets' ResetOptions).
	ResetType ResetType
	// RequestId makes the reset idempotent: a retry with the same id
	// answers the first reset's run and resets nothing more. "" gives the
	// call one of its own.
	RequestId string //nolint:revive // Temporal's (protobuf's) spelling
	// ResetReapplyType and ResetReapplyExcludeTypes say what of the events
	// received after the point the new run gets again; by default the
	// signals and the updates.
	ResetReapplyType         ResetReapplyType
	ResetReapplyExcludeTypes []ResetReapplyExcludeType
}

// ResetWorkflowExecutionResponse is Temporal's
// workflowservice.ResetWorkflowExecutionResponse: the new run.
type ResetWorkflowExecutionResponse struct {
	RunId string //nolint:revive // Temporal's (protobuf's) spelling
}

// GetRunId returns RunId, as the protobuf type does.
func (r *ResetWorkflowExecutionResponse) GetRunId() string { //nolint:revive // Temporal's (protobuf's) spelling
	if r == nil {
		return ""
	}
	return r.RunId
}

// ResetWorkflowExecution resets a run to a turn boundary of its history
// (Temporal's ResetWorkflowExecution): a new run of the same workflow id
// replays the history up to the point, with the signals and updates the
// run received after it, and goes on from there; the run it replaces, if
// open, ends as Terminated. It returns the new run's id.
func (c *workflowClient) ResetWorkflowExecution(ctx context.Context, req *ResetWorkflowExecutionRequest) (*ResetWorkflowExecutionResponse, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	cmd, err := resetCommand(req)
	if err != nil {
		return nil, err
	}
	if cmd.RequestID == "" {
		var b [16]byte
		rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
		cmd.RequestID = "reset-" + hex.EncodeToString(b[:])
	}
	res, err := c.e.Reset(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return &ResetWorkflowExecutionResponse{RunId: strconv.FormatUint(uint64(res.Job), 10)}, nil
}

// resetCommand is the engine's command for req.
func resetCommand(req *ResetWorkflowExecutionRequest) (engine.ResetJob, error) {
	bad := func(field, reason string) error {
		return engine.InvalidField("ResetWorkflowExecutionRequest", field, reason)
	}
	var cmd engine.ResetJob
	switch {
	case req == nil:
		return cmd, bad("", "is nil")
	case req.Namespace != "" && req.Namespace != DefaultNamespace:
		return cmd, bad("Namespace", fmt.Sprintf("is %q: heddle has only the namespace %q", req.Namespace, DefaultNamespace))
	case req.WorkflowExecution == nil || req.WorkflowExecution.ID == "":
		return cmd, bad("WorkflowExecution", "needs the workflow id of the run to reset")
	case req.WorkflowTaskFinishEventId < 0:
		return cmd, bad("WorkflowTaskFinishEventId", fmt.Sprintf("is %d", req.WorkflowTaskFinishEventId))
	}
	cmd.Target = engine.Target{WorkflowID: req.WorkflowExecution.ID}
	if rid := req.WorkflowExecution.RunID; rid != "" {
		id, err := strconv.ParseUint(rid, 10, 64)
		if err != nil || id == 0 {
			return cmd, bad("WorkflowExecution.RunID", fmt.Sprintf("%q is not a run id (a job id, a positive number)", rid))
		}
		cmd.Job = engine.JobID(id)
	}
	cmd.RequestID, cmd.Reason = req.RequestId, req.Reason
	cmd.Type, cmd.Seq = req.ResetType, uint64(req.WorkflowTaskFinishEventId)
	switch req.ResetReapplyType {
	case ResetReapplyTypeUnspecified, ResetReapplyTypeAllEligible:
	case ResetReapplyTypeSignal:
		cmd.ExcludeUpdates = true
	case ResetReapplyTypeNone:
		cmd.ExcludeSignals, cmd.ExcludeUpdates = true, true
	default:
		return cmd, bad("ResetReapplyType", fmt.Sprintf("%d is not a reapply type", req.ResetReapplyType))
	}
	for _, x := range req.ResetReapplyExcludeTypes {
		switch x {
		case ResetReapplyExcludeTypeUnspecified:
		case ResetReapplyExcludeTypeSignal:
			cmd.ExcludeSignals = true
		case ResetReapplyExcludeTypeUpdate:
			cmd.ExcludeUpdates = true
		default:
			return cmd, bad("ResetReapplyExcludeTypes", fmt.Sprintf("%d is not an exclude type (1 signal, 2 update)", x))
		}
	}
	return cmd, nil
}
