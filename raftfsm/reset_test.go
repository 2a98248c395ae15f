package raftfsm

import (
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// TestResetAcrossLeaderFailover resets a run while its leader is killed:
// the reset is proposed as the leader goes, and retried with its request id
// on whichever node leads next. Whether the first proposal was applied or
// not, the workflow id gets exactly one new run; a retry after the
// failover answers that run; every survivor holds the same linked runs;
// the new run's worker goes on from the copied history; the old attempt is
// fenced out; and the killed node catches up to the same state.
func TestResetAcrossLeaderFailover(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	do := func(what string, op func(e *embedded.Engine) error) {
		t.Helper()
		if err := c.do(op); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var base engine.JobID
	do("create", func(e *embedded.Engine) error {
		r, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: "create"}, WorkflowID: "r", Type: "t", Queue: "q"})
		if err == nil {
			base = r.Job
		}
		return err
	})
	var held engine.ClaimedJob
	do("claim", func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim"}, Queue: "q", Owner: "w1", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) == 1 {
			held = js[0]
		} else if err == nil {
			err = errors.New("nothing to claim")
		}
		return err
	})
	do("commit", func(e *embedded.Engine) error {
		_, err := e.CommitStep(ctx, engine.CommitStep{Header: engine.Header{RequestID: "commit"}, LeaseRef: held.Lease(),
			Step: "1", Type: engine.EventActivityCompleted, Name: "Reserve", Payload: []byte(`"R"`)})
		return err
	})
	do("wait", func(e *embedded.Engine) error {
		_, err := e.Wait(ctx, engine.Wait{Header: engine.Header{RequestID: "wait"}, LeaseRef: held.Lease(), SeenSeq: 3,
			Spec: engine.WaitSpec{Signals: []string{"never"}}})
		return err
	})
	do("signal", func(e *embedded.Engine) error {
		_, err := e.Signal(ctx, engine.Signal{Header: engine.Header{RequestID: "signal"}, Target: engine.Target{WorkflowID: "r"}, Name: "approve"})
		return err
	})

	reset := engine.ResetJob{Header: engine.Header{RequestID: "reset-1"}, Target: engine.Target{WorkflowID: "r"},
		Type: engine.ResetLastWorkflowTask, Reason: "failover"}
	done := make(chan *engine.ResetResult, 1)
	errc := make(chan error, 1)
	old := c.leader()
	go func() {
		var res *engine.ResetResult
		err := c.do(func(e *embedded.Engine) error {
			var err error
			res, err = e.Reset(ctx, reset)
			return err
		})
		if err != nil {
			errc <- err
			return
		}
		done <- res
	}()
	c.kill(old.ID())
	var first *engine.ResetResult
	select {
	case first = <-done:
	case err := <-errc:
		t.Fatalf("reset across the failover: %v", err)
	}
	if c.leader().ID() == old.ID() {
		t.Fatal("the killed node still leads")
	}
	var again *engine.ResetResult
	do("reset again", func(e *embedded.Engine) error {
		var err error
		again, err = e.Reset(ctx, reset)
		return err
	})
	if again.Job != first.Job || first.BaseJob != base || first.Seq != 4 {
		t.Fatalf("reset %+v, its retry %+v: want one new run from event 4 of run %d", first, again, base)
	}

	c.waitConverged()
	for id, n := range c.live() {
		e := n.Engine()
		sctx := engine.WithStaleRead(ctx)
		b, err := e.Describe(sctx, engine.Target{Job: base})
		if err != nil || b.Status != engine.StatusTerminated || b.ResetNewRunID != first.Job {
			t.Fatalf("%s: base run %+v, %v", id, b, err)
		}
		nj, err := e.Describe(sctx, engine.Target{WorkflowID: "r"})
		if err != nil || nj.ID != first.Job || nj.ResetBaseRunID != base || nj.Status != engine.StatusQueued {
			t.Fatalf("%s: the workflow id's run %+v, %v", id, nj, err)
		}
		if _, err := e.Describe(sctx, engine.Target{Job: first.Job + 1}); !errors.Is(err, engine.ErrUnknownJob) {
			t.Fatalf("%s: a second new run exists (%v): the reset was applied twice", id, err)
		}
	}

	// The new run goes on: its claim is the attempt after the copied one,
	// the old attempt's write is refused, and it completes.
	var next engine.ClaimedJob
	do("claim the new run", func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-2"}, Queue: "q", Owner: "w2", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) == 1 {
			next = js[0]
		} else if err == nil {
			err = errors.New("nothing to claim")
		}
		return err
	})
	if next.Job != first.Job || next.Attempt != held.Attempt+1 {
		t.Fatalf("claimed %+v after the reset, want run %d at attempt %d", next, first.Job, held.Attempt+1)
	}
	err := c.do(func(e *embedded.Engine) error {
		_, err := e.Complete(ctx, engine.Complete{LeaseRef: held.Lease()})
		return err
	})
	if !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("the old attempt's write after the reset: %v, want ErrStaleAttempt", err)
	}
	do("complete", func(e *embedded.Engine) error {
		_, err := e.Complete(ctx, engine.Complete{Header: engine.Header{RequestID: "complete"}, LeaseRef: next.Lease(), Result: []byte(`"ok"`)})
		return err
	})

	c.start(old.ID(), false)
	c.eventually("the restarted node caught up", func() bool {
		n := c.live()[old.ID()]
		j, err := n.Engine().Describe(engine.WithStaleRead(ctx), engine.Target{Job: first.Job})
		return err == nil && j.Status == engine.StatusCompleted
	})
	c.assertSameState()
	c.verifyAll()
}
