package activity

import "fmt"

// ResourceError is what an activity returns when the resource its try
// holds failed it (a browser that crashed, a phone without signal, an
// account locked), rather than the work itself. The step's resource joins
// its avoid-list and the next try runs on another resource that offers
// what the step needs (FAILED_RESOURCE, then SWITCHING_RESOURCE). An
// activity that holds no resource is retried as for any other error.
type ResourceError struct {
	// Message says what went wrong with the resource.
	Message string
}

// NewResourceError returns a ResourceError with the message made by
// fmt.Sprintf(format, args...).
func NewResourceError(format string, args ...any) *ResourceError {
	return &ResourceError{Message: fmt.Sprintf(format, args...)}
}

func (e *ResourceError) Error() string { return "resource failed: " + e.Message }

// NeedsUserError is what an activity returns when a person must act before
// it can go on: a captcha, a second confirmation. The step waits durably
// (NEEDS_USER), holding no lease and any resource unit it had, until a
// person answers (heddle step answer, the HTTP API or client.AnswerStep);
// then the activity runs again with the answer in GetInfo(ctx).Answer.
type NeedsUserError struct {
	// Question is what the person is asked: shown by heddle step list and
	// describe. JSON is shown as it is, anything else as a string.
	Question []byte
}

// NewNeedsUserError returns a NeedsUserError asking question.
func NewNeedsUserError(question string) *NeedsUserError {
	return &NeedsUserError{Question: []byte(question)}
}

func (e *NeedsUserError) Error() string { return "needs a person: " + string(e.Question) }
