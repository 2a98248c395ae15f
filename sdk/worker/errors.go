package worker

import "errors"

// Sentinel errors of the worker, matched with errors.Is. They reach
// Options.OnError; none of them is a workflow's failure.
var (
	// ErrLeaseLapsed: no renewal of a job's lease succeeded for so long
	// that the lease may have run out; the worker stopped the job's turn
	// (its writes would be refused as stale) and leaves the job to
	// whichever worker claims it next.
	ErrLeaseLapsed = errors.New("worker: lease lapsed")
)
