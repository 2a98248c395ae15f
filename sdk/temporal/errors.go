package temporal

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/converter"
)

// Sentinel errors of the package, matched with errors.Is.
var (
	// ErrNoData: Details, LastHeartbeatDetails (or a heartbeat's details)
	// were asked for, and there are none. It is converter.ErrNoData.
	ErrNoData = converter.ErrNoData
	// ErrScheduleAlreadyRunning: a schedule was created with the id of
	// one that exists (client.ScheduleClient's Create), as Temporal's. It
	// is engine.ErrScheduleExists, so the engine's refusal matches it in
	// process and over HTTP.
	ErrScheduleAlreadyRunning = engine.ErrScheduleExists
)

// ApplicationErrorCategory says how an error is reported; it does not
// change how it is retried.
type ApplicationErrorCategory int

// Application error categories.
const (
	// ApplicationErrorCategoryUnspecified: an ordinary failure.
	ApplicationErrorCategoryUnspecified ApplicationErrorCategory = iota
	// ApplicationErrorCategoryBenign: a failure expected in normal
	// operation (a card declined, a poll that found nothing yet). A worker
	// logs a benign activity failure at Debug instead of Warn and counts
	// it as "benign" instead of "failed" in its activity metrics, so that
	// it raises no alert.
	ApplicationErrorCategoryBenign
)

func (c ApplicationErrorCategory) String() string {
	switch c {
	case ApplicationErrorCategoryUnspecified:
		return "unspecified"
	case ApplicationErrorCategoryBenign:
		return "benign"
	}
	return fmt.Sprintf("ApplicationErrorCategory(%d)", int(c))
}

// ApplicationErrorOptions are the optional parts of an ApplicationError.
type ApplicationErrorOptions struct {
	// NonRetryable: the error is not retried, whatever the retry policy.
	NonRetryable bool
	// Cause is the error that caused this one (Unwrap returns it).
	Cause error
	// Details are values the receiver decodes with Details; they are
	// encoded as JSON (converter.Encode) when the error is made.
	Details []any
	// NextRetryDelay, if positive, replaces the retry policy's delay
	// before the next attempt (the attempt count and ScheduleToClose
	// still apply).
	NextRetryDelay time.Duration
	// Category says how the failure is reported (see
	// ApplicationErrorCategoryBenign).
	Category ApplicationErrorCategory
}

// ApplicationError is a failure of workflow or activity code: a message,
// a type that retry policies and handlers match on, whether retrying can
// help, and optional details.
type ApplicationError struct {
	msg            string
	errType        string
	nonRetryable   bool
	cause          error
	details        converter.EncodedValues
	nextRetryDelay time.Duration
	category       ApplicationErrorCategory
}

// NewApplicationError returns a retryable *ApplicationError of type
// errType carrying details.
func NewApplicationError(message, errType string, details ...any) error {
	return NewApplicationErrorWithOptions(message, errType, ApplicationErrorOptions{Details: details})
}

// NewApplicationErrorWithCause is NewApplicationError with a cause.
func NewApplicationErrorWithCause(message, errType string, cause error, details ...any) error {
	return NewApplicationErrorWithOptions(message, errType, ApplicationErrorOptions{Cause: cause, Details: details})
}

// NewNonRetryableApplicationError returns an *ApplicationError that is
// never retried.
func NewNonRetryableApplicationError(message, errType string, cause error, details ...any) error {
	return NewApplicationErrorWithOptions(message, errType, ApplicationErrorOptions{NonRetryable: true, Cause: cause, Details: details})
}

// NewApplicationErrorWithOptions returns an *ApplicationError with every
// option.
func NewApplicationErrorWithOptions(message, errType string, options ApplicationErrorOptions) error {
	return &ApplicationError{msg: message, errType: errType, nonRetryable: options.NonRetryable, cause: options.Cause,
		details: detailsOf(options.Details), nextRetryDelay: options.NextRetryDelay, category: options.Category}
}

