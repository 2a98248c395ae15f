package workflow

import (
	"time"

	"github.com/heddlewf/heddle/replay"
)

// execEnv is what the primitives need from the running execution. It is
// implemented by the replay execution; it is not for workflow code.
type execEnv interface {
	// Dispatcher runs the execution's coroutines; every blocking primitive
	// waits through its Block.
	Dispatcher() *replay.Dispatcher
	// Now is the workflow's clock: the time recorded in history for the
	// current workflow task, the same on every replay.
	Now() time.Time
	// IsReplaying reports whether the execution is re-running history
	// rather than making new decisions.
	IsReplaying() bool
}

// envKey finds the execEnv among a context's values. It is unexported so that
// only newRootContext can install one.
type envKey struct{}

// envOf returns the execEnv that ctx descends from. A context that is not a
// workflow context is a programming error that would otherwise surface as a
// confusing nil dereference later, so it panics here with the reason.
func envOf(ctx Context) execEnv {
	if ctx == nil {
		panic("workflow: nil Context; pass the Context the workflow function received")
	}
	e, ok := ctx.Value(envKey{}).(execEnv)
	if !ok {
		panic("workflow: the Context is not a workflow context; pass the Context the workflow function received")
	}
	return e
}

// Now returns the workflow's current time. It is taken from history, not
// from the machine's clock, so a replay sees the same time as the first run.
func Now(ctx Context) time.Time {
	if o := outboundOf(ctx); o != nil {
		return o.Now(ctx)
	}
	return envOf(ctx).Now()
}

// IsReplaying reports whether the workflow is re-running history. Workflow
// logic must not depend on it; it exists to suppress side effects such as
// duplicate log lines during a replay.
func IsReplaying(ctx Context) bool {
	if o := outboundOf(ctx); o != nil {
		return o.IsReplaying(ctx)
	}
	return envOf(ctx).IsReplaying()
}
