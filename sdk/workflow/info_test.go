package workflow

import (
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
)

// GetContinueAsNewSuggested says yes once the history reaches Temporal's
// server defaults: 4096 events or 4 MiB.
func TestContinueAsNewSuggested(t *testing.T) {
	for _, tc := range []struct {
		events uint64
		bytes  int64
		want   bool
	}{
		{0, 0, false},
		{ContinueAsNewSuggestedEvents - 1, ContinueAsNewSuggestedBytes - 1, false},
		{ContinueAsNewSuggestedEvents, 0, true},
		{10, ContinueAsNewSuggestedBytes, true},
	} {
		i := Info{history: func() (uint64, int64) { return tc.events, tc.bytes }}
		if got := i.GetContinueAsNewSuggested(); got != tc.want {
			t.Errorf("%d events, %d bytes: suggested %v, want %v", tc.events, tc.bytes, got, tc.want)
		}
		if i.GetCurrentHistoryLength() != int(tc.events) || i.GetCurrentHistorySize() != int(tc.bytes) {
			t.Errorf("length %d size %d, want %d and %d", i.GetCurrentHistoryLength(), i.GetCurrentHistorySize(), tc.events, tc.bytes)
		}
	}
	if (&Info{}).GetContinueAsNewSuggested() || (&Info{}).GetCurrentHistoryLength() != 0 {
		t.Error("an Info outside a run suggests or counts")
	}
}

// The history length workflow code sees is the events applied when it
// runs: the same live and in a replay, so code may branch on it.
func TestHistoryLengthIsDeterministic(t *testing.T) {
	wf := func(ctx Context) (string, error) {
		i := GetInfo(ctx)
		out := fmt.Sprint(i.GetCurrentHistoryLength())
		for range 3 {
			if err := Sleep(ctx, time.Second); err != nil {
				return "", err
			}
			out += fmt.Sprintf(" %d/%v", i.GetCurrentHistoryLength(), i.GetCurrentHistorySize() > 0)
		}
		return out, nil
	}
	w := newTestWorker(t)
	res, err := w.drive(wf)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeString(t, res); got != "1 3/false 5/false 7/false" {
		t.Fatalf("lengths %q", got)
	}
	w.append(engine.Event{Type: engine.EventJobCompleted, Payload: res})
	again, err := w.replayer().drive(wf)
	if err != nil || string(again) != string(res) {
		t.Fatalf("replay gave %s, %v; live %s", again, err, res)
	}
}

// Info carries Temporal's names and heddle's, and the parent of a child.
func TestInfoOf(t *testing.T) {
	i := infoOf(sdkhook.WorkflowInfo{WorkflowID: "c", RunID: "9", WorkflowType: "Ship", TaskQueue: "q", ParentWorkflowID: "p", ParentRunID: "4"})
	if i.WorkflowExecution != (Execution{ID: "c", RunID: "9"}) || i.WorkflowType.Name != "Ship" || i.TaskQueueName != "q" ||
		i.Attempt != 1 || i.Namespace != "default" || i.WorkflowID != "c" || i.RunID != "9" || i.TaskQueue != "q" {
		t.Fatalf("info %+v", i)
	}
	if p := i.ParentWorkflowExecution; p == nil || *p != (Execution{ID: "p", RunID: "4"}) {
		t.Fatalf("parent %+v", p)
	}
	if infoOf(sdkhook.WorkflowInfo{WorkflowID: "top", Attempt: 3}).ParentWorkflowExecution != nil {
		t.Fatal("a workflow started by a client has a parent")
	}
}