// Error is the message, then the type and retryability when there is a
// type, then the cause, as Temporal writes it.
func (e *ApplicationError) Error() string {
	msg := e.msg
	if e.errType != "" {
		msg = fmt.Sprintf("%s (type: %s, retryable: %v)", msg, e.errType, !e.nonRetryable)
	}
	if e.cause != nil {
		msg = fmt.Sprintf("%s: %v", msg, e.cause)
	}
	return msg
}

// Message returns the message alone.
func (e *ApplicationError) Message() string { return e.msg }

// Type returns the error's type: the one it was made with, or for an error
// that was not an ApplicationError when it crossed the history, its Go
// type name (ErrorType).
func (e *ApplicationError) Type() string { return e.errType }

// NonRetryable reports whether the error is never retried.
func (e *ApplicationError) NonRetryable() bool { return e.nonRetryable }

// HasDetails reports whether the error carries details.
func (e *ApplicationError) HasDetails() bool { return e.details != nil && e.details.HasValues() }

// Details decodes the error's details into d, in order; ErrNoData when
// there are none.
func (e *ApplicationError) Details(d ...any) error {
	if !e.HasDetails() {
		return ErrNoData
	}
	return e.details.Get(d...)
}

// Unwrap returns the cause.
func (e *ApplicationError) Unwrap() error { return e.cause }

// Is matches the sentinels that name a failure type, by a method
// FailureType() string (workflow.ErrReplan is one): errors.Is(err,
// workflow.ErrReplan) holds for an error of type "ReplanError", however it
// crossed the history.
func (e *ApplicationError) Is(target error) bool {
	s, ok := target.(interface{ FailureType() string })
	return ok && e.errType != "" && s.FailureType() == e.errType
}

// NextRetryDelay returns the delay that replaces the retry policy's, or 0.
func (e *ApplicationError) NextRetryDelay() time.Duration { return e.nextRetryDelay }

// Category returns how the failure is reported.
func (e *ApplicationError) Category() ApplicationErrorCategory { return e.category }

// IsApplicationError reports whether err is, or wraps, an *ApplicationError.
func IsApplicationError(err error) bool {
	var app *ApplicationError
	return errors.As(err, &app)
}

// CanceledErrorOptions are the parts of a CanceledError.
type CanceledErrorOptions struct {
	// Message defaults to "canceled".
	Message string
	// Details are encoded as JSON when the error is made.
	Details []any
	// Cause is the error that caused the cancellation.
	Cause error
}

// CanceledError reports work that ended because it was cancelled: a
// workflow context's Err, an activity or child that acknowledged its
// cancellation, a cancelled run seen by a client.
type CanceledError struct {
	msg     string
	cause   error
	details converter.EncodedValues
}

// NewCanceledError returns a *CanceledError carrying details. A workflow
// returns it to end as cancelled; an activity, to acknowledge a
// cancellation.
func NewCanceledError(details ...any) error {
	return NewCanceledErrorWithOptions(CanceledErrorOptions{Details: details})
}

// NewCanceledErrorWithOptions returns a *CanceledError with every option.
func NewCanceledErrorWithOptions(options CanceledErrorOptions) error {
	msg := options.Message
	if msg == "" {
		msg = "canceled"
	}
	return &CanceledError{msg: msg, cause: options.Cause, details: detailsOf(options.Details)}
}

func (e *CanceledError) Error() string { return e.msg }

// Unwrap returns the cause.
func (e *CanceledError) Unwrap() error { return e.cause }

// HasDetails reports whether the error carries details.
func (e *CanceledError) HasDetails() bool { return e.details != nil && e.details.HasValues() }

// Details decodes the details into d; ErrNoData when there are none.
func (e *CanceledError) Details(d ...any) error {
	if !e.HasDetails() {
		return ErrNoData
	}
	return e.details.Get(d...)
}

// Is makes every cancellation match every other with errors.Is, so
// errors.Is(err, workflow.ErrCanceled) holds for an activity's or a
// child's cancellation too (Temporal matches only the same value; use
// IsCanceledError there).
func (e *CanceledError) Is(target error) bool {
	_, ok := target.(*CanceledError)
	return ok
}

