package engine

// The history events the SDK's worker writes for the commands of workflow
// code, which package replay matches against the code on every replay. The
// engine stores them as the worker appends them and acts on none of them.
// The other events of workflow commands are declared with the engine's
// rules for them: the activity_* events with the step events (step.go), and
// EventTimerFired and EventCancelRequested with the job's (status.go).
//
// Each carries the command's step id in Event.Step and the command's name
// (child workflow type, marker name, signal name) in Event.Name. The
// strings are stored: they never change.
const (
	// EventTimerScheduled: workflow code started a durable timer
	// (workflow.NewTimer, Sleep); its firing is EventTimerFired.
	EventTimerScheduled EventType = "timer_scheduled"
	// EventTimerCanceled: the code cancelled the timer before it fired.
	EventTimerCanceled EventType = "timer_canceled"

	// EventChildScheduled: the child workflow's job was created; the
	// payload names the child's workflow id and run id.
	EventChildScheduled EventType = "child_scheduled"
	// EventChildCompleted: the child completed; the payload is its result.
	EventChildCompleted EventType = "child_completed"
	// EventChildFailed: the child ended otherwise; the payload is the
	// failure.
	EventChildFailed EventType = "child_failed"

	// EventReviewScheduled: workflow code created a review task
	// (workflow.ExecuteReview). The stored word is "task", as in the SDK.
	EventReviewScheduled EventType = "task_scheduled"
	// EventReviewCompleted: the review task's output was approved
	// (SUCCESS); the payload is the output.
	EventReviewCompleted EventType = "task_completed"
	// EventReviewFailed: the review task ended CANCELED.
	EventReviewFailed EventType = "task_failed"

	// EventMarkerRecorded: a value the code computed once and sees the same
	// on every replay (a side effect, a version, a local activity's
	// outcome, an update's decision).
	EventMarkerRecorded EventType = "marker_recorded"

	// EventSignalExternalSent and EventSignalExternalFailed: a signal the
	// workflow sent to another workflow was delivered, or failed (the
	// target is unknown or closed).
	EventSignalExternalSent   EventType = "signal_external_sent"
	EventSignalExternalFailed EventType = "signal_external_failed"
	// EventCancelExternalRequested and EventCancelExternalFailed: a cancel
	// request the workflow made of another workflow was delivered, or
	// failed.
	EventCancelExternalRequested EventType = "cancel_external_requested"
	EventCancelExternalFailed    EventType = "cancel_external_failed"
)
