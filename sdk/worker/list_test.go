package worker_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// RetriedOnce fails its first run, which its retry policy follows with
// a second.
func RetriedOnce(ctx workflow.Context) (string, error) {
	if workflow.GetInfo(ctx).Attempt == 1 {
		return "", errors.New("first run fails")
	}
	return "second run", nil
}

// TestListWorkflowShowsChains: the runs of a continue-as-new chain and of a
// workflow retry are listed and linked, newest first, with Temporal's
// statuses (ContinuedAsNew, not a bare Completed), pages go both ways, a
// filter in Temporal's syntax and the count agree: embedded, over HTTP and
// on a three-node cluster (HEDDLE_SDK_BACKEND).
func TestListWorkflowShowsChains(t *testing.T) {
	e := open(t)
	startWorker(t, e, "lists", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(Counter)
		w.RegisterWorkflow(RetriedOnce)
	})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "chain", TaskQueue: "lists"}, Counter, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := run.Get(ctx, &n); err != nil || n != 3 {
		t.Fatalf("chain: %d, %v", n, err)
	}
	retried, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "retried", TaskQueue: "lists",
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 3}}, RetriedOnce)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := retried.Get(ctx, &s); err != nil || s != "second run" {
		t.Fatalf("retried: %q, %v", s, err)
	}

	// The four runs of the chain, newest first, each linked to the next.
	res, err := c.ListWorkflow(ctx, &client.ListWorkflowExecutionsRequest{Query: `WorkflowId = "chain"`})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []client.WorkflowExecutionStatus
	for i, x := range res.Executions {
		statuses = append(statuses, x.Status)
		if x.Execution.WorkflowId != "chain" || x.Type.Name != "Counter" || x.TaskQueue != "lists" || x.CloseTime.IsZero() || x.HistoryLength == 0 {
			t.Errorf("run %d: %+v %+v", i, x, x.Execution)
		}
		if i > 0 {
			newer := res.Executions[i-1].Job
			if x.Job.NextRunID != newer.ID || newer.PrevRunID != x.Job.ID || x.Job.NextRunReason != engine.ReasonContinuedAsNew {
				t.Errorf("run %d (%d) is not linked to the run after it (%d): %+v", i, x.Job.ID, newer.ID, x.Job)
			}
			if x.Execution.RunId != strconv.FormatUint(uint64(x.Job.ID), 10) || x.StartTime.After(time.UnixMilli(newer.CreatedMS)) {
				t.Errorf("run %d: run id %q, started %v", i, x.Execution.RunId, x.StartTime)
			}
		}
	}
	want := []client.WorkflowExecutionStatus{"Completed", "ContinuedAsNew", "ContinuedAsNew", "ContinuedAsNew"}
	if !slices.Equal(statuses, want) || res.NextPageToken != nil || res.PrevPageToken != nil {
		t.Fatalf("the chain's runs: %v (next %q prev %q), want %v", statuses, res.NextPageToken, res.PrevPageToken, want)
	}
	last := res.Executions[0].Job
	if last.PrevRunID == 0 || last.NextRunID != 0 {
		t.Errorf("the chain's last run: %+v", last)
	}

	// One run a page, forward to the oldest and back.
	var forward, back []string
	req := &client.ListWorkflowExecutionsRequest{Query: `WorkflowId = "chain"`, PageSize: 1}
	for {
		p, err := c.ListWorkflow(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		forward = append(forward, p.Executions[0].Execution.RunId)
		if p.NextPageToken == nil {
			req.NextPageToken = p.PrevPageToken
			break
		}
		req.NextPageToken = p.NextPageToken
	}
	for req.NextPageToken != nil {
		p, err := c.ListWorkflow(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, p.Executions[0].Execution.RunId)
		req.NextPageToken = p.PrevPageToken
	}
	slices.Reverse(back)
	if len(forward) != 4 || !slices.Equal(back, forward[:3]) {
		t.Fatalf("pages forward %v, back %v", forward, back)
	}

	// The retry: the failed first run names the second.
	res, err = c.ListWorkflow(ctx, &client.ListWorkflowExecutionsRequest{Query: `WorkflowId = "retried" ORDER BY StartTime ASC`})
	if err != nil || len(res.Executions) != 2 {
		t.Fatalf("the retried runs: %+v, %v", res, err)
	}
	first, second := res.Executions[0], res.Executions[1]
	if first.Status != "Failed" || first.Job.NextRunID != second.Job.ID || first.Job.NextRunReason != engine.ReasonRetried ||
		second.Status != "Completed" || second.Job.PrevRunID != first.Job.ID {
		t.Fatalf("the retried runs: %s %+v, %s %+v", first.Status, first.Job, second.Status, second.Job)
	}

	// Temporal's filter and the count.
	for _, tc := range []struct {
		query string
		n     int64
	}{
		{`WorkflowType = "Counter" AND ExecutionStatus = "ContinuedAsNew"`, 3},
		{`WorkflowType = "Counter" AND ExecutionStatus = "Completed"`, 1},
		{`ExecutionStatus = "Failed" OR WorkflowId STARTS_WITH "cha"`, 5},
		{`(WorkflowType = "Counter" OR WorkflowType = "RetriedOnce") AND ExecutionStatus != "Running"`, 6},
		{`ExecutionStatus = "Running"`, 0},
	} {
		got, err := c.CountWorkflow(ctx, &client.CountWorkflowExecutionsRequest{Query: tc.query})
		if err != nil || got.Count != tc.n {
			t.Errorf("count %s: %+v, %v; want %d", tc.query, got, err, tc.n)
		}
		page, err := c.ListWorkflow(ctx, &client.ListWorkflowExecutionsRequest{Query: tc.query})
		if err != nil || int64(len(page.Executions)) != tc.n {
			t.Errorf("list %s: %d runs, %v; want %d", tc.query, len(page.Executions), err, tc.n)
		}
	}
	if _, err := c.ListWorkflow(ctx, &client.ListWorkflowExecutionsRequest{Query: `WorkflowType = `}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Errorf("a bad query: %v", err)
	}
}
