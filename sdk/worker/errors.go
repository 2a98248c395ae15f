package worker

import "errors"

// Sentinel errors of the worker, matched with errors.Is. ErrLeaseLapsed
// reaches Options.OnError; the others are the WorkflowReplayer's. None of
// them is a workflow's failure.
var (
	// ErrLeaseLapsed: no renewal of a job's lease succeeded for so long
	// that the lease may have run out; the worker stopped the job's turn
	// (its writes would be refused as stale) and leaves the job to
	// whichever worker claims it next.
	ErrLeaseLapsed = errors.New("worker: lease lapsed")
	// ErrReplayResultDiffers: the history ends with the run's completion
	// but the replayed code did not end the run the same way.
	ErrReplayResultDiffers = errors.New("worker: replay: the code does not end the run as the history does")
	// ErrNoReplayResult: GetWorkflowResult was asked for a workflow no
	// completed history was replayed for.
	ErrNoReplayResult = errors.New("worker: replay: workflow result not found")
)
