package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// AddCounter adds each "add" update's argument to its count and returns the
// new count; the signal "stop" ends it with the count.
func AddCounter(ctx workflow.Context, start int) (int, error) {
	n := start
	if err := workflow.SetUpdateHandler(ctx, "add", func(ctx workflow.Context, by int) (int, error) {
		if by < 0 {
			return 0, errors.New("negative")
		}
		n += by
		return n, nil
	}); err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "stop").Receive(ctx, nil)
	return n, nil
}

// startClient returns a client of a fresh engine and a running worker of
// queue registered by reg.
func startClient(t *testing.T, queue string, reg func(worker.Worker)) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{Service: openEngine(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w := worker.New(c, queue, worker.Options{})
	reg(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return c
}

// UpdateWithStartWorkflow starts the run when there is none and updates
// the open one when there is, as Temporal's USE_EXISTING; the operation's
// Get gives the run; GetWorkflowUpdateHandle finds an update's outcome by
// its id.
func TestUpdateWithStartLikeTemporal(t *testing.T) {
	c := startClient(t, "uws", func(w worker.Worker) { w.RegisterWorkflow(AddCounter) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(updateID string, by int) (client.WithStartWorkflowOperation, client.WorkflowUpdateHandle, error) {
		op := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: "counter", TaskQueue: "uws"}, AddCounter, 10)
		h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: op,
			UpdateOptions: client.UpdateWorkflowOptions{UpdateID: updateID, UpdateName: "add", Args: []any{by},
				WaitForStage: client.WorkflowUpdateStageCompleted}})
		return op, h, err
	}
	op, h, err := send("u1", 1)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := h.Get(ctx, &got); err != nil || got != 11 {
		t.Fatalf("first update = %d, %v; want 11 (started with 10)", got, err)
	}
	first, err := op.Get(ctx)
	if err != nil || first.GetID() != "counter" || h.RunID() != first.GetRunID() {
		t.Fatalf("op.Get = %v, %v; handle run %s", first, err, h.RunID())
	}
	op2, h2, err := send("u2", 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Get(ctx, &got); err != nil || got != 16 {
		t.Fatalf("second update = %d, %v; want 16 (the open run, not a new one)", got, err)
	}
	if second, _ := op2.Get(ctx); second.GetRunID() != first.GetRunID() {
		t.Fatalf("the second call started run %s, want the open run %s", second.GetRunID(), first.GetRunID())
	}
	// An operation runs once.
	if _, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: op2,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: "add", Args: []any{1}}}); !errors.Is(err, client.ErrWithStartOperationUsed) {
		t.Fatalf("reused operation: %v", err)
	}
	// A handler's error is the handle's Get's, as in Temporal.
	if _, h, err := send("u3", -1); err != nil || h.Get(ctx, &got) == nil {
		t.Fatalf("a failing update: %v, Get's error nil", err)
	}

	// A handle by id, with and without the run id.
	for _, runID := range []string{"", first.GetRunID()} {
		h := c.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: "counter", RunID: runID, UpdateID: "u1"})
		if err := h.Get(ctx, &got); err != nil || got != 11 || h.UpdateID() != "u1" {
			t.Fatalf("handle of u1 (run %q) = %d, %v", runID, got, err)
		}
	}
	if err := c.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: "nobody", UpdateID: "u1"}).Get(ctx, &got); !errors.Is(err, engine.ErrUnknownJob) {
		t.Fatalf("handle of an unknown workflow: %v", err)
	}
	if err := c.SignalWorkflow(ctx, "counter", "", "stop", nil); err != nil {
		t.Fatal(err)
	}
	if err := first.Get(ctx, &got); err != nil || got != 16 {
		t.Fatalf("run = %d, %v", got, err)
	}
}

