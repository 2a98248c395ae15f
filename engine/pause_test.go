package engine

import (
	"reflect"
	"testing"
)

// Merge lays each non-zero field of an update over the options in force,
// and options that change nothing are nil, so that equal options compare
// equal wherever they come from (a record, an event's payload).
func TestActivityOptionsMerge(t *testing.T) {
	base := &ActivityOptions{StartToCloseTimeoutMS: 5000, RetryPolicy: &RetryPolicy{MaximumAttempts: 3, InitialIntervalMS: 100}}
	for _, tc := range []struct {
		name         string
		base, update *ActivityOptions
		want         *ActivityOptions
	}{
		{"nothing over nothing", nil, nil, nil},
		{"nothing over some", base, &ActivityOptions{}, base},
		{"a timeout over nothing", nil, &ActivityOptions{HeartbeatTimeoutMS: 10}, &ActivityOptions{HeartbeatTimeoutMS: 10}},
		{"an empty retry policy over nothing", nil, &ActivityOptions{RetryPolicy: &RetryPolicy{}}, nil},
		{"one field of the policy", base, &ActivityOptions{RetryPolicy: &RetryPolicy{MaximumAttempts: 9}},
			&ActivityOptions{StartToCloseTimeoutMS: 5000, RetryPolicy: &RetryPolicy{MaximumAttempts: 9, InitialIntervalMS: 100}}},
		{"every field", base, &ActivityOptions{ScheduleToCloseTimeoutMS: 1, ScheduleToStartTimeoutMS: 2, StartToCloseTimeoutMS: 3, HeartbeatTimeoutMS: 4,
			RetryPolicy: &RetryPolicy{InitialIntervalMS: 5, BackoffCoefficient: 1.5, MaximumIntervalMS: 6, MaximumAttempts: 7}},
			&ActivityOptions{ScheduleToCloseTimeoutMS: 1, ScheduleToStartTimeoutMS: 2, StartToCloseTimeoutMS: 3, HeartbeatTimeoutMS: 4,
				RetryPolicy: &RetryPolicy{InitialIntervalMS: 5, BackoffCoefficient: 1.5, MaximumIntervalMS: 6, MaximumAttempts: 7}}},
	} {
		got := tc.base.Merge(tc.update)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		// Through the event's payload, the same options come back.
		back, err := DecodeActivityOptions(EncodeActivityOptions(got))
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("%s: the payload gives %+v, %v", tc.name, back, err)
		}
	}
	if base.RetryPolicy.MaximumAttempts != 3 {
		t.Error("Merge changed the options it merged into")
	}
}

// The projection of a job's pause events: its own pause, the hold of its
// run's, and an activity task's attempt base and options.
func TestDerivePause(t *testing.T) {
	evs := []Event{
		{Seq: 1, Type: EventJobCreated},
		{Seq: 2, Type: EventWorkflowPaused, AtMS: 10, By: "ann", Reason: "audit"},
		{Seq: 3, Type: EventWorkflowPaused, Name: PauseParent},
		{Seq: 4, Type: EventActivityReset, Attempt: 3},
		{Seq: 5, Type: EventActivityOptionsUpdated, Payload: []byte(`{"start_to_close_timeout_ms":7}`)},
		{Seq: 6, Type: EventActivityReset, Step: "2", StepAttempt: 9}, // a step's: not the job's
	}
	p := DerivePause(evs)
	if p.Pause == nil || *p.Pause != (PauseInfo{AtMS: 10, By: "ann", Reason: "audit"}) || !p.HeldByParent || p.AttemptBase != 3 ||
		p.Options == nil || p.Options.StartToCloseTimeoutMS != 7 {
		t.Fatalf("projection %+v", p)
	}
	p = DerivePause(append(evs, Event{Seq: 7, Type: EventWorkflowUnpaused}, Event{Seq: 8, Type: EventWorkflowUnpaused, Name: PauseParent},
		Event{Seq: 9, Type: EventActivityOptionsUpdated}))
	if p.Pause != nil || p.HeldByParent || p.Options != nil {
		t.Fatalf("after the unpauses: %+v", p)
	}
}

// The payload of an activity_options_updated is the engine's own, but a
// store may hold anything: its decoder refuses what is not the options,
// and never panics.
func FuzzDecodeActivityOptions(f *testing.F) {
	for _, s := range []string{"", `{}`, `{"retry_policy":{"maximum_attempts":2}}`, `{"start_to_close_timeout_ms":-1}`, `[1]`, `{"retry_policy":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeActivityOptions(b)
		if err == nil && o != nil && o.IsZero() {
			t.Fatalf("%q decoded to options that change nothing, not nil", b)
		}
	})
}
