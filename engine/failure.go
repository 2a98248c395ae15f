package engine

import (
	"encoding/json"
	"fmt"
)

// Failure is the failure payload the engine writes when it ends a job
// itself (a deadline passed, or an operator terminated it). It is the SDK's
// failure format, so a parent's workflow code turns it into a typed error:
//
//	{"type": "TimeoutError", "message": "...", "nonRetryable": true, "timeout_type": "WorkflowExecution"}
//	{"type": "TerminatedError", "message": "...", "nonRetryable": true}
//
// It is the payload of the job_timed_out or job_terminated event and, for a
// child or a remote-activity job, of the failed effect recorded for its
// parent's step. NonRetryable is always true: the end was decided by the
// engine, and a retry policy must not run the work again.
type Failure struct {
	Type         string `json:"type"`
	Message      string `json:"message"`
	NonRetryable bool   `json:"nonRetryable"`
	// TimeoutType says which deadline passed; set for TimeoutError only.
	TimeoutType TimeoutType `json:"timeout_type,omitempty"`
}

// The failure types the engine writes.
const (
	FailureTimeout    = "TimeoutError"
	FailureTerminated = "TerminatedError"
)

// The failure types of a signal or cancel request a run sent on behalf of
// a step (SenderStep): the target is unknown or closed, as Temporal's
// UnknownExternalWorkflowExecutionError; or the target refused the command
// (a malformed one), which no retry can mend.
const (
	FailureUnknownExternal = "UnknownExternalWorkflowExecutionError"
	FailureInvalidExternal = "InvalidExternalCommand"
)

// EncodeExternalFailure returns the payload of a failed signal or cancel
// request of type typ (FailureUnknownExternal or FailureInvalidExternal).
func EncodeExternalFailure(typ, message string) []byte {
	return encodeFailure(Failure{Type: typ, Message: message, NonRetryable: true})
}

// FailureReviewCanceled is the failure type of a task that ended without
// SUCCESS, as the effect of its parent's step.
const FailureReviewCanceled = "TaskCanceledError"

// TimeoutType names the deadline of a TimeoutError, as Temporal does.
type TimeoutType string

// Timeout types. The engine writes WorkflowExecution, WorkflowRun,
// ScheduleToStart and ScheduleToClose (an activity-task job's execution
// deadline); StartToClose and Heartbeat are for the worker, which enforces
// those itself, to use in the same format.
const (
	TimeoutScheduleToStart   TimeoutType = "ScheduleToStart"
	TimeoutScheduleToClose   TimeoutType = "ScheduleToClose"
	TimeoutStartToClose      TimeoutType = "StartToClose"
	TimeoutHeartbeat         TimeoutType = "Heartbeat"
	TimeoutWorkflowExecution TimeoutType = "WorkflowExecution"
	TimeoutWorkflowRun       TimeoutType = "WorkflowRun"
)

// ActivityTypePrefix starts the Type of a job that runs one activity on its
// queue's workers for a workflow on another (an activity task). Its
// execution deadline is the activity's schedule-to-close timeout.
const ActivityTypePrefix = "@activity:"

// EncodeTimeoutFailure returns the payload of a TimeoutError of type tt.
func EncodeTimeoutFailure(tt TimeoutType, message string) []byte {
	return encodeFailure(Failure{Type: FailureTimeout, Message: message, NonRetryable: true, TimeoutType: tt})
}

// EncodeTerminatedFailure returns the payload of a TerminatedError; reason
// is the operator's, and may be empty.
func EncodeTerminatedFailure(reason string) []byte {
	msg := "terminated"
	if reason != "" {
		msg = "terminated: " + reason
	}
	return encodeFailure(Failure{Type: FailureTerminated, Message: msg, NonRetryable: true})
}

func encodeFailure(f Failure) []byte {
	b, err := json.Marshal(f)
	if err != nil {
		panic(fmt.Sprintf("engine: encoding a failure: %v", err)) // strings and a bool always encode
	}
	return b
}

// DecodeFailure decodes a failure payload; malformed bytes give an error
// matching ErrCorrupt. Unknown fields are ignored, so it reads the SDK's
// failures as well as the engine's.
func DecodeFailure(b []byte) (*Failure, error) {
	f := new(Failure)
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%w: failure payload: %v", ErrCorrupt, err)
	}
	return f, nil
}
