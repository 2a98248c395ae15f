package testsuite_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Describe reports what activity.GetInfo says and heartbeats once.
func Describe(ctx context.Context, what string) (string, error) {
	info := activity.GetInfo(ctx)
	activity.RecordHeartbeat(ctx, "half")
	return what + " " + info.ActivityType.Name, nil
}

// Refuse fails for good.
func Refuse(context.Context) error {
	return workflow.NewApplicationError("no", "Refused", true)
}

// TestActivityEnvironment runs one try of an activity in a real worker:
// its result, its info, its heartbeats, and its failure as a workflow
// would see it.
func TestActivityEnvironment(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(Describe)
	v, err := env.ExecuteActivity(Describe, "run")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := v.Get(&got); err != nil || got != "run Describe" {
		t.Fatalf("result %q, %v", got, err)
	}
	// The same environment runs more activities, registering functions it
	// is given.
	_, err = env.ExecuteActivity(Refuse)
	var ae *workflow.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "Refused" || !ae.NonRetryable() || !errors.As(err, new(*workflow.ActivityError)) {
		t.Fatalf("ExecuteActivity(Refuse) = %v, want the activity's failure", err)
	}
	v, err = env.ExecuteActivity("Describe", "again")
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(&got); err != nil || got != "again Describe" {
		t.Fatalf("result %q, %v", got, err)
	}
	// A failure is not retried.
	calls := 0
	env.RegisterActivityWithOptions(func(context.Context) error { calls++; return errors.New("transient") },
		activity.RegisterOptions{Name: "Transient"})
	if _, err := env.ExecuteActivity("Transient"); err == nil || calls != 1 {
		t.Fatalf("ExecuteActivity(Transient) = %v after %d calls, want one failed try", err, calls)
	}
	// An activity that returns only an error has no value.
	env.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "Nothing"})
	v, err = env.ExecuteActivity("Nothing")
	if err != nil || v.HasValue() {
		t.Fatalf("ExecuteActivity(Nothing) = %v, %v; want no value", v, err)
	}
}

// ReverseBytes returns its bytes reversed.
func ReverseBytes(_ context.Context, b []byte) ([]byte, error) {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out, nil
}

// EchoMessage returns its message.
func EchoMessage(_ context.Context, m *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	return m, nil
}

// The activity environment hands a []byte and a protobuf message to the
// activity and back with the encodings Temporal's converter gives them
// (binary/plain, json/protobuf), as a workflow would.
func TestActivityEnvironmentBytesAndProtobuf(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	v, err := env.ExecuteActivity(ReverseBytes, []byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	if err := v.Get(&b); err != nil || !bytes.Equal(b, []byte{3, 2, 1}) {
		t.Fatalf("bytes %v, %v", b, err)
	}
	if ps := converter.DataOf(v); !strings.Contains(string(ps), "YmluYXJ5L3BsYWlu") { // "binary/plain"
		t.Fatalf("the result is stored as %s, not as a binary/plain payload", ps)
	}
	v, err = env.ExecuteActivity(EchoMessage, wrapperspb.String("snake_case"))
	if err != nil {
		t.Fatal(err)
	}
	var m *wrapperspb.StringValue
	if err := v.Get(&m); err != nil || m.GetValue() != "snake_case" {
		t.Fatalf("message %v, %v", m, err)
	}
}
