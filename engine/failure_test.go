package engine

import (
	"errors"
	"testing"
)

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

func FuzzDecodeFailure(f *testing.F) {
	for _, b := range [][]byte{
		EncodeTimeoutFailure(TimeoutScheduleToStart, "late"),
		EncodeTerminatedFailure("ops"),
		[]byte(`{"type":"E","message":"m","nonRetryable":false}`),
		[]byte(`{"type":1}`), []byte(`null`), []byte(`{`), {},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := DecodeFailure(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeFailure error %v is not ErrCorrupt", err)
			}
			return
		}
		b := encodeFailure(*fl)
		fl2, err := DecodeFailure(b)
		if err != nil || *fl2 != *fl {
			t.Fatalf("round trip of %+v gave %+v, %v", *fl, fl2, err)
		}
	})
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
