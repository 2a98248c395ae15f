package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The document "heddle workflow history -o json" prints replays against
// the run's code, as a Temporal user replays `temporal workflow show
// --output json`; changed code fails it.
func TestWorkflowHistoryDocumentReplays(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Greet", "-t", wfTestQueue, "-w", "greet-1", "--input", `"ada"`, "--wait")
	doc := w.ok("history", "greet-1", "-o", "json")

	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithName(wfGreet, "Greet")
	if err := r.ReplayWorkflowHistoryFromJSON(nil, strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := r.GetWorkflowResult("", &got); err != nil || got != "hello, ada" {
		t.Fatalf("replayed result %q, %v", got, err)
	}

	changed := worker.NewWorkflowReplayer()
	changed.RegisterWorkflowWithName(func(ctx workflow.Context, name string) (string, error) {
		return "", workflow.Sleep(ctx, time.Minute)
	}, "Greet")
	if err := changed.ReplayWorkflowHistoryFromJSON(nil, strings.NewReader(doc)); !errors.Is(err, worker.ErrReplayResultDiffers) {
		t.Fatalf("code that sleeps where the run returned replays the document: %v", err)
	}
}
