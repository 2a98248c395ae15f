package temporalhistory

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package, matched with errors.Is.
var (
	// ErrMalformed: the input is not a Temporal JSON history (bad JSON, no
	// events, ids out of order, a missing attribute).
	ErrMalformed = errors.New("temporal history: malformed")
	// ErrUnmappable: the history holds an event heddle's model has no
	// equivalent for (search attributes, Nexus, a payload encoding other
	// than JSON, …).
	ErrUnmappable = errors.New("temporal history: event has no heddle equivalent")
)

// The stable codes of EventError, next to replay's HDL-REPLAY-11xx.
const (
	MalformedCode  = "HDL-REPLAY-1110"
	UnmappableCode = "HDL-REPLAY-1111"
)

// EventError names the Temporal event a history could not be read at. It
// wraps ErrMalformed or ErrUnmappable.
type EventError struct {
	EventID   int64
	EventType string
	Err       error
	Detail    string
}

func (e *EventError) Error() string {
	return fmt.Sprintf("temporal history: event %d (%s): %s [%s]", e.EventID, e.EventType, e.Detail, e.Code())
}

// Code returns the stable code of the error: UnmappableCode for an event
// heddle cannot express, MalformedCode otherwise.
func (e *EventError) Code() string {
	if errors.Is(e.Err, ErrUnmappable) {
		return UnmappableCode
	}
	return MalformedCode
}

// Unwrap returns ErrMalformed or ErrUnmappable.
func (e *EventError) Unwrap() error { return e.Err }
