package workflow

import (
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
)

// init hands the worker the plumbing that workflow code must not call.
func init() {
	sdkhook.NewEntry = func(fn any, info sdkhook.WorkflowInfo) replay.Entry {
		return newEntryWith(fn, infoOf(info), info.Logger, info.Interceptors)
	}
	sdkhook.Query = runQuery
	sdkhook.ValidateUpdate = validateUpdate
	sdkhook.SignalsRead = signalsRead
}

// infoOf turns what the worker knows of a run into the Info workflow code
// sees.
func infoOf(w sdkhook.WorkflowInfo) Info {
	i := Info{
		WorkflowExecution: Execution{ID: w.WorkflowID, RunID: w.RunID},
		WorkflowType:      Type{Name: w.WorkflowType},
		TaskQueueName:     w.TaskQueue,
		Attempt:           max(w.Attempt, 1),
		CronSchedule:      w.CronSchedule,
		Namespace:         "default",
		WorkflowID:        w.WorkflowID,
		RunID:             w.RunID,
		TaskQueue:         w.TaskQueue,
	}
	if w.ParentRunID != "" {
		i.ParentWorkflowExecution = &Execution{ID: w.ParentWorkflowID, RunID: w.ParentRunID}
	}
	return i
}
