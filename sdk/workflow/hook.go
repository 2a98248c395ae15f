package workflow

import (
	"github.com/heddlewf/heddle/internal/replay"
	"github.com/heddlewf/heddle/internal/sdkhook"
)

// init hands the worker the plumbing that workflow code must not call.
func init() {
	sdkhook.NewEntry = func(fn any, info sdkhook.WorkflowInfo) replay.Entry {
		return newEntry(fn, Info{WorkflowID: info.WorkflowID, RunID: info.RunID,
			WorkflowType: info.WorkflowType, TaskQueue: info.TaskQueue, Attempt: info.Attempt}, info.Logger)
	}
	sdkhook.Query = runQuery
	sdkhook.EncodeFailure = encodeFailure
	sdkhook.DecodeFailure = decodeFailure
}