// IsCanceledError reports whether err is, or wraps, a *CanceledError.
func IsCanceledError(err error) bool {
	var c *CanceledError
	return errors.As(err, &c)
}

// TimeoutType names the deadline that passed, as Temporal's enums do
// ("StartToClose", "ScheduleToClose", "ScheduleToStart", "Heartbeat"; and
// for a workflow, "WorkflowExecution" and "WorkflowRun").
type TimeoutType = engine.TimeoutType

// Timeout types.
const (
	TimeoutTypeScheduleToStart   = engine.TimeoutScheduleToStart
	TimeoutTypeScheduleToClose   = engine.TimeoutScheduleToClose
	TimeoutTypeStartToClose      = engine.TimeoutStartToClose
	TimeoutTypeHeartbeat         = engine.TimeoutHeartbeat
	TimeoutTypeWorkflowExecution = engine.TimeoutWorkflowExecution
	TimeoutTypeWorkflowRun       = engine.TimeoutWorkflowRun
)

// TimeoutError reports an activity, a child or a workflow that ran out of
// time.
type TimeoutError struct {
	msg                  string
	timeoutType          TimeoutType
	cause                error
	lastHeartbeatDetails converter.EncodedValues
}

// NewTimeoutError returns a *TimeoutError of timeoutType caused by lastErr,
// carrying the last heartbeat's details (for tests and mocks, as in
// Temporal).
func NewTimeoutError(timeoutType TimeoutType, lastErr error, details ...any) error {
	return newTimeoutError(string(timeoutType)+" timeout", timeoutType, lastErr, detailsOf(details))
}

// NewHeartbeatTimeoutError returns a heartbeat *TimeoutError carrying the
// last heartbeat's details.
func NewHeartbeatTimeoutError(details ...any) error {
	return newTimeoutError("heartbeat timeout", TimeoutTypeHeartbeat, nil, detailsOf(details))
}

func newTimeoutError(msg string, tt TimeoutType, cause error, details converter.EncodedValues) *TimeoutError {
	return &TimeoutError{msg: msg, timeoutType: tt, cause: cause, lastHeartbeatDetails: details}
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s (type: %s)", e.msg, e.timeoutType)
	if e.cause != nil {
		msg = fmt.Sprintf("%s: %v", msg, e.cause)
	}
	return msg
}

// Message returns the message alone.
func (e *TimeoutError) Message() string { return e.msg }

// Unwrap returns the cause.
func (e *TimeoutError) Unwrap() error { return e.cause }

// TimeoutType returns which deadline passed.
func (e *TimeoutError) TimeoutType() TimeoutType { return e.timeoutType }

// HasLastHeartbeatDetails reports whether the timed-out activity recorded
// heartbeat details.
func (e *TimeoutError) HasLastHeartbeatDetails() bool {
	return e.lastHeartbeatDetails != nil && e.lastHeartbeatDetails.HasValues()
}

// LastHeartbeatDetails decodes the last heartbeat's details into d;
// ErrNoData when there are none.
func (e *TimeoutError) LastHeartbeatDetails(d ...any) error {
	if !e.HasLastHeartbeatDetails() {
		return ErrNoData
	}
	return e.lastHeartbeatDetails.Get(d...)
}

// IsTimeoutError reports whether err is, or wraps, a *TimeoutError.
func IsTimeoutError(err error) bool {
	var t *TimeoutError
	return errors.As(err, &t)
}

// TerminatedError reports a run ended by Terminate.
type TerminatedError struct {
	msg string
}

func (e *TerminatedError) Error() string {
	if e.msg == "" {
		return "terminated"
	}
	return e.msg
}

// IsTerminatedError reports whether err is, or wraps, a *TerminatedError.
func IsTerminatedError(err error) bool {
	var t *TerminatedError
	return errors.As(err, &t)
}

