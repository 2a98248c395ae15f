package temporal

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

type card struct {
	Last4  string
	Reason string
}

// An ApplicationError carries what Temporal's does: message, type,
// retryability, details, cause, category and next retry delay; Error
// writes them as Temporal does.
func TestApplicationError(t *testing.T) {
	err := NewApplicationError("declined", "CardDeclined", card{"4242", "insufficient funds"}, 3)
	var app *ApplicationError
	if !errors.As(err, &app) || !IsApplicationError(err) {
		t.Fatalf("%T is not an *ApplicationError", err)
	}
	if app.Message() != "declined" || app.Type() != "CardDeclined" || app.NonRetryable() || app.Unwrap() != nil ||
		app.Category() != ApplicationErrorCategoryUnspecified || app.NextRetryDelay() != 0 {
		t.Fatalf("fields %+v", app)
	}
	if want := "declined (type: CardDeclined, retryable: true)"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err, want)
	}
	var c card
	var n, missing int
	if !app.HasDetails() || app.Details(&c, &n, &missing) != nil || c.Last4 != "4242" || n != 3 || missing != 0 {
		t.Fatalf("details %+v %d %d", c, n, missing)
	}

	bare := NewApplicationError("plain", "")
	if bare.Error() != "plain" || bare.(*ApplicationError).HasDetails() || !errors.Is(bare.(*ApplicationError).Details(&c), ErrNoData) {
		t.Fatalf("an error without type or details: %q", bare)
	}

	nr := NewNonRetryableApplicationError("bad input", "Invalid", io.EOF, "field")
	if !errors.As(nr, &app) || !app.NonRetryable() || !errors.Is(nr, io.EOF) {
		t.Fatalf("non-retryable with cause: %+v", nr)
	}
	if want := "bad input (type: Invalid, retryable: false): EOF"; nr.Error() != want {
		t.Fatalf("Error() = %q, want %q", nr, want)
	}
	wc := NewApplicationErrorWithCause("wrapped", "W", io.ErrUnexpectedEOF)
	if !errors.Is(wc, io.ErrUnexpectedEOF) || wc.(*ApplicationError).NonRetryable() {
		t.Fatalf("with cause: %v", wc)
	}

	benign := NewApplicationErrorWithOptions("no work yet", "Empty", ApplicationErrorOptions{
		Category: ApplicationErrorCategoryBenign, NextRetryDelay: 5 * time.Second, Details: []any{"q1"}})
	if !errors.As(benign, &app) || app.Category() != ApplicationErrorCategoryBenign || app.NextRetryDelay() != 5*time.Second ||
		app.Category().String() != "benign" {
		t.Fatalf("options: %+v", app)
	}

	// Details that JSON cannot encode say so when read, not when made.
	bad := NewApplicationError("x", "X", make(chan int))
	if err := bad.(*ApplicationError).Details(new(any)); err == nil {
		t.Fatal("unencodable details decoded")
	}
}

// A CanceledError matches every other with errors.Is (so errors.Is(err,
// workflow.ErrCanceled) holds for any cancellation) and carries details.
func TestCanceledError(t *testing.T) {
	err := NewCanceledError("cleanup done")
	var c *CanceledError
	if !errors.As(err, &c) || !IsCanceledError(fmt.Errorf("wrapped: %w", err)) || err.Error() != "canceled" {
		t.Fatalf("%v", err)
	}
	var s string
	if !c.HasDetails() || c.Details(&s) != nil || s != "cleanup done" {
		t.Fatalf("details %q", s)
	}
	other := NewCanceledErrorWithOptions(CanceledErrorOptions{Message: "stopped", Cause: io.EOF})
	if !errors.Is(other, err) || !errors.Is(fmt.Errorf("x: %w", other), err) || other.Error() != "stopped" || !errors.Is(other, io.EOF) {
		t.Fatalf("%v does not match another cancellation, or lost its cause", other)
	}
	if errors.Is(errors.New("canceled"), err) || IsCanceledError(errors.New("canceled")) {
		t.Fatal("a plain error matched a cancellation")
	}
	if !errors.Is(NewCanceledError().(*CanceledError).Details(), ErrNoData) {
		t.Fatal("a cancellation without details has some")
	}
}

