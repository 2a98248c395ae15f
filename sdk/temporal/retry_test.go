package temporal

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Delay follows the policy's backoff, capped at MaximumInterval, whose
// default is 100 × InitialInterval as in Temporal.
func TestRetryPolicyDelay(t *testing.T) {
	s := time.Second
	exp := &RetryPolicy{InitialInterval: s, BackoffCoefficient: 2, MaximumInterval: 10 * s}
	lin := &RetryPolicy{InitialInterval: 2 * s, MaximumInterval: 7 * s, Backoff: BackoffLinear}
	fix := &RetryPolicy{InitialInterval: 3 * s, MaximumInterval: 2 * s, Backoff: BackoffFixed}
	def := &RetryPolicy{}
	short := &RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 3}
	huge := &RetryPolicy{InitialInterval: time.Duration(1) << 60}
	for _, tt := range []struct {
		p       *RetryPolicy
		attempt int
		want    time.Duration
	}{
		{exp, 0, s}, {exp, 1, s}, {exp, 2, 2 * s}, {exp, 3, 4 * s}, {exp, 4, 8 * s}, {exp, 5, 10 * s}, {exp, 200, 10 * s},
		{lin, 1, 2 * s}, {lin, 2, 4 * s}, {lin, 3, 6 * s}, {lin, 4, 7 * s}, {lin, 1000, 7 * s},
		{fix, 1, 2 * s}, {fix, 9, 2 * s}, {&RetryPolicy{InitialInterval: s, Backoff: BackoffFixed}, 9, s},
		// The defaults: 1 s doubling, capped at 100 × 1 s.
		{def, 1, s}, {def, 3, 4 * s}, {def, 6, 32 * s}, {def, 7, 64 * s}, {def, 8, 100 * s}, {def, 1000, 100 * s}, {nil, 2, 2 * s},
		// The cap follows InitialInterval: 100 × 10 ms.
		{short, 4, 270 * time.Millisecond}, {short, 5, 810 * time.Millisecond}, {short, 6, s}, {short, 50, s},
		// 100 × InitialInterval past the range of a Duration caps at the
		// longest Duration rather than wrapping around.
		{huge, 3, 4 << 60}, {huge, 4, time.Duration(1<<63 - 1)},
	} {
		if got := tt.p.Delay(tt.attempt); got != tt.want {
			t.Errorf("%+v.Delay(%d) = %v, want %v", tt.p, tt.attempt, got, tt.want)
		}
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	for _, ok := range []*RetryPolicy{nil, {}, {InitialInterval: time.Second, MaximumInterval: time.Minute, BackoffCoefficient: 1.5, MaximumAttempts: 3}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, bad := range []struct {
		p    RetryPolicy
		want string
	}{
		{RetryPolicy{InitialInterval: -1}, "InitialInterval -1ns is negative"},
		{RetryPolicy{MaximumInterval: -1}, "MaximumInterval -1ns is negative"},
		{RetryPolicy{BackoffCoefficient: 0.5}, "BackoffCoefficient 0.5 must be at least 1"},
		{RetryPolicy{MaximumAttempts: -1}, "MaximumAttempts -1 is negative"},
		{RetryPolicy{InitialInterval: 3 * time.Second, MaximumInterval: 2 * time.Second}, "MaximumInterval 2s is below InitialInterval 3s"},
		{RetryPolicy{Backoff: 9}, "unknown backoff BackoffKind(9)"},
	} {
		if err := bad.p.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.p, err, bad.want)
		}
	}
}

func TestRetryPolicyAttemptsAndTypes(t *testing.T) {
	p := &RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{"Fatal"}}
	for attempt, want := range map[int]bool{1: true, 2: true, 3: false, 4: false} {
		if got := p.HasAttemptsLeft(attempt); got != want {
			t.Errorf("HasAttemptsLeft(%d) = %v, want %v", attempt, got, want)
		}
	}
	if !(&RetryPolicy{}).HasAttemptsLeft(1_000_000) || !(*RetryPolicy)(nil).HasAttemptsLeft(5) {
		t.Error("MaximumAttempts 0 (or no policy) is not unlimited")
	}
	if p.IsRetryableType("Fatal") || !p.IsRetryableType("Other") || !(*RetryPolicy)(nil).IsRetryableType("Fatal") {
		t.Error("IsRetryableType does not follow NonRetryableErrorTypes")
	}
}

type myErr struct{}

func (myErr) Error() string { return "mine" }

// IsRetryable follows Temporal's rules, case by case.
func TestIsRetryable(t *testing.T) {
	app := NewApplicationError("declined", "CardDeclined")
	for _, tc := range []struct {
		name  string
		err   error
		types []string
		want  bool
	}{
		{"nil", nil, nil, false},
		{"plain", errors.New("down"), nil, true},
		{"plain, its type \"\" listed", errors.New("down"), []string{""}, false},
		{"Go type listed", myErr{}, []string{"myErr"}, false},
		{"Go type not listed", myErr{}, []string{"Other"}, true},
		{"application", app, nil, true},
		{"application, type listed", app, []string{"CardDeclined"}, false},
		{"application wrapped, type listed", fmt.Errorf("charge: %w", app), []string{"CardDeclined"}, false},
		{"non-retryable", NewNonRetryableApplicationError("bad", "Bad", nil), nil, false},
		{"non-retryable wrapped", fmt.Errorf("x: %w", NewNonRetryableApplicationError("bad", "Bad", nil)), nil, false},
		{"canceled", NewCanceledError(), nil, false},
		{"terminated", &TerminatedError{}, nil, false},
		{"start-to-close timeout", NewTimeoutError(TimeoutTypeStartToClose, nil), nil, true},
		{"heartbeat timeout", NewHeartbeatTimeoutError(), nil, true},
		{"schedule-to-close timeout", NewTimeoutError(TimeoutTypeScheduleToClose, nil), nil, false},
		{"schedule-to-start timeout", NewTimeoutError(TimeoutTypeScheduleToStart, nil), nil, false},
		{"panic", &PanicError{value: "boom"}, nil, true},
		{"panic listed", &PanicError{value: "boom"}, []string{"PanicError"}, false},
	} {
		if got := IsRetryable(tc.err, tc.types); got != tc.want {
			t.Errorf("%s: IsRetryable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// RetryPolicy's zero value retries without limit, waiting 1 s, then twice
// as long each time, up to 100 × 1 s as in Temporal.
func ExampleRetryPolicy_Delay() {
	var p RetryPolicy
	for attempt := 1; attempt <= 9; attempt++ {
		fmt.Print(p.Delay(attempt), ";")
	}
	fmt.Println()
	// Four attempts in all: three retries, 2 s apart more each time.
	linear := RetryPolicy{InitialInterval: 2 * time.Second, Backoff: BackoffLinear, MaximumAttempts: 4}
	for attempt := 1; linear.HasAttemptsLeft(attempt); attempt++ {
		fmt.Print(linear.Delay(attempt), ";")
	}
	fmt.Println()
	// Output:
	// 1s;2s;4s;8s;16s;32s;1m4s;1m40s;1m40s;
	// 2s;4s;6s;
}
