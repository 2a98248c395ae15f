package machine

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// applyFunc applies one command of the kind its applyTable entry is for.
type applyFunc func(a *applier, cmd engine.Command) (engine.Result, error)

// on adapts an applier method taking one command type to an applyFunc. A
// command whose Kind names an entry but whose type is not the entry's (a
// type outside this package) is refused as unknown, as Apply always did.
func on[C engine.Command](f func(*applier, C) (engine.Result, error)) applyFunc {
	return func(a *applier, cmd engine.Command) (engine.Result, error) {
		c, ok := cmd.(C)
		if !ok {
			return nil, fmt.Errorf("%w: %T", engine.ErrUnknownCommand, cmd)
		}
		return f(a, c)
	}
}

// applyTable is the one table of what Apply does with each command kind,
// indexed by kind; it has an entry for every kind of the command table
// (TestApplyTableCoversKinds).
var applyTable = [...]applyFunc{
	engine.KindCreateJob:       on((*applier).create),
	engine.KindClaim:           on((*applier).claim),
	engine.KindHeartbeat:       on((*applier).heartbeat),
	engine.KindAppendEvents:    on((*applier).appendEvents),
	engine.KindCommitStep:      on((*applier).commitStep),
	engine.KindWait:            on((*applier).wait),
	engine.KindSignal:          on((*applier).signal),
	engine.KindFireTimers:      on((*applier).fireTimers),
	engine.KindReclaim:         on((*applier).reclaim),
	engine.KindReleaseDelayed:  on((*applier).releaseDelayed),
	engine.KindCancel:          on((*applier).cancel),
	engine.KindActivate:        on((*applier).activate),
	engine.KindSuspend:         on((*applier).suspend),
	engine.KindResume:          on((*applier).resume),
	engine.KindComplete:        on((*applier).complete),
	engine.KindFail:            on((*applier).fail),
	engine.KindRequeue:         on((*applier).requeue),
	engine.KindRequestCancel:   on((*applier).requestCancel),
	engine.KindContinueAsNew:   on((*applier).continueAsNew),
	engine.KindTerminate:       on((*applier).terminate),
	engine.KindExpireDeadlines: on((*applier).expireDeadlines),

	engine.KindCreateSchedule:  on((*applier).createSchedule),
	engine.KindUpdateSchedule:  on((*applier).updateSchedule),
	engine.KindPauseSchedule:   on((*applier).pauseSchedule),
	engine.KindTriggerSchedule: on((*applier).triggerSchedule),
	engine.KindDeleteSchedule:  on((*applier).deleteSchedule),
	engine.KindFireSchedules:   on((*applier).fireSchedules),

	engine.KindCompleteAsync: on((*applier).completeAsync),

	engine.KindBackfillSchedule: on((*applier).backfillSchedule),

	engine.KindLeaseStep:      on((*applier).leaseStep),
	engine.KindStepHeartbeat:  on((*applier).stepHeartbeat),
	engine.KindEndStepAttempt: on((*applier).endStepAttempt),
	engine.KindAnswerStep:     on((*applier).answerStep),
	engine.KindExpireSteps:    on((*applier).expireSteps),
	engine.KindAddResource:    on((*applier).addResource),
	engine.KindDrainResource:  on((*applier).drainResource),
	engine.KindRemoveResource: on((*applier).removeResource),

	engine.KindCreateReview:    on((*applier).createReview),
	engine.KindReviewCommand:   on((*applier).reviewCommand),
	engine.KindClaimReviews:    on((*applier).claimReviews),
	engine.KindReviewReport:    on((*applier).reviewReport),
	engine.KindReviewHeartbeat: on((*applier).reviewHeartbeat),
	engine.KindReclaimReviews:  on((*applier).reclaimReviews),

	engine.KindConfigureJob: on((*applier).configureJob),

	engine.KindResetJob: on((*applier).resetJob),

	engine.KindPause:                 on((*applier).pause),
	engine.KindUnpause:               on((*applier).unpause),
	engine.KindPauseActivity:         on((*applier).pauseActivity),
	engine.KindUnpauseActivity:       on((*applier).unpauseActivity),
	engine.KindResetActivity:         on((*applier).resetActivity),
	engine.KindUpdateActivityOptions: on((*applier).updateActivityOptions),

	engine.KindStartBatch:   on((*applier).startBatch),
	engine.KindAdvanceBatch: on((*applier).advanceBatch),
	engine.KindStopBatch:    on((*applier).stopBatch),

	engine.KindDeliver:     on((*applier).deliver),
	engine.KindAckDelivery: on((*applier).ackDelivery),
	engine.KindChildClosed: on((*applier).childClosed),
	engine.KindCloseChild:  on((*applier).closeChildOf),

	engine.KindScheduleRunClosed: on((*applier).scheduleRunClosedHere),
	engine.KindAskUnit:           on((*applier).askUnitHere),
	engine.KindUnitGranted:       on((*applier).unitGrantedHere),
	engine.KindReleaseUnit:       on((*applier).releaseUnitHere),
	engine.KindReviewClosed:      on((*applier).reviewClosed),
}
