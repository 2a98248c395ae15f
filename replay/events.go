package replay

import (
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// CommandKind is the kind of a workflow command.
type CommandKind uint8

// Command kinds.
const (
	KindActivity CommandKind = 1
	KindTimer    CommandKind = 2
	KindChild    CommandKind = 3
	KindReview   CommandKind = 10 // a review task (workflow.ExecuteReview), numbered apart from the kinds added next
	KindMarker   CommandKind = 4
	// KindSignalExternal signals another workflow; KindCancelExternal asks
	// another workflow to cancel itself.
	KindSignalExternal CommandKind = 5
	KindCancelExternal CommandKind = 6
)

func (k CommandKind) String() string {
	switch k {
	case KindActivity:
		return "activity"
	case KindTimer:
		return "timer"
	case KindChild:
		return "child workflow"
	case KindReview:
		return "review task"
	case KindMarker:
		return "marker"
	case KindSignalExternal:
		return "external signal"
	case KindCancelExternal:
		return "external cancel request"
	}
	return "unknown command"
}

// CommandOptions are the SDK's options of a command, kept with it
// (Command.Options) from the workflow call that issued it to the worker that
// carries it out; replay never reads them. The SDK declares one type for
// each kind of command that has options (internal/sdkhook's Activity,
// Child, Review and External); timers and markers have none.
type CommandOptions interface {
	// CommandKind is the kind of command the options are for: Issue
	// refuses them for another.
	CommandKind() CommandKind
}

// eventRole says what a step event means for its command.
type eventRole uint8

const (
	roleRecord  eventRole = iota // the command happened (scheduled, a failed try, …)
	roleSucceed                  // the command's result: resolve with success
	roleFail                     // the command's result: resolve with failure
)

// stepEvents maps each step event type to its command kind and role: the
// events the worker writes for workflow commands (engine/events_workflow.go,
// the activity_* events of engine/step.go and the engine's timer_fired),
// and the engine's own step events (a step lease taken or timed out, a try
// that needs a person or whose resource failed, a person's answer). Those
// are records of the activity command whose step they name: replay indexes
// them with the step, so the worker reads a step's whole life from
// Records, and they never resolve the command. Only the activity_* events
// do that.
var stepEvents = map[engine.EventType]struct {
	kind CommandKind
	role eventRole
}{
	engine.EventActivityScheduled:     {KindActivity, roleRecord},
	engine.EventActivityAttemptFailed: {KindActivity, roleRecord},
	engine.EventActivityCompleted:     {KindActivity, roleSucceed},
	engine.EventActivityFailed:        {KindActivity, roleFail},
	engine.EventTimerScheduled:        {KindTimer, roleRecord},
	engine.EventTimerCanceled:         {KindTimer, roleFail},
	engine.EventTimerFired:            {KindTimer, roleSucceed},
	engine.EventChildScheduled:        {KindChild, roleRecord},
	engine.EventChildCompleted:        {KindChild, roleSucceed},
	engine.EventChildFailed:           {KindChild, roleFail},
	engine.EventReviewScheduled:       {KindReview, roleRecord},
	engine.EventReviewCompleted:       {KindReview, roleSucceed},
	engine.EventReviewFailed:          {KindReview, roleFail},
	engine.EventMarkerRecorded:        {KindMarker, roleRecord},

	engine.EventSignalExternalSent:      {KindSignalExternal, roleSucceed},
	engine.EventSignalExternalFailed:    {KindSignalExternal, roleFail},
	engine.EventCancelExternalRequested: {KindCancelExternal, roleSucceed},
	engine.EventCancelExternalFailed:    {KindCancelExternal, roleFail},

	engine.EventStepWaitingDeps:    {KindActivity, roleRecord},
	engine.EventStepLeased:         {KindActivity, roleRecord},
	engine.EventStepStarted:        {KindActivity, roleRecord},
	engine.EventStepLeaseTimeout:   {KindActivity, roleRecord},
	engine.EventStepResourceFailed: {KindActivity, roleRecord},
	engine.EventStepNeedsUser:      {KindActivity, roleRecord},
	engine.EventStepAnswered:       {KindActivity, roleRecord},

	// An operator's commands on an activity (pause, unpause, reset, new
	// options) are records of its step too; workflow code did not make
	// them, so they neither resolve it nor decide whether code replays.
	engine.EventActivityPaused:         {KindActivity, roleRecord},
	engine.EventActivityUnpaused:       {KindActivity, roleRecord},
	engine.EventActivityReset:          {KindActivity, roleRecord},
	engine.EventActivityOptionsUpdated: {KindActivity, roleRecord},
}

// RetryTimerPrefix starts the ids of the durable timers a worker sets to
// wait out an activity's retry delay. They belong to no workflow command,
// like every timer whose id is not a step number.
const RetryTimerPrefix = "retry:"

// stepOf returns the step an event belongs to, or "" for events of no step.
func stepOf(ev *engine.Event) string {
	if ev.Type == engine.EventTimerFired {
		// Workflow timers are named by their step, a number; the worker's
		// own timers (retry delays, the execution deadline) are not.
		if ev.Name == "" || strings.TrimLeft(ev.Name, "0123456789") != "" {
			return ""
		}
		return ev.Name
	}
	if _, ok := stepEvents[ev.Type]; ok {
		return ev.Step
	}
	return ""
}
