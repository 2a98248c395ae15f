package replay

import (
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// The history events the SDK writes for workflow commands. Each carries the
// command's step id in Event.Step (timer_fired, written by the engine, in
// Event.Name) and the command's name (activity type, child workflow type,
// marker name) in Event.Name, which is what replay matches against the code.
const (
	EventActivityScheduled     engine.EventType = "activity_scheduled" // sent to another queue
	EventActivityAttemptFailed engine.EventType = "activity_attempt_failed"
	EventActivityCompleted     engine.EventType = "activity_completed"
	EventActivityFailed        engine.EventType = "activity_failed"
	EventTimerScheduled        engine.EventType = "timer_scheduled"
	EventTimerCanceled         engine.EventType = "timer_canceled"
	EventChildScheduled        engine.EventType = "child_scheduled"
	EventChildCompleted        engine.EventType = "child_completed"
	EventChildFailed           engine.EventType = "child_failed"
	EventTaskScheduled         engine.EventType = "task_scheduled" // a review task (workflow.ExecuteTask) created
	EventTaskCompleted         engine.EventType = "task_completed" // its output, once approved (SUCCESS)
	EventTaskFailed            engine.EventType = "task_failed"    // it ended CANCELED
	EventMarkerRecorded        engine.EventType = "marker_recorded"
	EventCancelRequested       engine.EventType = "cancel_requested"
	// A signal the workflow sent to another workflow, and a cancel request
	// it made of one: done, or failed (the target is unknown or closed).
	EventSignalExternalSent      engine.EventType = "signal_external_sent"
	EventSignalExternalFailed    engine.EventType = "signal_external_failed"
	EventCancelExternalRequested engine.EventType = "cancel_external_requested"
	EventCancelExternalFailed    engine.EventType = "cancel_external_failed"
)

// CommandKind is the kind of a workflow command.
type CommandKind uint8

// Command kinds.
const (
	KindActivity CommandKind = 1
	KindTimer    CommandKind = 2
	KindChild    CommandKind = 3
	KindTask     CommandKind = 10 // a review task (workflow.ExecuteTask), numbered apart from the kinds added next
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
	case KindTask:
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

// eventRole says what a step event means for its command.
type eventRole uint8

const (
	roleRecord  eventRole = iota // the command happened (scheduled, a failed try, …)
	roleSucceed                  // the command's result: resolve with success
	roleFail                     // the command's result: resolve with failure
)

// stepEvents maps each step event type to its command kind and role.
var stepEvents = map[engine.EventType]struct {
	kind CommandKind
	role eventRole
}{
	EventActivityScheduled:     {KindActivity, roleRecord},
	EventActivityAttemptFailed: {KindActivity, roleRecord},
	EventActivityCompleted:     {KindActivity, roleSucceed},
	EventActivityFailed:        {KindActivity, roleFail},
	EventTimerScheduled:        {KindTimer, roleRecord},
	EventTimerCanceled:         {KindTimer, roleFail},
	engine.EventTimerFired:     {KindTimer, roleSucceed},
	EventChildScheduled:        {KindChild, roleRecord},
	EventChildCompleted:        {KindChild, roleSucceed},
	EventChildFailed:           {KindChild, roleFail},
	EventTaskScheduled:         {KindTask, roleRecord},
	EventTaskCompleted:         {KindTask, roleSucceed},
	EventTaskFailed:            {KindTask, roleFail},
	EventMarkerRecorded:        {KindMarker, roleRecord},

	EventSignalExternalSent:      {KindSignalExternal, roleSucceed},
	EventSignalExternalFailed:    {KindSignalExternal, roleFail},
	EventCancelExternalRequested: {KindCancelExternal, roleSucceed},
	EventCancelExternalFailed:    {KindCancelExternal, roleFail},
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
