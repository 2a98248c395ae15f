package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
)

// roundTrip sends err across a history as the worker does.
func roundTrip(err error) error { return decodeFailure(encodeFailure(err)) }

// Every typed error comes back as itself after crossing the history, so
// errors.As works on the far side as in Temporal, and reads the same.
func TestFailureRoundTrip(t *testing.T) {
	app := NewApplicationErrorWithOptions("declined", "CardDeclined", ApplicationErrorOptions{NonRetryable: true,
		Details: []any{"4242", 2}, Category: ApplicationErrorCategoryBenign, NextRetryDelay: 3 * time.Second, Cause: errors.New("bank says no")})
	for _, tc := range []struct {
		name  string
		err   error
		check func(t *testing.T, got error)
	}{
		{"application", app, func(t *testing.T, got error) {
			var a *ApplicationError
			var last4 string
			var n int
			if !errors.As(got, &a) || a.Type() != "CardDeclined" || !a.NonRetryable() || a.Category() != ApplicationErrorCategoryBenign ||
				a.NextRetryDelay() != 3*time.Second || a.Details(&last4, &n) != nil || last4 != "4242" || n != 2 {
				t.Fatalf("%+v", got)
			}
			var cause *ApplicationError
			if !errors.As(errors.Unwrap(got), &cause) || cause.Message() != "bank says no" || cause.Type() != "" {
				t.Fatalf("cause %v", errors.Unwrap(got))
			}
		}},
		{"plain Go error", myErr{}, func(t *testing.T, got error) {
			var a *ApplicationError
			if !errors.As(got, &a) || a.Type() != "myErr" || a.Message() != "mine" || a.NonRetryable() {
				t.Fatalf("%+v", got)
			}
		}},
		{"canceled", NewCanceledError("why"), func(t *testing.T, got error) {
			var c *CanceledError
			var why string
			if !errors.As(got, &c) || c.Details(&why) != nil || why != "why" || IsApplicationError(got) {
				t.Fatalf("%+v", got)
			}
		}},
		{"timeout", NewHeartbeatTimeoutError(41), func(t *testing.T, got error) {
			var te *TimeoutError
			var n int
			if !errors.As(got, &te) || te.TimeoutType() != TimeoutTypeHeartbeat || te.LastHeartbeatDetails(&n) != nil || n != 41 {
				t.Fatalf("%+v", got)
			}
		}},
		{"terminated", &TerminatedError{msg: "terminated: by hand"}, func(t *testing.T, got error) {
			if !IsTerminatedError(got) {
				t.Fatalf("%+v", got)
			}
		}},
		{"activity panic", &PanicError{value: "nil map", stackTrace: "a.go:3"}, func(t *testing.T, got error) {
			var p *PanicError
			if !errors.As(got, &p) || p.StackTrace() != "a.go:3" {
				t.Fatalf("%+v", got)
			}
		}},
		{"workflow panic", &replay.PanicError{Coroutine: "root", Value: "oops", Stack: "wf.go:9"}, func(t *testing.T, got error) {
			var p *PanicError
			if !errors.As(got, &p) || p.StackTrace() != "wf.go:9" || !strings.Contains(p.Error(), "oops") {
				t.Fatalf("%+v", got)
			}
		}},
		{"activity error", NewActivityError("Charge", "2", app), func(t *testing.T, got error) {
			var ae *ActivityError
			var a *ApplicationError
			if !errors.As(got, &ae) || ae.ActivityType().GetName() != "Charge" || ae.ActivityID() != "2" || !errors.As(got, &a) || a.Type() != "CardDeclined" {
				t.Fatalf("%+v", got)
			}
		}},
		{"child error", NewChildWorkflowExecutionError("c-1", "9", "Ship", "4", &ChildWorkflowExecutionAlreadyStartedError{}), func(t *testing.T, got error) {
			var ce *ChildWorkflowExecutionError
			if !errors.As(got, &ce) || ce.WorkflowID() != "c-1" || ce.RunID() != "9" || ce.WorkflowType() != "Ship" ||
				!errors.As(got, new(*ChildWorkflowExecutionAlreadyStartedError)) {
				t.Fatalf("%+v", got)
			}
		}},
		{"unknown external", &UnknownExternalWorkflowExecutionError{}, func(t *testing.T, got error) {
			if !errors.As(got, new(*UnknownExternalWorkflowExecutionError)) {
				t.Fatalf("%+v", got)
			}
		}},
		{"workflow execution", NewWorkflowExecutionError("o", "1", "Order", NewCanceledError()), func(t *testing.T, got error) {
			if !errors.As(got, new(*WorkflowExecutionError)) || !IsCanceledError(got) {
				t.Fatalf("%+v", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roundTrip(tc.err)
			tc.check(t, got)
			want := tc.err.Error()
			if ErrorType(tc.err) != "" && !isTyped(tc.err) {
				// A plain error comes back as an application error of its Go
				// type, which Error names, as in Temporal.
				want = fmt.Sprintf("%s (type: %s, retryable: true)", want, ErrorType(tc.err))
			}
			if got.Error() != want {
				t.Errorf("Error() after the round trip %q, want %q", got, want)
			}
		})
	}
}

// A plain error wrapping a typed one is recorded as the typed one, with
// the wrapper's words in its message: its type, retryability and details
// reach the receiver.
func TestFailureOfAWrappedError(t *testing.T) {
	inner := NewNonRetryableApplicationError("address undeliverable", "Undeliverable", nil, "street")
	got := roundTrip(fmt.Errorf("compensated after: %w", inner))
	var a *ApplicationError
	var street string
	if !errors.As(got, &a) || a.Type() != "Undeliverable" || !a.NonRetryable() || a.Details(&street) != nil || street != "street" {
		t.Fatalf("decoded %#v", got)
	}
	if a.Message() != "compensated after: address undeliverable" {
		t.Fatalf("message %q", a.Message())
	}
	// A plain chain keeps its links, as Temporal records them.
	got = roundTrip(fmt.Errorf("reading: %w", io.EOF))
	if !errors.As(got, &a) || a.Type() != "wrapError" || a.Message() != "reading: EOF" {
		t.Fatalf("decoded %#v", got)
	}
	if !errors.As(errors.Unwrap(got), &a) || a.Type() != "" || a.Message() != "EOF" {
		t.Fatalf("cause %#v", errors.Unwrap(got))
	}
}

// The payloads the engine writes, and those written before failures had
// kinds, read as the typed errors their types name.
func TestFailureOfOlderAndEnginePayloads(t *testing.T) {
	var te *TimeoutError
	if err := decodeFailure(engine.EncodeTimeoutFailure(engine.TimeoutWorkflowRun, "run timeout passed")); !errors.As(err, &te) ||
		te.TimeoutType() != TimeoutTypeWorkflowRun || te.Message() != "run timeout passed" {
		t.Fatalf("engine timeout: %#v", err)
	}
	if err := decodeFailure(engine.EncodeTerminatedFailure("by hand")); !IsTerminatedError(err) || err.Error() != "terminated: by hand" {
		t.Fatalf("engine termination: %#v", err)
	}
	var a *ApplicationError
	if err := decodeFailure([]byte(`{"type":"T","message":"m","nonRetryable":true}`)); !errors.As(err, &a) || a.Type() != "T" || a.Message() != "m" || !a.NonRetryable() {
		t.Fatalf("old application payload: %#v", err)
	}
	if err := decodeFailure([]byte(`{"type":"CanceledError","message":"activity X canceled","nonRetryable":true}`)); !IsCanceledError(err) {
		t.Fatalf("old cancellation: %#v", err)
	}
	if err := decodeFailure([]byte(`{"type":"ChildWorkflowExecutionAlreadyStartedError","message":"taken","nonRetryable":true}`)); !errors.As(err, new(*ChildWorkflowExecutionAlreadyStartedError)) {
		t.Fatalf("old already-started: %#v", err)
	}
	if err := decodeFailure([]byte("not json")); err.Error() != "not json" {
		t.Fatalf("a payload that is not JSON decoded as %q", err)
	}
	// The engine reads the SDK's payloads' first fields.
	f, err := engine.DecodeFailure(encodeFailure(NewNonRetryableApplicationError("m", "T", nil)))
	if err != nil || f.Type != "T" || f.Message != "m" || !f.NonRetryable {
		t.Fatalf("engine.DecodeFailure of the SDK's payload: %+v, %v", f, err)
	}
}

// A chain too deep is cut at maxCauseDepth, so a payload has an end.
func TestFailureDepthIsBounded(t *testing.T) {
	err := errors.New("root")
	for i := range 100 {
		err = NewApplicationErrorWithCause(fmt.Sprint("level ", i), "L", err)
	}
	depth := 0
	for e := roundTrip(err); e != nil; e = errors.Unwrap(e) {
		depth++
	}
	if depth != maxCauseDepth {
		t.Fatalf("decoded chain of %d errors, want %d", depth, maxCauseDepth)
	}
}

// FuzzDecodeFailure feeds arbitrary bytes to the failure decoder: it never
// panics, and what it decodes survives being encoded and decoded again.
func FuzzDecodeFailure(f *testing.F) {
	for _, seed := range []error{
		NewApplicationError("m", "T", 1, "two"), NewCanceledError(), NewHeartbeatTimeoutError(3),
		NewActivityError("A", "1", NewNonRetryableApplicationError("x", "X", io.EOF)),
		NewWorkflowExecutionError("w", "1", "W", &TerminatedError{}),
	} {
		f.Add(encodeFailure(seed))
	}
	f.Add([]byte(`{"kind":"child","cause":{"kind":"alreadyStarted"}}`))
	f.Add([]byte(`{"details":[1,`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := decodeFailure(data)
		if err == nil {
			t.Fatal("a payload decoded to no error")
		}
		_ = err.Error()
		depth := 0
		for e := err; e != nil; e = errors.Unwrap(e) {
			depth++
		}
		again := decodeFailure(encodeFailure(err))
		// JSON carries text as UTF-8: invalid bytes (kept as they are on
		// the first decoding of a payload that is not JSON) come back as
		// U+FFFD.
		if depth < maxCauseDepth && utf8.ValidString(err.Error()) && again.Error() != err.Error() {
			t.Fatalf("re-encoding changed %q into %q", err, again)
		}
		if !json.Valid(encodeFailure(err)) {
			t.Fatal("encodeFailure wrote invalid JSON")
		}
	})
}
