package workflow

import (
	"time"

	"github.com/heddlewf/heddle/sdk/temporal"
)

// Execution names one run of a workflow: its workflow id and run id
// (heddle's run ids are decimal job ids). It is Temporal's
// workflow.Execution.
type Execution = temporal.WorkflowExecution

// Type names a workflow type, as Temporal's workflow.Type does.
type Type = temporal.WorkflowType

// The history a run reaches before GetContinueAsNewSuggested says yes:
// Temporal's server defaults. A heddle history holds fewer events for the
// same work (one event per activity, none per workflow task), so the
// suggestion comes later in a run's life than in Temporal.
const (
	ContinueAsNewSuggestedEvents = 4096
	ContinueAsNewSuggestedBytes  = 4 << 20
)

// Info describes the running workflow. The caller must not change it.
type Info struct {
	// WorkflowExecution is this run: its workflow id and run id.
	WorkflowExecution Execution
	// WorkflowType names the workflow function's registered type.
	WorkflowType Type
	// TaskQueueName is the queue whose workers run the workflow.
	TaskQueueName string
	// Attempt numbers the runs of a workflow retry policy from 1, as in
	// Temporal (a run that is not a retry is attempt 1).
	Attempt int32
	// ParentWorkflowExecution is the parent of a child workflow, nil for a
	// workflow started by a client. Its ID is "" when the parent's record
	// is gone.
	ParentWorkflowExecution *Execution
	// WorkflowStartTime is the workflow time the run was created at.
	WorkflowStartTime time.Time
	// Namespace is always "default": heddle has no namespaces.
	Namespace string
	// CronSchedule is the cron line the run was started with
	// (StartWorkflowOptions.CronSchedule or a child's), the same for every
	// run of the chain; "" for a run that is not a cron workflow's.
	CronSchedule string

	// WorkflowID, RunID and TaskQueue are the same as
	// WorkflowExecution.ID, WorkflowExecution.RunID and TaskQueueName:
	// heddle's earlier names, kept.
	WorkflowID string
	RunID      string
	TaskQueue  string

	// history reports the length and size of the history applied so far.
	history func() (events uint64, bytes int64)
}

// GetCurrentHistoryLength returns the number of events in the run's
// history as far as the workflow has seen it. It is the same on every
// replay at the same point of the code.
func (i *Info) GetCurrentHistoryLength() int {
	if i.history == nil {
		return 0
	}
	n, _ := i.history()
	return int(n)
}

// GetCurrentHistorySize returns the bytes of payload in the run's history
// as far as the workflow has seen it.
func (i *Info) GetCurrentHistorySize() int {
	if i.history == nil {
		return 0
	}
	_, b := i.history()
	return int(b)
}

// GetContinueAsNewSuggested reports whether the history has grown past
// ContinueAsNewSuggestedEvents events or ContinueAsNewSuggestedBytes bytes,
// the point where Temporal's server suggests continuing as new: a long
// history makes every cache miss replay more.
func (i *Info) GetContinueAsNewSuggested() bool {
	if i.history == nil {
		return false
	}
	n, b := i.history()
	return n >= ContinueAsNewSuggestedEvents || b >= ContinueAsNewSuggestedBytes
}

// GetInfo returns the running workflow's Info. The caller must not change
// it.
func GetInfo(ctx Context) *Info {
	if o := outboundOf(ctx); o != nil {
		return o.GetInfo(ctx)
	}
	return &stateOf(ctx).info
}