// PanicError reports activity or workflow code that panicked: the value
// (as text, once it crossed the history) and the stack.
type PanicError struct {
	value      any
	stackTrace string
}

func (e *PanicError) Error() string { return fmt.Sprint(e.value) }

// StackTrace returns the stack of the panicking goroutine.
func (e *PanicError) StackTrace() string { return e.stackTrace }

// IsPanicError reports whether err is, or wraps, a *PanicError.
func IsPanicError(err error) bool {
	var p *PanicError
	return errors.As(err, &p)
}

// ActivityType names an activity type.
type ActivityType struct {
	Name string
}

// GetName returns Name, as the protobuf type Temporal returns does.
func (t *ActivityType) GetName() string {
	if t == nil {
		return ""
	}
	return t.Name
}

// WorkflowType names a workflow type.
type WorkflowType struct {
	Name string
}

// GetName returns Name.
func (t *WorkflowType) GetName() string {
	if t == nil {
		return ""
	}
	return t.Name
}

// WorkflowExecution names one run of a workflow: its workflow id and run
// id (heddle's run ids are decimal job ids).
type WorkflowExecution struct {
	ID    string
	RunID string
}

// GetWorkflowId returns ID, as the protobuf type does.
func (e *WorkflowExecution) GetWorkflowId() string { //nolint:revive // Temporal's (protobuf's) spelling
	if e == nil {
		return ""
	}
	return e.ID
}

// GetRunId returns RunID, as the protobuf type does.
func (e *WorkflowExecution) GetRunId() string { //nolint:revive // Temporal's (protobuf's) spelling
	if e == nil {
		return ""
	}
	return e.RunID
}

// ActivityError is what an activity's future returns when the activity
// failed for good: which activity, at which step, and its failure (Cause:
// an *ApplicationError, *CanceledError, *TimeoutError or *PanicError).
type ActivityError struct {
	activityType string
	step         string
	cause        error
}

// NewActivityError returns an *ActivityError: for the SDK, and for tests
// that fake an activity's failure.
func NewActivityError(activityType, step string, cause error) *ActivityError {
	return &ActivityError{activityType: activityType, step: step, cause: cause}
}

func (e *ActivityError) Error() string {
	msg := fmt.Sprintf("activity error (type: %s, step: %s)", e.activityType, e.step)
	if e.cause != nil {
		msg = fmt.Sprintf("%s: %v", msg, e.cause)
	}
	return msg
}

// Unwrap returns the activity's failure.
func (e *ActivityError) Unwrap() error { return e.cause }

// ActivityType names the activity.
func (e *ActivityError) ActivityType() *ActivityType { return &ActivityType{Name: e.activityType} }

// ActivityID is the activity's id: its step in the workflow's history.
func (e *ActivityError) ActivityID() string { return e.step }

// Step is the activity's step in the workflow's history (= ActivityID).
func (e *ActivityError) Step() string { return e.step }

// ChildWorkflowExecutionError is what a child workflow's future returns
// when the child failed, was cancelled, timed out or could not start.
type ChildWorkflowExecutionError struct {
	workflowID   string
	runID        string
	workflowType string
	step         string
	cause        error
}

// NewChildWorkflowExecutionError returns a *ChildWorkflowExecutionError:
// for the SDK, and for tests.
func NewChildWorkflowExecutionError(workflowID, runID, workflowType, step string, cause error) *ChildWorkflowExecutionError {
	return &ChildWorkflowExecutionError{workflowID: workflowID, runID: runID, workflowType: workflowType, step: step, cause: cause}
}

func (e *ChildWorkflowExecutionError) Error() string {
	msg := fmt.Sprintf("child workflow execution error (type: %s, workflowID: %s, runID: %s, step: %s)",
		e.workflowType, e.workflowID, e.runID, e.step)
	if e.cause != nil {
		msg = fmt.Sprintf("%s: %v", msg, e.cause)
	}
	return msg
}

// Unwrap returns the child's failure.
func (e *ChildWorkflowExecutionError) Unwrap() error { return e.cause }

