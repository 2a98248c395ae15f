package raftfsm

import (
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// TestResetOfAPausedRunAcrossLeaderFailover pauses a run, then resets it
// while its leader is killed, and retries the reset with its request id on
// the next leader. Every survivor holds one new run that is not paused
// (the pause held the old run only, docs/state-machines.md §6), the old
// run Terminated and out of the paused index; the new run can be paused on
// the new leader, and the killed node catches up to the same state.
func TestResetOfAPausedRunAcrossLeaderFailover(t *testing.T) {
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
		r, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: "create"}, WorkflowID: "pr", Type: "t", Queue: "q"})
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
	do("pause", func(e *embedded.Engine) error {
		_, err := e.Pause(ctx, engine.Pause{Header: engine.Header{RequestID: "pause"}, Target: engine.Target{WorkflowID: "pr"}, Reason: "audit"})
		return err
	})
	do("wait", func(e *embedded.Engine) error {
		_, err := e.Wait(ctx, engine.Wait{Header: engine.Header{RequestID: "wait"}, LeaseRef: held.Lease(), SeenSeq: 3,
			Spec: engine.WaitSpec{Signals: []string{"never"}}})
		return err
	})

	reset := engine.ResetJob{Header: engine.Header{RequestID: "reset-paused"}, Target: engine.Target{WorkflowID: "pr"},
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
	if again.Job != first.Job || first.BaseJob != base {
		t.Fatalf("reset %+v, its retry %+v: want one new run from run %d", first, again, base)
	}

	c.waitConverged()
	for id, n := range c.live() {
		e := n.Engine()
		sctx := engine.WithStaleRead(ctx)
		b, err := e.Describe(sctx, engine.Target{Job: base})
		if err != nil || b.Status != engine.StatusTerminated || b.ResetNewRunID != first.Job {
			t.Fatalf("%s: base run %+v, %v", id, b, err)
		}
		nj, err := e.Describe(sctx, engine.Target{WorkflowID: "pr"})
		if err != nil || nj.ID != first.Job || nj.Status != engine.StatusQueued || nj.Paused() {
			t.Fatalf("%s: the reset's new run %+v (pause %+v), %v: want it Queued and not paused", id, nj, nj.Pause, err)
		}
		page, err := e.List(sctx, engine.ListQuery{Query: "paused=true"})
		if err != nil || len(page.Jobs) != 0 {
			t.Fatalf("%s: paused runs after the reset = %+v, %v; want none", id, page, err)
		}
	}

	// Every node's store agrees with itself: the new run's record and its
	// copied history both say it is not paused.
	c.verifyAll()

	// The new run is claimable, and its own pause holds it.
	var next engine.ClaimedJob
	do("claim the new run", func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-2"}, Queue: "q", Owner: "w2", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) == 1 {
			next = js[0]
		} else if err == nil {
			err = errors.New("nothing to claim: the new run is held")
		}
		return err
	})
	if next.Job != first.Job {
		t.Fatalf("claimed %+v after the reset, want run %d", next, first.Job)
	}
	do("pause the new run", func(e *embedded.Engine) error {
		_, err := e.Pause(ctx, engine.Pause{Header: engine.Header{RequestID: "pause-2"}, Target: engine.Target{WorkflowID: "pr"}, Reason: "again"})
		return err
	})

	c.start(old.ID(), false)
	c.eventually("the restarted node caught up", func() bool {
		n := c.live()[old.ID()]
		j, err := n.Engine().Describe(engine.WithStaleRead(ctx), engine.Target{Job: first.Job})
		return err == nil && j.Pause != nil && j.Pause.Reason == "again"
	})
	c.waitConverged()
	for id, n := range c.live() {
		page, err := n.Engine().List(engine.WithStaleRead(ctx), engine.ListQuery{Query: `ExecutionStatus = "Paused"`})
		if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != first.Job {
			t.Fatalf("%s: paused runs = %+v, %v; want run %d alone", id, page, err, first.Job)
		}
	}
	c.assertSameState()
	c.verifyAll()
}
