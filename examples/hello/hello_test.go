package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
)

// testEnv is an in-memory engine and a worker for Order on one manual
// clock: durable timers fire only when the test moves the clock.
type testEnv struct {
	e     *embedded.Engine
	c     client.Client
	clock *clock.Manual
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	e, err := embedded.Open(embedded.Config{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(e)
	w := worker.New(c, "orders", worker.Options{Clock: clk})
	w.RegisterWorkflow(Order)
	w.RegisterActivity(Charge)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := errors.Join(w.Shutdown(context.Background()), e.Close()); err != nil {
			t.Error(err)
		}
	})
	return &testEnv{e: e, c: c, clock: clk}
}

// waitForTimer blocks until the run of id waits on a durable timer, so
// that moving the clock fires it. It wakes on the engine's commits rather
// than polling.
func (env *testEnv) waitForTimer(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	for {
		committed := env.e.Committed() // taken before the read, so no commit is missed
		j, err := env.c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == engine.StatusWaiting && len(j.Timers) > 0 {
			return
		}
		select {
		case <-committed:
		case <-ctx.Done():
			t.Fatalf("run %s never waited on a timer; it is %s", id, j.Status)
		}
	}
}

// TestOrderApproved runs the workflow through its activity, its signal and
// its timer, with the timer's second passing on the manual clock.
func TestOrderApproved(t *testing.T) {
	env := newTestEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := env.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-1", TaskQueue: "orders"}, Order, 4200)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.c.SignalWorkflow(ctx, "order-1", "", "approved", true); err != nil {
		t.Fatal(err)
	}
	env.waitForTimer(t, ctx, "order-1")
	env.clock.Advance(time.Second) // the durable timer is due: the scheduler fires it
	var receipt string
	if err := run.Get(ctx, &receipt); err != nil {
		t.Fatal(err)
	}
	if want := "charged 4200 cents (idempotency key order-1/1/1)"; receipt != want {
		t.Errorf("receipt %q, want %q", receipt, want)
	}
}

// TestOrderRejected checks the failure a rejected order ends with: its type
// survives the trip through the history.
func TestOrderRejected(t *testing.T) {
	env := newTestEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := env.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-2", TaskQueue: "orders"}, Order, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.c.SignalWorkflow(ctx, "order-2", "", "approved", false); err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != "NotApproved" {
		t.Fatalf("Get returned %v, want a NotApproved application error", err)
	}
}

// TestOrderReplays exports a finished run's history and replays it against
// the current code: the check that a change to Order keeps the runs in
// flight working. In a real project the histories are files in testdata/,
// exported once from production with ExportHistoryJSON.
func TestOrderReplays(t *testing.T) {
	env := newTestEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := env.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-3", TaskQueue: "orders"}, Order, 700)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.c.SignalWorkflow(ctx, "order-3", "", "approved", true); err != nil {
		t.Fatal(err)
	}
	env.waitForTimer(t, ctx, "order-3")
	env.clock.Advance(time.Second)
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	history, err := env.c.GetWorkflowHistory(ctx, "order-3", "")
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := worker.ExportHistoryJSON(&file, history); err != nil {
		t.Fatal(err)
	}
	recorded, err := worker.ReadHistoryJSON(&file)
	if err != nil {
		t.Fatal(err)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(Order)
	if err := r.ReplayWorkflowHistory(nil, recorded); err != nil {
		t.Fatalf("the current code does not replay a run it recorded: %v", err)
	}
}
