package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// startRuns creates n runs of type typ and returns their ids.
func startRuns(t *testing.T, e *Engine, typ string, n int) []engine.JobID {
	t.Helper()
	var ids []engine.JobID
	for i := range n {
		r, err := e.Create(bg, engine.CreateJob{WorkflowID: fmt.Sprintf("%s-%d", typ, i), Type: typ, Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Job)
	}
	return ids
}

// waitBatch waits (on commits, not on a clock) until batch id has ended.
func waitBatch(t *testing.T, e *Engine, id string) *engine.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	for {
		changed := e.Committed()
		b, err := e.DescribeBatch(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if b.State != engine.BatchRunning {
			return b
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("batch %q still running: %+v", id, b)
		}
	}
}

// countEvents counts the events of type typ in job's history.
func countEvents(t *testing.T, e *Engine, job engine.JobID, typ engine.EventType) int {
	t.Helper()
	n := 0
	viewOK(t, e.DB(), func(r *storage.Reader) error {
		evs, _, err := machine.ReadHistory(r, job, 0, 0)
		for _, ev := range evs {
			if ev.Type == typ {
				n++
			}
		}
		return err
	})
	return n
}

func verifyOK(t *testing.T, e *Engine) {
	t.Helper()
	viewOK(t, e.DB(), func(r *storage.Reader) error {
		for _, err := range machine.Verify(r, 10) {
			t.Errorf("verify: %v", err)
		}
		return nil
	})
}

// TestBatchOperations runs each operation over the runs a query matches:
// every matching run is acted on once, the others and the runs started
// after the batch are not, and the record counts them.
func TestBatchOperations(t *testing.T) {
	for _, tc := range []struct {
		op    engine.BatchOperation
		spec  engine.BatchSpec
		event engine.EventType
	}{
		{engine.BatchTerminate, engine.BatchSpec{Reason: "cleanup"}, engine.EventJobTerminated},
		{engine.BatchCancel, engine.BatchSpec{Reason: "cleanup"}, engine.EventCancelRequested},
		{engine.BatchSignal, engine.BatchSpec{SignalName: "poke", SignalPayload: []byte(`1`)}, engine.EventSignalReceived},
	} {
		t.Run(string(tc.op), func(t *testing.T) {
			e, err := Open(Config{InMemory: true, BatchRunsPerSecond: 100000})
			if err != nil {
				t.Fatal(err)
			}
			defer closeOK(t, e)
			hit := startRuns(t, e, "order", 250)
			miss := startRuns(t, e, "other", 5)
			spec := tc.spec
			spec.Operation, spec.Query = tc.op, `WorkflowType = "order"`
			res, err := e.StartBatch(bg, engine.StartBatch{ID: "b-" + string(tc.op), BatchSpec: spec, Header: engine.Header{By: "alice"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Batch.Total != 250 || res.Batch.MaxJob != miss[len(miss)-1] || res.Batch.By != "alice" {
				t.Fatalf("started %+v: want total 250, max job %d, by alice", res.Batch, miss[len(miss)-1])
			}
			later := startRuns(t, e, "order-late", 1)
			b := waitBatch(t, e, res.Batch.ID)
			if b.State != engine.BatchCompleted || b.Done != 250 || b.Failed != 0 || b.Total != 250 || b.ClosedMS == 0 {
				t.Fatalf("batch ended %+v: want Completed, 250 done", b)
			}
			for _, id := range hit {
				if n := countEvents(t, e, id, tc.event); n != 1 {
					t.Fatalf("run %d has %d %s events, want 1", id, n, tc.event)
				}
			}
			for _, id := range append(miss, later...) {
				if n := countEvents(t, e, id, tc.event); n != 0 {
					t.Fatalf("run %d, which the query does not match, has %d %s events", id, n, tc.event)
				}
			}
			verifyOK(t, e)
		})
	}
}

// TestBatchPauseUnpause pauses the runs of a query with one batch, and
// unpauses the paused ones with another: each run is paused and unpaused
// once, and a run the first query leaves out is neither.
func TestBatchPauseUnpause(t *testing.T) {
	e, err := Open(Config{InMemory: true, BatchRunsPerSecond: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ids := startRuns(t, e, "order", 120)
	other := startRuns(t, e, "other", 2)
	res, err := e.StartBatch(bg, engine.StartBatch{ID: "p", BatchSpec: engine.BatchSpec{Operation: engine.BatchPause, Query: "type=order", Reason: "incident"}})
	if err != nil {
		t.Fatal(err)
	}
	if b := waitBatch(t, e, res.Batch.ID); b.State != engine.BatchCompleted || b.Done != 120 {
		t.Fatalf("pause batch ended %+v", b)
	}
	for _, id := range ids {
		j, err := e.Describe(bg, engine.Target{Job: id})
		if err != nil || j.Pause == nil || countEvents(t, e, id, engine.EventWorkflowPaused) != 1 {
			t.Fatalf("run %d after the pause batch: %+v %v", id, j, err)
		}
	}
	res, err = e.StartBatch(bg, engine.StartBatch{ID: "u", BatchSpec: engine.BatchSpec{Operation: engine.BatchUnpause, Query: "paused=true"}})
	if err != nil || res.Batch.Total != 120 {
		t.Fatalf("unpause batch: %+v %v", res, err)
	}
	if b := waitBatch(t, e, res.Batch.ID); b.State != engine.BatchCompleted || b.Done != 120 {
		t.Fatalf("unpause batch ended %+v", b)
	}
	for _, id := range ids {
		j, err := e.Describe(bg, engine.Target{Job: id})
		if err != nil || j.Pause != nil || countEvents(t, e, id, engine.EventWorkflowUnpaused) != 1 {
			t.Fatalf("run %d after the unpause batch: %+v %v", id, j, err)
		}
	}
	for _, id := range other {
		if n := countEvents(t, e, id, engine.EventWorkflowPaused); n != 0 {
			t.Fatalf("run %d, which the query leaves out, was paused", id)
		}
	}
	verifyOK(t, e)
}

// TestBatchReset resets the failed runs of a query to their first turn.
func TestBatchReset(t *testing.T) {
	e, err := Open(Config{InMemory: true, BatchRunsPerSecond: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ids := startRuns(t, e, "order", 3)
	res, err := e.StartBatch(bg, engine.StartBatch{ID: "r1", BatchSpec: engine.BatchSpec{Operation: engine.BatchReset,
		Query: "type=order", Reason: "redo", ResetType: engine.ResetFirstWorkflowTask}})
	if err != nil {
		t.Fatal(err)
	}
	b := waitBatch(t, e, res.Batch.ID)
	if b.Done != 3 || b.State != engine.BatchCompleted {
		t.Fatalf("reset batch ended %+v, want 3 done", b)
	}
	for _, id := range ids {
		j, err := e.Describe(bg, engine.Target{Job: id})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != engine.StatusTerminated || j.NextRunID == 0 {
			t.Fatalf("run %d after a reset batch: %s, next run %d; want Terminated with a new run", id, j.Status, j.NextRunID)
		}
	}
	verifyOK(t, e)
}

// TestBatchResumesPendingPage is a runner that stopped after some of a
// page's commands were applied and before it recorded the page: the next
// runner acts on the page again, the applied commands answer from their
// request records, and every run is acted on and counted once.
func TestBatchResumesPendingPage(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ids := startRuns(t, e, "order", 10)
	res, err := e.StartBatch(bg, engine.StartBatch{ID: "k", BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate, Query: "type=order"}})
	if err != nil {
		t.Fatal(err)
	}
	// The first runner recorded its first page and applied the commands
	// of its first four runs, then died.
	b := res.Batch
	if _, err := e.Propose(bg, &engine.AdvanceBatch{ID: b.ID, From: 0, To: ids[9], Next: ids}); err != nil {
		t.Fatal(err)
	}
	if b, err = e.DescribeBatch(bg, b.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:4] {
		cmd, err := b.Command(id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Propose(bg, cmd); err != nil {
			t.Fatal(err)
		}
	}
	// A run ended by someone else meanwhile is counted failed, once.
	if _, err := e.Terminate(bg, engine.Terminate{Target: engine.Target{Job: ids[7]}, Reason: "by hand"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	br := NewBatchRunner(e, nil, 100000)
	go func() { _ = br.Run(ctx) }()
	e.wakeBatches()
	b = waitBatch(t, e, b.ID)
	if b.State != engine.BatchCompleted || b.Done != 9 || b.Failed != 1 || b.Total != 10 || b.LastError == "" {
		t.Fatalf("resumed batch ended %+v: want 9 done, 1 failed of 10", b)
	}
	for _, id := range ids {
		if n := countEvents(t, e, id, engine.EventJobTerminated); n != 1 {
			t.Fatalf("run %d was terminated %d times", id, n)
		}
	}
	verifyOK(t, e)
}

// TestBatchStop stops a batch before its runner reaches its runs.
func TestBatchStop(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	startRuns(t, e, "order", 3)
	res, err := e.StartBatch(bg, engine.StartBatch{BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Batch.ID == "" {
		t.Fatal("no batch id chosen")
	}
	if _, err := e.StopBatch(bg, engine.StopBatch{ID: res.Batch.ID, Reason: "oops"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.StopBatch(bg, engine.StopBatch{ID: res.Batch.ID}); !errorsIs(err, engine.ErrIllegalTransition) {
		t.Fatalf("stopping a stopped batch: %v, want ErrIllegalTransition", err)
	}
	if _, err := e.DescribeBatch(bg, "nope"); !errorsIs(err, engine.ErrUnknownBatch) {
		t.Fatalf("describing an unknown batch: %v", err)
	}
	page, err := e.ListBatches(bg, engine.BatchListQuery{})
	if err != nil || len(page.Batches) != 1 || page.Batches[0].State != engine.BatchTerminated || page.Batches[0].StopReason != "oops" {
		t.Fatalf("list: %+v, %v", page, err)
	}
	if _, err := e.StartBatch(bg, engine.StartBatch{BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate, Query: "type=("}}); !errorsIs(err, engine.ErrInvalidCommand) {
		t.Fatalf("a batch with a bad query: %v, want ErrInvalidCommand", err)
	}
}
