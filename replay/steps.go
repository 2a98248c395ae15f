package replay

import "github.com/heddlewf/heddle/engine"

// The engine's own step events (a step lease taken or timed out, a try
// that needs a person or whose resource failed, a person's answer) are
// records of the activity command whose step they name: replay indexes
// them with the step, so the worker reads a step's whole life from
// Records, and they never resolve the command. Only the activity_* events
// do that.
func init() {
	for _, t := range []engine.EventType{engine.EventStepWaitingDeps, engine.EventStepLeased, engine.EventStepStarted,
		engine.EventStepLeaseTimeout, engine.EventStepResourceFailed, engine.EventStepNeedsUser, engine.EventStepAnswered} {
		stepEvents[t] = struct {
			kind CommandKind
			role eventRole
		}{KindActivity, roleRecord}
	}
}
