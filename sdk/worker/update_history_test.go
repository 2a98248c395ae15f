package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// updateV1History was recorded by heddle before rejected updates left the
// history: it holds, besides two accepted updates, the request signal and
// the rejection marker of update "minus". It must never be recorded again
// (TestRecordHistories leaves it alone): it stands for the histories that
// stores written by earlier versions still hold.
var updateV1History = filepath.Join("testdata", "update_v1.json")

// ReplayTally sums what "add" updates bring, refusing negative amounts in
// the validator, until it is signalled "done".
func ReplayTally(ctx workflow.Context) (int, error) {
	total := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, "add", func(ctx workflow.Context, n int) (int, error) {
		total += n
		return total, nil
	}, workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, n int) error {
		if n < 0 {
			return errors.New("negative amount")
		}
		return nil
	}})
	if err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "done").Receive(ctx, nil)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return 0, err
	}
	return total, nil
}

// recordTally runs ReplayTally with the updates add 2, add -1 (refused),
// add 3 and returns its history.
func recordTally(t *testing.T) []engine.Event {
	t.Helper()
	e := open(t)
	startWorker(t, e, "tally", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(ReplayTally) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "tally-1", TaskQueue: "tally"}, ReplayTally)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		id string
		n  int
	}{{"plus", 2}, {"minus", -1}, {"more", 3}} {
		_, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{UpdateID: u.id, WorkflowID: "tally-1", UpdateName: "add",
			Args: []any{u.n}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if (u.n < 0) != (err != nil) {
			t.Fatalf("update %s: %v", u.id, err)
		}
	}
	if err := c.SignalWorkflow(ctx, "tally-1", "", "done", nil); err != nil {
		t.Fatal(err)
	}
	var got int
	if err := run.Get(ctx, &got); err != nil || got != 5 {
		t.Fatalf("the tally returned %d, %v", got, err)
	}
	hist, err := c.GetWorkflowHistory(ctx, "tally-1", "")
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// TestRecordUpdateV1History wrote testdata/update_v1.json once; it is kept
// so that the file's making stays readable, and runs only when asked to.
func TestRecordUpdateV1History(t *testing.T) {
	if os.Getenv("HEDDLE_RECORD_UPDATE_V1") != "1" {
		t.Skip("testdata/update_v1.json stands for the histories of earlier versions: it is not recorded again")
	}
	writeHistory(t, updateV1History, recordTally(t))
}

// A history of an earlier version, with a rejected update's request and
// rejection in it, replays clean: the recorded rejection stands, the
// validator is not run again, and the handler runs for the accepted
// updates only.
func TestReplayUpdateV1History(t *testing.T) {
	data, err := os.ReadFile(updateV1History)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := worker.ReadHistoryJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var rejection, request bool
	for _, ev := range hist {
		if ev.Type == engine.EventMarkerRecorded && ev.Step == "k:"+workflow.UpdateMarkerKey("minus", "decision") {
			var o workflow.UpdateOutcome
			rejection = json.Unmarshal(ev.Payload, &o) == nil && o.Failure != nil
		}
		if ev.Type == engine.EventSignalReceived && ev.Name == workflow.UpdateSignalName && strings.Contains(string(ev.Payload), `"minus"`) {
			request = true
		}
	}
	if !rejection || !request {
		t.Fatalf("%s lacks the rejected update (request %v, rejection %v)", updateV1History, request, rejection)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(ReplayTally)
	if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatal(err)
	}
}
