package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// unreachableBeats is a service whose heartbeats never get through, as
// when the node holding them is paused.
type unreachableBeats struct{ engine.Service }

func (unreachableBeats) Heartbeat(context.Context, engine.Heartbeat) (*engine.HeartbeatResult, error) {
	return nil, errors.New("node unreachable")
}

var lapse struct {
	started   chan struct{}
	cancelled chan struct{}
}

// HoldUntilCancelled runs until its context ends.
func HoldUntilCancelled(ctx context.Context) error {
	close(lapse.started)
	<-ctx.Done()
	close(lapse.cancelled)
	return ctx.Err()
}

func LapseWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour})
	return workflow.ExecuteActivity(ctx, HoldUntilCancelled).Get(ctx, nil)
}

// When no lease renewal succeeds for nine tenths of the lease, the worker
// stops the job's turn by its own clock: the running activity is
// cancelled, nothing is committed, and the error says the lease lapsed.
func TestLeaseLapseStopsTheTurn(t *testing.T) {
	lapse.started, lapse.cancelled = make(chan struct{}), make(chan struct{})
	e, err := embedded.Open(embedded.Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	var mu sync.Mutex
	var errs []error
	w := worker.New(client.New(unreachableBeats{e}), "lapse", worker.Options{Clock: clk, LeaseTTL: 10 * time.Second,
		OnError: func(_ engine.JobID, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	w.RegisterWorkflow(LapseWorkflow)
	w.RegisterActivity(HoldUntilCancelled)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Bounded: if the lease never lapsed, the activity never ends.
		sctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
		defer stop()
		if err := w.Shutdown(sctx); err != nil {
			t.Errorf("stopping the worker: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client.New(e).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "lapse", TaskQueue: "lapse"}, LapseWorkflow); err != nil {
		t.Fatal(err)
	}
	<-lapse.started
	// Heartbeats fail; until nine tenths of the lease (8.5 s of 10 s here)
	// have passed the activity keeps running.
	// The clock moves in steps shorter than a beat period, as a running
	// machine's does: one long jump would look like the worker having been
	// paused itself, which earns its renewals a period of grace.
	for range 17 {
		clk.Advance(500 * time.Millisecond)
		time.Sleep(2 * time.Millisecond) // let the heartbeat loop see each step
	}
	select {
	case <-lapse.cancelled:
		t.Fatal("the activity was cancelled while the lease could still be valid")
	default:
	}
	for {
		clk.Advance(100 * time.Millisecond)
		select {
		case <-lapse.cancelled:
		case <-time.After(10 * time.Millisecond):
			continue
		case <-ctx.Done():
			t.Fatal("the activity was never cancelled after the lease lapsed")
		}
		break
	}
	j, err := e.Describe(ctx, engine.Target{WorkflowID: "lapse"})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := e.History(ctx, j.ID, 0, engine.MaxPage)
	for _, ev := range page.Events {
		if ev.Commit {
			t.Fatalf("a step was committed after the lease lapsed: %+v", ev)
		}
	}
	// The stop is reported as a lapsed lease.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		found := false
		for _, err := range errs {
			found = found || errors.Is(err, worker.ErrLeaseLapsed)
		}
		mu.Unlock()
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("errors %v, want one matching ErrLeaseLapsed", errs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
