package engine

import "fmt"

// applyFunc applies one command of the kind its applyTable entry is for.
type applyFunc func(a *applier, cmd Command) (Result, error)

// on adapts an applier method taking one command type to an applyFunc. A
// command whose Kind names an entry but whose type is not the entry's (a
// type outside this package) is refused as unknown, as Apply always did.
func on[C Command](f func(*applier, C) (Result, error)) applyFunc {
	return func(a *applier, cmd Command) (Result, error) {
		c, ok := cmd.(C)
		if !ok {
			return nil, fmt.Errorf("%w: %T", ErrUnknownCommand, cmd)
		}
		return f(a, c)
	}
}

// applyTable is the one table of what Apply does with each command kind,
// indexed by kind; it has an entry for every kind of the command table
// (TestApplyTableCoversKinds).
var applyTable = [...]applyFunc{
	KindCreateJob:       on((*applier).create),
	KindClaim:           on((*applier).claim),
	KindHeartbeat:       on((*applier).heartbeat),
	KindAppendEvents:    on((*applier).appendEvents),
	KindCommitStep:      on((*applier).commitStep),
	KindWait:            on((*applier).wait),
	KindSignal:          on((*applier).signal),
	KindFireTimers:      on((*applier).fireTimers),
	KindReclaim:         on((*applier).reclaim),
	KindReleaseDelayed:  on((*applier).releaseDelayed),
	KindCancel:          on((*applier).cancel),
	KindActivate:        on((*applier).activate),
	KindSuspend:         on((*applier).suspend),
	KindResume:          on((*applier).resume),
	KindComplete:        on((*applier).complete),
	KindFail:            on((*applier).fail),
	KindRequeue:         on((*applier).requeue),
	KindRequestCancel:   on((*applier).requestCancel),
	KindContinueAsNew:   on((*applier).continueAsNew),
	KindTerminate:       on((*applier).terminate),
	KindExpireDeadlines: on((*applier).expireDeadlines),

	KindCreateSchedule:  on((*applier).createSchedule),
	KindUpdateSchedule:  on((*applier).updateSchedule),
	KindPauseSchedule:   on((*applier).pauseSchedule),
	KindTriggerSchedule: on((*applier).triggerSchedule),
	KindDeleteSchedule:  on((*applier).deleteSchedule),
	KindFireSchedules:   on((*applier).fireSchedules),

	KindCompleteAsync: on((*applier).completeAsync),

	KindBackfillSchedule: on((*applier).backfillSchedule),

	KindLeaseStep:      on((*applier).leaseStep),
	KindStepHeartbeat:  on((*applier).stepHeartbeat),
	KindEndStepAttempt: on((*applier).endStepAttempt),
	KindAnswerStep:     on((*applier).answerStep),
	KindExpireSteps:    on((*applier).expireSteps),
	KindAddResource:    on((*applier).addResource),
	KindDrainResource:  on((*applier).drainResource),
	KindRemoveResource: on((*applier).removeResource),

	KindCreateTask:    on((*applier).createTask),
	KindTaskCommand:   on((*applier).taskCommand),
	KindClaimTasks:    on((*applier).claimTasks),
	KindTaskReport:    on((*applier).taskReport),
	KindTaskHeartbeat: on((*applier).taskHeartbeat),
	KindReclaimTasks:  on((*applier).reclaimTasks),

	KindConfigureJob: on((*applier).configureJob),
}
