package temporal

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// init hands the worker, the client and the workflow package the failure
// format, which user code must not depend on.
func init() {
	sdkhook.EncodeFailure = encodeFailure
	sdkhook.DecodeFailure = decodeFailure
	sdkhook.NewTimeoutError = func(msg string, tt engine.TimeoutType, details []byte) error {
		var d converter.EncodedValues
		if len(details) > 0 {
			d = converter.NewEncodedValues(details)
		}
		return newTimeoutError(msg, tt, nil, d)
	}
	sdkhook.NewPanicError = func(value any, stack string) error { return &PanicError{value: value, stackTrace: stack} }
	sdkhook.NewTerminatedError = func(msg string) error { return &TerminatedError{msg: msg} }
	sdkhook.FailureToStored = failureToStored
	sdkhook.FailureFromStored = failureFromStored
}

// The kinds of failure a payload records, one per error type.
const (
	kindApplication      = "application"
	kindCanceled         = "canceled"
	kindTimeout          = "timeout"
	kindTerminated       = "terminated"
	kindPanic            = "panic"
	kindActivity         = "activity"
	kindChild            = "child"
	kindAlreadyStarted   = "alreadyStarted"
	kindUnknownExternal  = "unknownExternal"
	kindWorkflowExecuted = "workflowExecution"
)

// failure is the JSON form of a failure payload (converter.Failure): a
// node per error of the chain, the first being the error itself and Cause
// what it wraps. Type, Message, NonRetryable and timeout_type are the
// fields the engine writes for the failures it decides (engine.Failure),
// so both read each other's payloads; a payload without Kind (the
// engine's, or one from before kinds existed) is typed by its Type.
type failure = converter.Failure

// maxCauseDepth bounds the chain a payload records, so that a cyclic or
// absurdly deep chain cannot make a payload without end.
const maxCauseDepth = 32

// encodeFailure writes err and its chain of causes as a failure payload.
func encodeFailure(err error) []byte {
	if err == nil {
		err = errors.New("unknown failure")
	}
	b, mErr := json.Marshal(toFailure(err, 0))
	if mErr != nil { // details are Encode's JSON; this cannot happen
		b, _ = json.Marshal(failure{Kind: kindApplication, Message: err.Error()})
	}
	return b
}

func toFailure(err error, depth int) *failure {
	if err == nil || depth >= maxCauseDepth {
		return nil
	}
	// A plain error wrapping a typed one (fmt.Errorf("charging: %w",
	// appErr)) is recorded as the typed one, so its type, retryability and
	// details reach the receiver, with the wrappers' words in its message.
	// Temporal records the wrapper as an error of its own Go type instead;
	// heddle keeps what the code meant.
	node := err
	for e := err; e != nil; e = errors.Unwrap(e) {
		if isTyped(e) {
			node = e
			break
		}
	}
	f := nodeFailure(node)
	if node != err {
		f.Message = strings.Replace(err.Error(), node.Error(), f.Message, 1)
	}
	f.Cause = toFailure(errors.Unwrap(node), depth+1)
	return f
}

// isTyped reports the errors recorded as what they are rather than as an
// application error of their Go type.
func isTyped(err error) bool {
	switch err.(type) {
	case *ApplicationError, *CanceledError, *TimeoutError, *TerminatedError, *PanicError, *ActivityError,
		*ChildWorkflowExecutionError, *ChildWorkflowExecutionAlreadyStartedError, *UnknownExternalWorkflowExecutionError,
		*WorkflowExecutionError, *replay.PanicError:
		return true
	}
	return false
}

