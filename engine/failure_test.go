package engine

import "testing"

// The failure payloads are the SDK's format, byte for byte, with
// timeout_type added for timeouts.
func TestFailurePayloadFormat(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{string(EncodeTimeoutFailure(TimeoutWorkflowExecution, "late")),
			`{"type":"TimeoutError","message":"late","nonRetryable":true,"timeout_type":"WorkflowExecution"}`},
		{string(EncodeTimeoutFailure(TimeoutHeartbeat, "no beat")),
			`{"type":"TimeoutError","message":"no beat","nonRetryable":true,"timeout_type":"Heartbeat"}`},
		{string(EncodeTerminatedFailure("")), `{"type":"TerminatedError","message":"terminated","nonRetryable":true}`},
		{string(EncodeTerminatedFailure("ops")), `{"type":"TerminatedError","message":"terminated: ops","nonRetryable":true}`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
	// The SDK's own failures decode too (no timeout type).
	f, err := DecodeFailure([]byte(`{"type":"MyError","message":"m","nonRetryable":false,"details":"x"}`))
	if err != nil || f.Type != "MyError" || f.Message != "m" || f.NonRetryable || f.TimeoutType != "" {
		t.Fatalf("DecodeFailure = %+v, %v", f, err)
	}
	if _, err := DecodeFailure([]byte(`{"type":`)); !errorsIs(err, ErrCorrupt) {
		t.Fatalf("a truncated failure decoded: %v", err)
	}
}

// Each deadline names its timeout type; an activity task's execution
// deadline is its schedule-to-close timeout.
func TestTimeoutFailureTypes(t *testing.T) {
	wf := &Job{ID: 1, WorkflowID: "w", Type: "order"}
	act := &Job{ID: 2, WorkflowID: "a", Type: ActivityTypePrefix + "charge"}
	tests := []struct {
		job    *Job
		reason string
		want   TimeoutType
	}{
		{wf, ReasonExecutionTimeout, TimeoutWorkflowExecution},
		{wf, ReasonRunTimeout, TimeoutWorkflowRun},
		{wf, ReasonScheduleToStart, TimeoutScheduleToStart},
		{act, ReasonExecutionTimeout, TimeoutScheduleToClose},
		{act, ReasonScheduleToStart, TimeoutScheduleToStart},
	}
	for _, tt := range tests {
		f, err := DecodeFailure(timeoutFailure(tt.job, tt.reason))
		if err != nil || f.Type != FailureTimeout || f.TimeoutType != tt.want || !f.NonRetryable {
			t.Errorf("%s of %s: %+v, %v; want %s", tt.reason, tt.job.Type, f, err, tt.want)
		}
	}
}