// WorkflowID is the child's workflow id.
func (e *ChildWorkflowExecutionError) WorkflowID() string { return e.workflowID }

// RunID is the child's run id ("" if it never started).
func (e *ChildWorkflowExecutionError) RunID() string { return e.runID }

// WorkflowType is the child's workflow type.
func (e *ChildWorkflowExecutionError) WorkflowType() string { return e.workflowType }

// Step is the child's step in the parent's history.
func (e *ChildWorkflowExecutionError) Step() string { return e.step }

// ChildWorkflowExecutionAlreadyStartedError is the cause of a
// ChildWorkflowExecutionError when the child's workflow id is held by
// another open run.
type ChildWorkflowExecutionAlreadyStartedError struct{}

func (*ChildWorkflowExecutionAlreadyStartedError) Error() string {
	return "child workflow execution already started"
}

// IsWorkflowExecutionAlreadyStartedError reports whether err says that a
// workflow id was already taken: a client start refused by the id reuse
// policy (engine.ErrWorkflowExists, also over HTTP) or a child workflow
// whose id is held by another open run.
func IsWorkflowExecutionAlreadyStartedError(err error) bool {
	if errors.Is(err, engine.ErrWorkflowExists) {
		return true
	}
	var child *ChildWorkflowExecutionAlreadyStartedError
	return errors.As(err, &child)
}

// UnknownExternalWorkflowExecutionError is the failure of a signal or
// cancel request to a workflow that does not exist or has ended.
type UnknownExternalWorkflowExecutionError struct{}

func (*UnknownExternalWorkflowExecutionError) Error() string {
	return "unknown external workflow execution"
}

// WorkflowExecutionError is what a client's WorkflowRun.Get returns for a
// run that did not complete: its cause is the workflow's failure (an
// *ApplicationError, *ActivityError, ...), a *CanceledError, a
// *TimeoutError or a *TerminatedError.
type WorkflowExecutionError struct {
	workflowID   string
	runID        string
	workflowType string
	cause        error
}

// NewWorkflowExecutionError returns a *WorkflowExecutionError: for the
// SDK, and for tests.
func NewWorkflowExecutionError(workflowID, runID, workflowType string, cause error) *WorkflowExecutionError {
	return &WorkflowExecutionError{workflowID: workflowID, runID: runID, workflowType: workflowType, cause: cause}
}

func (e *WorkflowExecutionError) Error() string {
	msg := fmt.Sprintf("workflow execution error (type: %s, workflowID: %s, runID: %s)", e.workflowType, e.workflowID, e.runID)
	if e.cause != nil {
		msg = fmt.Sprintf("%s: %v", msg, e.cause)
	}
	return msg
}

// Unwrap returns the run's failure.
func (e *WorkflowExecutionError) Unwrap() error { return e.cause }

// ErrorType returns the type a failure of err is recorded with when err is
// not an *ApplicationError: the name of its Go type without package or
// pointer, and "" for the errors of errors.New and fmt.Errorf without %w,
// as Temporal does.
func ErrorType(err error) string {
	t := reflect.TypeOf(err)
	if t == nil {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == goErrType {
		return ""
	}
	return t.Name()
}

var goErrType = reflect.TypeOf(errors.New("")).Elem()

// detailsOf encodes details once, when the error is made, so that the
// values the receiver decodes are the same whether or not the error
// crossed the history. A single EncodedValues is used as it is.
func detailsOf(details []any) converter.EncodedValues {
	if len(details) == 0 {
		return nil
	}
	if len(details) == 1 {
		if v, ok := details[0].(converter.EncodedValues); ok {
			return v
		}
	}
	data, err := converter.Encode(details...)
	if err != nil {
		return badDetails{err}
	}
	return converter.NewEncodedValues(data)
}

// badDetails are details that could not be encoded: Get says why.
type badDetails struct{ err error }

func (badDetails) HasValues() bool    { return true }
func (b badDetails) Get(...any) error { return b.err }