// nodeFailure records one error of a chain, without its cause. Message is
// the error's own message: what Error() adds (type, cause) is rebuilt
// from the other fields when the payload is read.
func nodeFailure(err error) *failure {
	f := &failure{Kind: kindApplication, Message: err.Error(), Type: ErrorType(err)}
	switch e := err.(type) {
	case *ApplicationError:
		f.Message, f.Type, f.NonRetryable = e.msg, e.errType, e.nonRetryable
		f.Details, f.Category, f.NextRetryDelayMS = rawDetails(e.details), int(e.category), e.nextRetryDelay.Milliseconds()
	case *CanceledError:
		f.Kind, f.Message, f.Type, f.NonRetryable, f.Details = kindCanceled, e.msg, sdkhook.FailureCanceled, true, rawDetails(e.details)
	case *TimeoutError:
		f.Kind, f.Message, f.Type, f.TimeoutType = kindTimeout, e.msg, engine.FailureTimeout, string(e.timeoutType)
		f.NonRetryable = e.timeoutType != TimeoutTypeStartToClose && e.timeoutType != TimeoutTypeHeartbeat
		f.Details = rawDetails(e.lastHeartbeatDetails)
	case *TerminatedError:
		f.Kind, f.Type, f.NonRetryable = kindTerminated, engine.FailureTerminated, true
	case *PanicError:
		f.Kind, f.Type, f.StackTrace = kindPanic, "PanicError", e.stackTrace
	case *replay.PanicError:
		f.Kind, f.Type, f.StackTrace, f.NonRetryable = kindPanic, "PanicError", e.Stack, true
	case *ActivityError:
		f.Kind, f.Type, f.ActivityType, f.Step = kindActivity, "ActivityError", e.activityType, e.step
	case *ChildWorkflowExecutionError:
		f.Kind, f.Type, f.WorkflowID, f.RunID, f.WorkflowType, f.Step = kindChild, "ChildWorkflowExecutionError", e.workflowID, e.runID, e.workflowType, e.step
	case *ChildWorkflowExecutionAlreadyStartedError:
		f.Kind, f.Type, f.NonRetryable = kindAlreadyStarted, sdkhook.FailureAlreadyStarted, true
	case *UnknownExternalWorkflowExecutionError:
		f.Kind, f.Type, f.NonRetryable = kindUnknownExternal, engine.FailureUnknownExternal, true
	case *WorkflowExecutionError:
		f.Kind, f.Type, f.WorkflowID, f.RunID, f.WorkflowType = kindWorkflowExecuted, "WorkflowExecutionError", e.workflowID, e.runID, e.workflowType
	}
	return f
}

// rawDetails returns the JSON of details this package can carry.
func rawDetails(d converter.EncodedValues) json.RawMessage {
	if d == nil || !d.HasValues() {
		return nil
	}
	data := converter.DataOf(d)
	if !json.Valid(data) {
		return nil
	}
	return data
}

// decodeFailure reads a failure payload as the typed errors it records. A
// payload that is not such JSON becomes the message of an ApplicationError
// of no type, so nothing the history holds is lost.
func decodeFailure(data []byte) error {
	var f failure
	if err := json.Unmarshal(data, &f); err != nil {
		return &ApplicationError{msg: string(data)}
	}
	return fromFailure(&f)
}

func fromFailure(f *failure) error {
	if f == nil {
		return nil
	}
	var details converter.EncodedValues
	if len(f.Details) > 0 {
		details = converter.NewEncodedValues([]byte(f.Details))
	}
	cause := fromFailure(f.Cause)
	switch kindOf(f) {
	case kindCanceled:
		return &CanceledError{msg: f.Message, cause: cause, details: details}
	case kindTimeout:
		return &TimeoutError{msg: f.Message, timeoutType: engine.TimeoutType(f.TimeoutType), cause: cause, lastHeartbeatDetails: details}
	case kindTerminated:
		return &TerminatedError{msg: f.Message}
	case kindPanic:
		return &PanicError{value: f.Message, stackTrace: f.StackTrace}
	case kindActivity:
		return &ActivityError{activityType: f.ActivityType, step: f.Step, cause: cause}
	case kindChild:
		return &ChildWorkflowExecutionError{workflowID: f.WorkflowID, runID: f.RunID, workflowType: f.WorkflowType, step: f.Step, cause: cause}
	case kindAlreadyStarted:
		return &ChildWorkflowExecutionAlreadyStartedError{}
	case kindUnknownExternal:
		return &UnknownExternalWorkflowExecutionError{}
	case kindWorkflowExecuted:
		return &WorkflowExecutionError{workflowID: f.WorkflowID, runID: f.RunID, workflowType: f.WorkflowType, cause: cause}
	}
	return &ApplicationError{msg: f.Message, errType: f.Type, nonRetryable: f.NonRetryable, cause: cause, details: details,
		nextRetryDelay: time.Duration(f.NextRetryDelayMS) * time.Millisecond, category: ApplicationErrorCategory(f.Category)}
}

// kindOf returns a payload's kind: its own, or the one its Type names for
// the engine's payloads and older ones.
func kindOf(f *failure) string {
	if f.Kind != "" {
		return f.Kind
	}
	switch f.Type {
	case sdkhook.FailureCanceled:
		return kindCanceled
	case engine.FailureTimeout:
		return kindTimeout
	case engine.FailureTerminated:
		return kindTerminated
	case sdkhook.FailureAlreadyStarted:
		return kindAlreadyStarted
	case engine.FailureUnknownExternal:
		return kindUnknownExternal
	}
	return kindApplication
}

