package replay

// LastCompletionResult is the result of the last completed run of the
// execution's cron chain, as its job_created recorded it; nil when there is
// none (not a cron run, or no run completed yet).
func (x *Execution) LastCompletionResult() []byte { return x.lastResult }
