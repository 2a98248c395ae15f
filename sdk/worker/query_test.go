package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Tally counts signals and answers queries about the count.
func Tally(ctx workflow.Context) (int, error) {
	count := 0
	if err := workflow.SetQueryHandler(ctx, "count", func(plus int) (int, error) { return count + plus, nil }); err != nil {
		return 0, err
	}
	ch := workflow.GetSignalChannel(ctx, "add")
	for count < 3 {
		var n int
		ch.Receive(ctx, &n)
		count += n
	}
	return count, nil
}

func TestQueryWorkflow(t *testing.T) { forEachCache(t, testQueryWorkflow) }

func testQueryWorkflow(t *testing.T, cache int) {
	e := open(t)
	w := startWorker(t, e, "q", worker.Options{CacheSize: cache})
	w.RegisterWorkflow(Tally)
	c := client.NewWithOptions(service(t, e), client.Options{Querier: querier(t, e, "q", w)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "tally", TaskQueue: "q"}, Tally)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWorkflow(ctx, "tally", "", "add", 2); err != nil {
		t.Fatal(err)
	}
	// The query replays the history: it sees the signal once it is recorded.
	v, err := c.QueryWorkflow(ctx, "tally", "", "count", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := v.Get(&got); err != nil || got != 12 {
		t.Fatalf("query = %d, %v; want 12", got, err)
	}
	if _, err := c.QueryWorkflow(ctx, "tally", "", "nope"); !errors.Is(err, workflow.ErrUnknownQuery) {
		t.Fatalf("unknown query: %v", err)
	}
	if err := c.SignalWorkflow(ctx, "tally", "", "add", 1); err != nil {
		t.Fatal(err)
	}
	var final int
	if err := run.Get(ctx, &final); err != nil || final != 3 {
		t.Fatalf("result %d, %v", final, err)
	}
	// A client with no querier of its own: in process, the worker of the
	// same engine answers, as any Temporal client reaches any worker; over
	// HTTP the node asks the workers that serve its queries, as the test's
	// worker does.
	v, err = client.New(service(t, e)).QueryWorkflow(ctx, "tally", "", "count", 0)
	if err != nil {
		t.Fatalf("a client without a querier: %v (over HTTP: %v)", err, overHTTP())
	}
	if err := v.Get(&got); err != nil || got != 3 {
		t.Fatalf("a client without a querier: %d, %v; want 3", got, err)
	}
}

// A query of a run that no worker serves waits for the caller's deadline
// and fails with it, as in Temporal: in process (where it used to fail at
// once with ErrNoQuerier) and over HTTP (where it used to fail with a
// "query timed out" that was not the deadline's error).
func TestQueryWithoutWorkerWaitsForTheDeadline(t *testing.T) {
	e := open(t)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "unqueried", TaskQueue: "nobody"}, Tally); err != nil {
		t.Fatal(err)
	}
	const wait = 300 * time.Millisecond
	qctx, qcancel := context.WithTimeout(ctx, wait)
	defer qcancel()
	start := time.Now()
	_, err := c.QueryWorkflow(qctx, "unqueried", "", "count", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a query nobody answers: %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took < wait-50*time.Millisecond {
		t.Errorf("it failed after %v, before the caller's deadline of %v", took, wait)
	}
	if !overHTTP() && !errors.Is(err, client.ErrNoQuerier) {
		t.Errorf("in process the deadline's error also says why: %v, want it to match client.ErrNoQuerier", err)
	}
}
