package converter

import (
	"encoding/json"
	"fmt"
)

// Failure is an error as heddle stores it in a history: one node per error
// of the chain, Cause being the error it wraps. It plays the part of
// Temporal's failure proto (go.temporal.io/api/failure/v1.Failure), with
// the same Message, Source, StackTrace, EncodedAttributes and Cause; where
// Temporal holds the kind of failure in a one-of of FailureInfo messages,
// heddle has Kind and the flat fields below it. The JSON is the stored
// format, which the engine reads too (Type, Message, NonRetryable and
// TimeoutType decide retries), so a FailureConverter must keep those
// meaningful.
type Failure struct {
	Message string `json:"message"`
	// Source names the SDK that wrote the failure ("" for heddle's own).
	Source string `json:"source,omitempty"`
	// StackTrace is a panic's stack.
	StackTrace string `json:"stack,omitempty"`
	// EncodedAttributes, when set, holds Message and StackTrace encoded by
	// a data converter (EncodeCommonFailureAttributes), which then read
	// "Encoded failure" and "".
	EncodedAttributes *Payload `json:"encodedAttributes,omitempty"`
	Cause             *Failure `json:"cause,omitempty"`

	// Kind is the kind of error the node records: "application",
	// "canceled", "timeout", "terminated", "panic", "activity", "child",
	// "alreadyStarted", "unknownExternal" or "workflowExecution". A node
	// without one (the engine's own) is typed by Type.
	Kind string `json:"kind,omitempty"`
	// Type is an application error's type, or the name of the error type
	// (TimeoutError, CanceledError, …) for the others.
	Type         string `json:"type"`
	NonRetryable bool   `json:"nonRetryable"`
	// TimeoutType says which deadline a timeout's was ("StartToClose", …).
	TimeoutType string `json:"timeout_type,omitempty"`
	// Details are the error's details (an application error's, a
	// cancellation's, a timeout's last heartbeat details): a value list as
	// Encode (or a data converter, EncodeData) writes it.
	Details          json.RawMessage `json:"details,omitempty"`
	Category         int             `json:"category,omitempty"`
	NextRetryDelayMS int64           `json:"nextRetryDelayMS,omitempty"`
	// ActivityType and Step name the activity of an activity error; Step
	// with WorkflowID, RunID and WorkflowType name the child of a child
	// workflow error, and the run of a workflow execution error.
	ActivityType string `json:"activityType,omitempty"`
	Step         string `json:"step,omitempty"`
	WorkflowID   string `json:"workflowID,omitempty"`
	RunID        string `json:"runID,omitempty"`
	WorkflowType string `json:"workflowType,omitempty"`
}

// FailureConverter turns errors into the failures a history stores and
// back, as Temporal's converter.FailureConverter, over heddle's Failure.
// It is set on client.Options and used by the client and by every worker
// made from it, where they meet the engine; workflow and activity code see
// the errors it returns. Implementations must be deterministic and safe
// for concurrent use; a nil error gives a nil failure and back.
type FailureConverter interface {
	ErrorToFailure(err error) *Failure
	FailureToError(failure *Failure) error
}

// EncodedFailureMessage is what an encoded failure's Message reads, as in
// Temporal.
const EncodedFailureMessage = "Encoded failure"

// encodedFailure is the value EncodedAttributes holds, with Temporal's
// field names, so the payload reads as Temporal's does.
type encodedFailure struct {
	Message    string `json:"message"`
	StackTrace string `json:"stack_trace"`
}

// EncodeCommonFailureAttributes moves failure's Message and StackTrace
// into EncodedAttributes, a payload of dc (whose codecs may encrypt it),
// leaving "Encoded failure" and "" in their place, as Temporal's. The
// causes are left to the caller, which converts each node.
func EncodeCommonFailureAttributes(dc DataConverter, failure *Failure) error {
	if dc == nil {
		dc = defaultDataConverter
	}
	p, err := dc.ToPayload(encodedFailure{Message: failure.Message, StackTrace: failure.StackTrace})
	if err != nil {
		return fmt.Errorf("converter: encode the failure's message: %w", err)
	}
	failure.EncodedAttributes = p
	failure.Message, failure.StackTrace = EncodedFailureMessage, ""
	return nil
}

// DecodeCommonFailureAttributes puts back the Message and StackTrace that
// failure's EncodedAttributes hold, when dc can read them; otherwise the
// failure is left as it is (its message reading "Encoded failure"), as
// Temporal's.
func DecodeCommonFailureAttributes(dc DataConverter, failure *Failure) {
	if failure.EncodedAttributes == nil {
		return
	}
	if dc == nil {
		dc = defaultDataConverter
	}
	var ef encodedFailure
	if dc.FromPayload(failure.EncodedAttributes, &ef) == nil {
		failure.Message, failure.StackTrace = ef.Message, ef.StackTrace
	}
}