// DefaultFailureConverterOptions configure NewDefaultFailureConverter, as
// Temporal's.
type DefaultFailureConverterOptions struct {
	// DataConverter encodes the common attributes (and the details of
	// the errors, when it is not the default converter). Nil: the default
	// data converter.
	DataConverter converter.DataConverter
	// EncodeCommonAttributes stores each failure's message and stack
	// trace in its EncodedAttributes, through DataConverter (whose codecs
	// may encrypt them): the history, the engine and the UI see "Encoded
	// failure". The errors workflow code and clients get carry the
	// message again.
	EncodeCommonAttributes bool
}

// DefaultFailureConverter turns the errors of this package into heddle's
// failures and back; every other error is an application error of its Go
// type, as in Temporal.
type DefaultFailureConverter struct {
	dc           converter.DataConverter
	encodeCommon bool
}

var defaultFailureConverter = NewDefaultFailureConverter(DefaultFailureConverterOptions{})

// NewDefaultFailureConverter returns a DefaultFailureConverter configured
// by options.
func NewDefaultFailureConverter(options DefaultFailureConverterOptions) *DefaultFailureConverter {
	return &DefaultFailureConverter{dc: options.DataConverter, encodeCommon: options.EncodeCommonAttributes}
}

// GetDefaultFailureConverter returns the failure converter used when none
// is set.
func GetDefaultFailureConverter() converter.FailureConverter { return defaultFailureConverter }

// ErrorToFailure records err and its chain of causes (at most 32 deep).
// With EncodeCommonAttributes, every node's message and stack trace go
// into its EncodedAttributes; should the data converter fail to encode
// them, the node keeps neither, only the converter's error, so that
// nothing meant to be hidden is stored in the clear.
func (c *DefaultFailureConverter) ErrorToFailure(err error) *converter.Failure {
	if err == nil {
		return nil
	}
	f := toFailure(err, 0)
	for n := f; n != nil; n = n.Cause {
		var derr error
		if n.Details, derr = converter.EncodeData(c.dc, n.Details); derr != nil {
			n.Details = nil
		}
		if !c.encodeCommon {
			continue
		}
		if eerr := converter.EncodeCommonFailureAttributes(c.dc, n); eerr != nil {
			n.Message, n.StackTrace = converter.EncodedFailureMessage+" (not encoded: "+eerr.Error()+")", ""
		}
	}
	return f
}

// FailureToError returns the typed error failure records. failure is not
// changed: its encoded attributes are decoded in a copy. A chain deeper
// than a stored one may be (32) is cut there.
func (c *DefaultFailureConverter) FailureToError(failure *converter.Failure) error {
	if failure == nil {
		return nil
	}
	return fromFailure(c.decoded(failure, 0))
}

// decoded returns a copy of f's chain with encoded attributes and details
// decoded.
func (c *DefaultFailureConverter) decoded(f *converter.Failure, depth int) *converter.Failure {
	if f == nil || depth >= maxCauseDepth {
		return nil
	}
	out := *f
	converter.DecodeCommonFailureAttributes(c.dc, &out)
	if d, err := converter.DecodeData(c.dc, out.Details); err == nil {
		out.Details = d
	}
	out.Cause = c.decoded(f.Cause, depth+1)
	return &out
}

// isDefaultFailureConverter reports whether fc stores failures as heddle
// always has, so that they need no conversion.
func isDefaultFailureConverter(fc converter.FailureConverter) bool {
	if fc == nil {
		return true
	}
	d, ok := fc.(*DefaultFailureConverter)
	return ok && !d.encodeCommon && (d.dc == nil || d.dc == converter.GetDefaultDataConverter())
}

// maxFailureBytes bounds a stored failure read for a failure converter:
// those are bytes from outside, and no real failure comes near.
const maxFailureBytes = 4 << 20

// failureToStored turns a failure payload of encodeFailure into fc's
// stored form: the error it records, through fc.
func failureToStored(fc converter.FailureConverter, data []byte) []byte {
	if isDefaultFailureConverter(fc) || len(data) == 0 {
		return data
	}
	f := fc.ErrorToFailure(decodeFailure(data))
	if f == nil {
		return data
	}
	b, err := json.Marshal(f)
	if err != nil {
		return data
	}
	return b
}

// failureFromStored turns a failure stored by fc back into encodeFailure's
// form. Bytes that are not a failure record are returned as they are.
func failureFromStored(fc converter.FailureConverter, data []byte) []byte {
	if isDefaultFailureConverter(fc) || len(data) == 0 || len(data) > maxFailureBytes {
		return data
	}
	var f converter.Failure
	if json.Unmarshal(data, &f) != nil {
		return data
	}
	return encodeFailure(fc.FailureToError(&f))
}
