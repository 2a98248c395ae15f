package raftfsm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// A run's pause and its activity's pause are engine state: they survive
// the loss of the leader that applied them and a node's restart. The
// paused run is claimed by no leader, its timer fires while it is paused
// (on the new leader's scheduler) and is recorded, and the unpause on the
// new leader lets it be claimed; every node ends with the same state.
func TestPauseSurvivesLeaderFailoverAndRestart(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("create", c.do(func(e *embedded.Engine) error {
		_, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: "create"}, WorkflowID: "held", Type: "t", Queue: "q"})
		return err
	}))
	var held engine.ClaimedJob
	must("claim", c.do(func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-1"}, Queue: "q", Owner: "w1", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) == 1 {
			held = js[0]
		} else if err == nil {
			err = errors.New("nothing claimed")
		}
		return err
	}))
	ref := held.Lease()
	// Its activity failed a try under the job's lease; the operator pauses
	// the activity and the run while the turn runs; the turn then waits
	// for a timer.
	must("append", c.do(func(e *embedded.Engine) error {
		_, err := e.Append(ctx, engine.AppendEvents{Header: engine.Header{RequestID: "append"}, LeaseRef: ref,
			Events: []engine.NewEvent{{Type: engine.EventActivityAttemptFailed, Step: "1", Name: "Charge", StepAttempt: 1}}})
		return err
	}))
	must("pause activity", c.do(func(e *embedded.Engine) error {
		_, err := e.PauseActivity(ctx, engine.PauseActivity{Header: engine.Header{RequestID: "pause-activity"}, Target: engine.Target{WorkflowID: "held"},
			ActivitySelector: engine.ActivitySelector{ActivityType: "Charge"}, Reason: "issuer down"})
		return err
	}))
	must("pause", c.do(func(e *embedded.Engine) error {
		_, err := e.Pause(ctx, engine.Pause{Header: engine.Header{RequestID: "pause"}, Target: engine.Target{WorkflowID: "held"}, Reason: "audit"})
		return err
	}))
	fireAt := c.clock.Now().Add(10 * time.Second).UnixMilli()
	must("wait", c.do(func(e *embedded.Engine) error {
		_, err := e.Wait(ctx, engine.Wait{Header: engine.Header{RequestID: "wait"}, LeaseRef: ref, SeenSeq: 5,
			Spec: engine.WaitSpec{Timers: []engine.Timer{{ID: "t1", FireMS: fireAt}}}})
		return err
	}))

	old := c.leader()
	oldID := old.ID()
	c.kill(oldID)
	if c.leader().ID() == oldID {
		t.Fatal("the killed node still leads")
	}

	// On the new leader: still paused, its activity too; its timer fires
	// and is recorded, and no claim takes it.
	c.clock.Advance(20 * time.Second)
	c.eventually("the timer fired on the new leader", func() bool {
		var j *engine.Job
		err := c.do(func(e *embedded.Engine) error {
			var err error
			j, err = e.Describe(ctx, engine.Target{WorkflowID: "held"})
			return err
		})
		return err == nil && j.Status == engine.StatusQueued
	})
	must("describe", c.do(func(e *embedded.Engine) error {
		j, err := e.Describe(ctx, engine.Target{WorkflowID: "held"})
		if err == nil && (j.Pause == nil || j.Pause.Reason != "audit") {
			t.Fatalf("after the failover: %+v", j)
		}
		steps, err := e.Steps(ctx, engine.Target{WorkflowID: "held"})
		if err == nil && (len(steps) != 1 || steps[0].Pause == nil || steps[0].Pause.Reason != "issuer down") {
			t.Fatalf("steps after the failover: %+v", steps)
		}
		return err
	}))
	must("claim while paused", c.do(func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Queue: "q", Owner: "w2", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) != 0 {
			t.Fatalf("a paused run was claimed: %+v", js)
		}
		return err
	}))

	// The killed node restarts on its directory and holds the pause too.
	n := c.start(oldID, false)
	c.assertSameState()
	j, err := n.Engine().Describe(engine.WithStaleRead(ctx), engine.Target{WorkflowID: "held"})
	if err != nil || j.Pause == nil || j.Status != engine.StatusQueued {
		t.Fatalf("restarted node's view: %+v, %v", j, err)
	}

	must("unpause activity", c.do(func(e *embedded.Engine) error {
		_, err := e.UnpauseActivity(ctx, engine.UnpauseActivity{Header: engine.Header{RequestID: "unpause-activity"}, Target: engine.Target{WorkflowID: "held"},
			ActivitySelector: engine.ActivitySelector{ActivityID: "1"}})
		return err
	}))
	must("unpause", c.do(func(e *embedded.Engine) error {
		_, err := e.Unpause(ctx, engine.Unpause{Header: engine.Header{RequestID: "unpause"}, Target: engine.Target{WorkflowID: "held"}})
		return err
	}))
	var again engine.ClaimedJob
	must("claim after the unpause", c.do(func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-2"}, Queue: "q", Owner: "w2", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) == 1 {
			again = js[0]
		} else if err == nil {
			err = errors.New("the unpaused run was not claimed")
		}
		return err
	}))
	if again.Job != held.Job {
		t.Fatalf("claimed %+v, want the run that was paused", again)
	}
	c.assertSameState()
	c.verifyAll()
}