func TestTimeoutError(t *testing.T) {
	err := NewTimeoutError(TimeoutTypeStartToClose, io.EOF, 7)
	var te *TimeoutError
	if !errors.As(err, &te) || te.TimeoutType() != TimeoutTypeStartToClose || !errors.Is(err, io.EOF) || !IsTimeoutError(err) {
		t.Fatalf("%v", err)
	}
	if want := "StartToClose timeout (type: StartToClose): EOF"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err, want)
	}
	var n int
	if !te.HasLastHeartbeatDetails() || te.LastHeartbeatDetails(&n) != nil || n != 7 {
		t.Fatalf("heartbeat details %d", n)
	}
	hb := NewHeartbeatTimeoutError()
	if !errors.As(hb, &te) || te.TimeoutType() != TimeoutTypeHeartbeat || !errors.Is(te.LastHeartbeatDetails(&n), ErrNoData) {
		t.Fatalf("%v", hb)
	}
}

func TestOtherErrors(t *testing.T) {
	p := &PanicError{value: "boom", stackTrace: "main.go:1"}
	if p.Error() != "boom" || p.StackTrace() != "main.go:1" || !IsPanicError(fmt.Errorf("x: %w", p)) {
		t.Fatalf("%v", p)
	}
	if (&TerminatedError{}).Error() != "terminated" || !IsTerminatedError(&TerminatedError{msg: "terminated: bye"}) {
		t.Fatal("TerminatedError")
	}
	app := NewApplicationError("declined", "CardDeclined")
	ae := NewActivityError("Charge", "3", app)
	if ae.ActivityType().GetName() != "Charge" || ae.ActivityID() != "3" || ae.Step() != "3" || !errors.Is(ae, app) {
		t.Fatalf("%v", ae)
	}
	if want := "activity error (type: Charge, step: 3): declined (type: CardDeclined, retryable: true)"; ae.Error() != want {
		t.Fatalf("Error() = %q, want %q", ae, want)
	}
	ce := NewChildWorkflowExecutionError("child-1", "12", "Ship", "4", &ChildWorkflowExecutionAlreadyStartedError{})
	var started *ChildWorkflowExecutionAlreadyStartedError
	if ce.WorkflowID() != "child-1" || ce.RunID() != "12" || ce.WorkflowType() != "Ship" || ce.Step() != "4" || !errors.As(ce, &started) {
		t.Fatalf("%v", ce)
	}
	we := NewWorkflowExecutionError("order-1", "7", "Order", ae)
	var got *ActivityError
	if !errors.As(we, &got) || got != ae {
		t.Fatalf("%v does not unwrap to its activity error", we)
	}
	if want := "workflow execution error (type: Order, workflowID: order-1, runID: 7): activity error"; we.Error()[:len(want)] != want {
		t.Fatalf("Error() = %q", we)
	}
	var nilType *ActivityType
	var nilWT *WorkflowType
	var nilExe *WorkflowExecution
	if nilType.GetName() != "" || nilWT.GetName() != "" || nilExe.GetWorkflowId() != "" || nilExe.GetRunId() != "" {
		t.Fatal("the getters of nil values are not empty")
	}
	exe := &WorkflowExecution{ID: "a", RunID: "1"}
	if exe.GetWorkflowId() != "a" || exe.GetRunId() != "1" {
		t.Fatal("WorkflowExecution getters")
	}
}

// ErrorType names a plain error's Go type as Temporal does: "" for
// errors.New's.
func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("x"), ""},
		{fmt.Errorf("no wrap %d", 1), ""},
		{fmt.Errorf("wrap: %w", io.EOF), "wrapError"},
		{myErr{}, "myErr"},
		{&myErr{}, "myErr"},
		{nil, ""},
	} {
		if got := ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%T) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// An activity fails with an application error carrying details; the
// workflow reads the type and the details back.
func ExampleNewApplicationError() {
	err := NewApplicationError("card declined", "CardDeclined", "insufficient funds")
	var app *ApplicationError
	if errors.As(err, &app) {
		var reason string
		_ = app.Details(&reason)
		fmt.Println(app.Type(), app.NonRetryable(), reason)
	}
	// Output: CardDeclined false insufficient funds
}
