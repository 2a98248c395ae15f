package workflow

import (
	"errors"

	"github.com/heddlewf/heddle/sdk/converter"
)

// ErrNoData is what GetLastCompletionResult returns when there is no
// result to give (Temporal's temporal.ErrNoData).
var ErrNoData = errors.New("workflow: no data available")

// lastResulter is the part of the execution that holds a cron run's last
// completion result.
type lastResulter interface{ LastCompletionResult() []byte }

func lastCompletionResult(ctx Context) []byte {
	if lr, ok := envOf(ctx).(lastResulter); ok && lr.LastCompletionResult() != nil {
		return lr.LastCompletionResult()
	}
	if te := testEnvOf(ctx); te != nil {
		// A test's stand-in for an earlier run (SetLastCompletionResult).
		if b, ok := te.LastCompletionResult(stateOf(ctx).info.WorkflowExecution.ID); ok {
			return b
		}
	}
	return nil
}

// HasLastCompletionResult reports whether a run of a cron workflow has the
// result of an earlier run of its chain that completed (the first run, and
// the runs before any completed, have none). It is recorded in the run's
// history, so a replay sees the same.
func HasLastCompletionResult(ctx Context) bool {
	if o := outboundOf(ctx); o != nil {
		return o.HasLastCompletionResult(ctx)
	}
	return lastCompletionResult(ctx) != nil
}

// GetLastCompletionResult decodes the result of the last completed run of a
// cron chain into valuePtrs (one for a workflow that returned a value), or
// returns ErrNoData when there is none.
func GetLastCompletionResult(ctx Context, valuePtrs ...any) error {
	if o := outboundOf(ctx); o != nil {
		return o.GetLastCompletionResult(ctx, valuePtrs...)
	}
	return getLastCompletionResult(ctx, valuePtrs...)
}

func getLastCompletionResult(ctx Context, valuePtrs ...any) error {
	b := lastCompletionResult(ctx)
	if b == nil {
		return ErrNoData
	}
	return converter.Decode(b, valuePtrs...)
}
