package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// WaitsForGo waits for the signal "go" and returns its value.
func WaitsForGo(ctx workflow.Context) (string, error) {
	var v string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	return v, nil
}

// A batch signal through the client (Temporal's StartBatchOperation with a
// SignalOperation): every run the query matches gets the signal, encoded
// by the client's converter, and the batch is listed, described and, once
// completed, cannot be stopped.
func TestBatchOperationSignal(t *testing.T) {
	e := openEngine(t)
	c := client.New(e)
	w := worker.New(c, "q", worker.Options{})
	w.RegisterWorkflow(WaitsForGo)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var runs []client.WorkflowRun
	for _, id := range []string{"g1", "g2"} {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "q"}, WaitsForGo)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	b, err := c.StartBatchOperation(ctx, client.StartBatchOperationRequest{JobID: "sig", VisibilityQuery: `WorkflowType = "WaitsForGo"`,
		Operation: engine.BatchSignal, Signal: "go", SignalArg: "batch"})
	if err != nil || b.Total != 2 {
		t.Fatalf("start: %+v %v", b, err)
	}
	for _, r := range runs {
		var got string
		if err := r.Get(ctx, &got); err != nil || got != "batch" {
			t.Fatalf("run %s: %q %v", r.GetID(), got, err)
		}
	}
	for {
		changed := e.Committed()
		if b, err = c.DescribeBatchOperation(ctx, "sig"); err != nil {
			t.Fatal(err)
		}
		if b.State != engine.BatchRunning {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("batch still running: %+v", b)
		}
	}
	if b.State != engine.BatchCompleted || b.Done != 2 {
		t.Fatalf("describe: %+v", b)
	}
	page, err := c.ListBatchOperations(ctx, client.ListBatchOperationsRequest{})
	if err != nil || len(page.OperationInfo) != 1 || page.OperationInfo[0].ID != "sig" {
		t.Fatalf("list: %+v %v", page, err)
	}
	if err := c.StopBatchOperation(ctx, "sig", "late"); err == nil {
		t.Fatal("stopping a completed batch succeeded")
	}
}
