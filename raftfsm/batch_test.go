package raftfsm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// batchRuns creates n runs of type typ through the leader.
func batchRuns(t *testing.T, c *testCluster, typ string, n int) []engine.JobID {
	t.Helper()
	var ids []engine.JobID
	for i := range n {
		err := c.do(func(e *embedded.Engine) error {
			r, err := e.Create(context.Background(), engine.CreateJob{Header: engine.Header{RequestID: fmt.Sprintf("c-%s-%d", typ, i)},
				WorkflowID: fmt.Sprintf("%s-%d", typ, i), Type: typ, Queue: "q"})
			if err == nil {
				ids = append(ids, r.Job)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// batchEnded waits until batch id ended on the leader, advancing the
// cluster's manual clock a second at a time: the runner keeps the batch's
// rate on that clock.
func batchEnded(t *testing.T, c *testCluster, id string) *engine.Batch {
	t.Helper()
	var b *engine.Batch
	c.eventually("batch "+id+" ended", func() bool {
		err := c.do(func(e *embedded.Engine) error {
			var err error
			b, err = e.DescribeBatch(context.Background(), id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if b.State == engine.BatchRunning {
			c.clock.Advance(time.Second)
			return false
		}
		return true
	})
	return b
}

// eventsOn counts job's events of type typ on every live node (each from
// its own state) and fails unless each holds want of them.
func eventsOn(t *testing.T, c *testCluster, job engine.JobID, typ engine.EventType, want int) {
	t.Helper()
	for id, n := range c.live() {
		page, err := n.Engine().History(engine.WithStaleRead(context.Background()), job, 0, engine.MaxPage)
		if err != nil {
			t.Fatalf("%s: history of run %d: %v", id, job, err)
		}
		got := 0
		for _, ev := range page.Events {
			if ev.Type == typ {
				got++
			}
		}
		if got != want {
			t.Fatalf("%s: run %d has %d %s events, want %d", id, job, got, typ, want)
		}
	}
}

// TestBatchOperationsOnCluster runs each batch operation on a three-node
// cluster: the leader's runner acts on every matching run once, and every
// node holds the same runs and batch.
func TestBatchOperationsOnCluster(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.BatchRunsPerSecond = 1000 })
	ctx := context.Background()
	for _, tc := range []struct {
		spec  engine.BatchSpec
		event engine.EventType
		// paused starts the runs paused (for unpause).
		paused bool
	}{
		{engine.BatchSpec{Operation: engine.BatchPause, Reason: "r"}, engine.EventWorkflowPaused, false},
		{engine.BatchSpec{Operation: engine.BatchUnpause, Reason: "r"}, engine.EventWorkflowUnpaused, true},
		{engine.BatchSpec{Operation: engine.BatchSignal, SignalName: "poke"}, engine.EventSignalReceived, false},
		{engine.BatchSpec{Operation: engine.BatchCancel, Reason: "r"}, engine.EventCancelRequested, false},
		{engine.BatchSpec{Operation: engine.BatchReset, Reason: "r", ResetType: engine.ResetFirstWorkflowTask}, engine.EventJobTerminated, false},
		{engine.BatchSpec{Operation: engine.BatchTerminate, Reason: "r"}, engine.EventJobTerminated, false},
	} {
		typ := "t-" + string(tc.spec.Operation)
		ids := batchRuns(t, c, typ, 12)
		for _, id := range ids {
			if !tc.paused {
				break
			}
			err := c.do(func(e *embedded.Engine) error {
				_, err := e.Pause(ctx, engine.Pause{Header: engine.Header{RequestID: fmt.Sprintf("pause-%d", id)}, Target: engine.Target{Job: id}})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		other := batchRuns(t, c, "x-"+string(tc.spec.Operation), 2)
		spec := tc.spec
		spec.Query = "type=" + typ
		err := c.do(func(e *embedded.Engine) error {
			_, err := e.StartBatch(ctx, engine.StartBatch{Header: engine.Header{RequestID: "b-" + typ}, ID: "b-" + typ, BatchSpec: spec})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		b := batchEnded(t, c, "b-"+typ)
		if b.State != engine.BatchCompleted || b.Done != 12 || b.Failed != 0 {
			t.Fatalf("%s batch ended %+v", spec.Operation, b)
		}
		c.waitConverged()
		for _, id := range ids {
			eventsOn(t, c, id, tc.event, 1)
		}
		for _, id := range other {
			eventsOn(t, c, id, tc.event, 0)
		}
	}
	c.assertSameState()
	c.verifyAll()
}

// TestBatchAcrossLeaderFailover kills the leader while its runner is in
// the middle of a batch: the next leader's runner goes on from the batch's
// record, and every run is terminated exactly once, on every node.
func TestBatchAcrossLeaderFailover(t *testing.T) {
	// Ten runs a second: a page is ten runs, and the runner waits a second
	// of the manual clock between two, so the test holds it mid-batch.
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.BatchRunsPerSecond = 10 })
	ctx := context.Background()
	ids := batchRuns(t, c, "order", 40)
	err := c.do(func(e *embedded.Engine) error {
		_, err := e.StartBatch(ctx, engine.StartBatch{Header: engine.Header{RequestID: "start"}, ID: "kill",
			BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate, Query: "type=order", Reason: "failover"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	old := c.leader()
	c.eventually("the first page acted on", func() bool {
		b, err := old.Engine().DescribeBatch(engine.WithStaleRead(ctx), "kill")
		return err == nil && b.Done >= 10
	})
	c.kill(old.ID())
	b := batchEnded(t, c, "kill")
	if c.leader().ID() == old.ID() {
		t.Fatal("the killed node still leads")
	}
	if b.State != engine.BatchCompleted || b.Done != 40 || b.Failed != 0 || b.Total != 40 {
		t.Fatalf("batch after the failover: %+v, want 40 done", b)
	}
	c.waitConverged()
	for _, id := range ids {
		eventsOn(t, c, id, engine.EventJobTerminated, 1)
	}
	c.start(old.ID(), false)
	c.eventually("the restarted node caught up", func() bool {
		b, err := c.live()[old.ID()].Engine().DescribeBatch(engine.WithStaleRead(ctx), "kill")
		return err == nil && b.State == engine.BatchCompleted
	})
	c.assertSameState()
	c.verifyAll()
}