// Options UpdateWithStartWorkflow refuses before doing anything.
func TestUpdateWithStartRefuses(t *testing.T) {
	c := startClient(t, "uws-bad", func(w worker.Worker) { w.RegisterWorkflow(AddCounter) })
	ctx := context.Background()
	for name, o := range map[string]client.UpdateWithStartWorkflowOptions{
		"no operation": {UpdateOptions: client.UpdateWorkflowOptions{UpdateName: "add"}},
		"no start id": {StartWorkflowOperation: c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{TaskQueue: "uws-bad"}, AddCounter),
			UpdateOptions: client.UpdateWorkflowOptions{UpdateName: "add"}},
		"a run id": {StartWorkflowOperation: c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: "x", TaskQueue: "uws-bad"}, AddCounter),
			UpdateOptions: client.UpdateWorkflowOptions{UpdateName: "add", RunID: "1"}},
		"another workflow id": {StartWorkflowOperation: c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: "x", TaskQueue: "uws-bad"}, AddCounter),
			UpdateOptions: client.UpdateWorkflowOptions{UpdateName: "add", WorkflowID: "y"}},
	} {
		if _, err := c.UpdateWithStartWorkflow(ctx, o); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if page, err := c.ListWorkflows(ctx, engine.ListQuery{}); err != nil || len(page.Jobs) != 0 {
		t.Fatalf("refused calls started runs: %v, %v", page, err)
	}
}

var pendingTokens = make(chan []byte, 4)

func PendingActivity(ctx context.Context) (string, error) {
	pendingTokens <- activity.GetInfo(ctx).TaskToken
	return "", activity.ErrResultPending
}

func PendingWorkflow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "hb-acts", StartToCloseTimeout: time.Minute})
	var out string
	err := workflow.ExecuteActivity(ctx, PendingActivity).Get(ctx, &out)
	return out, err
}

// RecordActivityHeartbeat(ByID) heartbeats a parked activity: the details
// land in the task's history, it goes on waiting, a cancelled activity
// answers with a CanceledError and an ended one with ErrStaleAttempt.
func TestRecordActivityHeartbeatOfAPendingActivity(t *testing.T) {
	e := openEngine(t)
	c, err := client.Dial(client.Options{Service: e})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for queue, reg := range map[string]func(worker.Worker){
		"hb-wf":   func(w worker.Worker) { w.RegisterWorkflow(PendingWorkflow) },
		"hb-acts": func(w worker.Worker) { w.RegisterActivity(PendingActivity) },
	} {
		w := worker.New(c, queue, worker.Options{})
		reg(w)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(id string) (client.WorkflowRun, []byte) {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "hb-wf"}, PendingWorkflow)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case tok := <-pendingTokens:
			return run, tok
		case <-ctx.Done():
			t.Fatal("the activity did not run")
			return nil, nil
		}
	}
	run, tok := start("hb-1")
	if err := c.RecordActivityHeartbeat(ctx, tok, "half", 50); err != nil {
		t.Fatal(err)
	}
	if err := c.RecordActivityHeartbeatByID(ctx, "", "hb-1", "", "1", "most", 90); err != nil {
		t.Fatal(err)
	}
	if err := c.RecordActivityHeartbeatByID(ctx, "billing", "hb-1", "", "1"); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a namespace: %v", err)
	}
	hist, err := c.GetWorkflowHistory(ctx, "hb-1/"+run.GetRunID()+"/1", "")
	if err != nil {
		t.Fatal(err)
	}
	var beats []string
	for _, ev := range hist {
		if ev.Type == engine.EventSignalReceived && ev.Name == client.AsyncHeartbeatSignal {
			beats = append(beats, string(ev.Payload))
		}
	}
	if len(beats) != 2 || beats[0] != `["half",50]` || beats[1] != `["most",90]` {
		t.Fatalf("heartbeats in the task's history: %q", beats)
	}
	if err := c.CompleteActivity(ctx, tok, "done", nil); err != nil {
		t.Fatal(err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "done" {
		t.Fatalf("result %q, %v (heartbeats must not end the wait)", out, err)
	}
	if err := c.RecordActivityHeartbeat(ctx, tok); !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("a heartbeat after completion: %v", err)
	}

	run, tok = start("hb-2")
	if err := c.CancelWorkflow(ctx, "hb-2", ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.RecordActivityHeartbeat(ctx, tok)
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a heartbeat of a cancelled activity: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := run.Get(ctx, &out); !temporal.IsCanceledError(err) {
		t.Fatalf("the cancelled run: %v", err)
	}
}
