package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// UpdCounter keeps a total that updates "add" to, refusing negative amounts
// in its validator; each add takes a durable timer, so handlers block. It
// returns the total once signalled "done" and every handler finished.
func UpdCounter(ctx workflow.Context) (int, error) {
	total := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, "add", func(ctx workflow.Context, n int) (int, error) {
		if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
			return 0, err
		}
		if n == 13 {
			return 0, errors.New("unlucky")
		}
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

// TestUpdatesLikeTemporal: updates run their handler and return its result;
// a validator's rejection and a handler's error reach the caller; the
// decision and the outcome of an accepted update are in the history, and
// nothing of a rejected one; a repeated update id runs once.
func TestUpdatesLikeTemporal(t *testing.T) { forEachCache(t, testUpdatesLikeTemporal) }

// testUpdatesLikeTemporal runs with the worker's cache and without it, so
// that handlers also run again in replays.
func testUpdatesLikeTemporal(t *testing.T, cache int) {
	e := open(t)
	startWorker(t, e, "upd", worker.Options{CacheSize: cache}, func(w worker.Worker) { w.RegisterWorkflow(UpdCounter) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "counter-1", TaskQueue: "upd"}, UpdCounter)
	if err != nil {
		t.Fatal(err)
	}
	add := func(id string, n int, stage client.WorkflowUpdateStage) (client.WorkflowUpdateHandle, error) {
		return c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{UpdateID: id, WorkflowID: "counter-1", UpdateName: "add", Args: []any{n}, WaitForStage: stage})
	}
	h, err := add("a", 5, client.WorkflowUpdateStageCompleted)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := h.Get(ctx, &got); err != nil || got != 5 {
		t.Fatalf("first add: %d %v", got, err)
	}
	// Accepted returns before the handler's timer; Get waits for it.
	h, err = add("b", 7, client.WorkflowUpdateStageAccepted)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Get(ctx, &got); err != nil || got != 12 {
		t.Fatalf("second add: %d %v", got, err)
	}
	var rej *client.UpdateRejectedError
	if _, err := add("c", -1, client.WorkflowUpdateStageAccepted); !errors.As(err, &rej) || !strings.Contains(err.Error(), "negative amount") {
		t.Fatalf("a rejected update: %v", err)
	}
	h, err = add("d", 13, client.WorkflowUpdateStageAccepted)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Get(ctx, nil); err == nil || !strings.Contains(err.Error(), "unlucky") {
		t.Fatalf("a failed handler: %v", err)
	}
	// The same id again: the first outcome, the handler not run twice.
	if h, err = add("a", 5, client.WorkflowUpdateStageCompleted); err != nil {
		t.Fatal(err)
	}
	if err := h.Get(ctx, &got); err != nil || got != 5 {
		t.Fatalf("repeated update id: %d %v", got, err)
	}
	_, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{UpdateID: "f", WorkflowID: "counter-1", UpdateName: "subtract", Args: []any{1}})
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), "unknown update subtract") {
		t.Fatalf("an update without a handler: %v", err)
	}
	if _, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "counter-1"}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("no update name: %v", err)
	}
	if err := c.SignalWorkflow(ctx, "counter-1", "", "done", nil); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &got); err != nil || got != 12 {
		t.Fatalf("the workflow returned %d %v", got, err)
	}
	// The decisions and outcomes of accepted updates are recorded; the
	// rejected update left nothing, as in Temporal.
	hist, err := c.GetWorkflowHistory(ctx, "counter-1", "")
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]bool{}
	for _, ev := range hist {
		if strings.HasPrefix(ev.Step, "k:update:") {
			steps[ev.Step] = true
		}
	}
	for _, want := range []string{"k:update:a:decision", "k:update:a:completed", "k:update:d:completed"} {
		if !steps[want] {
			t.Errorf("history lacks %s (has %v)", want, steps)
		}
	}
	if steps["k:update:c:decision"] || steps["k:update:c:completed"] {
		t.Errorf("a rejected update is in the history (%v)", steps)
	}
}
