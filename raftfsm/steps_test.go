package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// A step that needs a person survives a leader failover: its question,
// the unit it keeps and its job's wait are on the new leader, whose answer
// wakes the job; the next attempt adopts the answered try and commits it.
func TestNeedsUserAcrossLeaderFailover(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("add", c.do(func(e *embedded.Engine) error {
		_, err := e.AddResource(ctx, engine.AddResource{Header: engine.Header{RequestID: "add"}, ID: "phone", Capabilities: []string{"sms"}, Capacity: 1})
		return err
	}))
	must("create", c.do(func(e *embedded.Engine) error {
		_, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: "create"}, Type: "t", Queue: "q", WorkflowID: "ask"})
		return err
	}))
	var j engine.ClaimedJob
	must("claim", c.do(func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-1"}, Queue: "q", Owner: "w1", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) == 1 {
			j = js[0]
		} else if err == nil {
			err = errors.New("nothing claimed")
		}
		return err
	}))
	ref := j.Lease()
	must("lease", c.do(func(e *embedded.Engine) error {
		_, err := e.LeaseStep(ctx, engine.LeaseStep{Header: engine.Header{RequestID: "lease-1"}, LeaseRef: ref, Step: "1", Name: "Confirm",
			LeaseMS: 30_000, Capabilities: []string{"sms"}, Start: true})
		return err
	}))
	must("ask", c.do(func(e *embedded.Engine) error {
		_, err := e.EndStepAttempt(ctx, engine.EndStepAttempt{Header: engine.Header{RequestID: "ask"}, LeaseRef: ref, Step: "1", Name: "Confirm",
			StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: []byte(`"which code?"`)})
		return err
	}))
	var seq uint64
	must("describe", c.do(func(e *embedded.Engine) error {
		d, err := e.Describe(ctx, engine.Target{Job: j.Job})
		if err == nil {
			seq = d.LastSeq
		}
		return err
	}))
	must("wait", c.do(func(e *embedded.Engine) error {
		_, err := e.Wait(ctx, engine.Wait{Header: engine.Header{RequestID: "wait"}, LeaseRef: ref, Spec: engine.WaitSpec{Steps: []string{"1"}}, SeenSeq: seq})
		return err
	}))

	old := c.leader()
	c.kill(old.cfg.ID)
	must("steps on the new leader", c.do(func(e *embedded.Engine) error {
		steps, err := e.Steps(ctx, engine.Target{WorkflowID: "ask"})
		if err != nil {
			return err
		}
		if len(steps) != 1 || steps[0].State != engine.StepNeedsUser || string(steps[0].Question) != `"which code?"` || steps[0].Resource != "phone" {
			t.Fatalf("steps after the failover: %+v", steps)
		}
		d, err := e.Describe(ctx, engine.Target{Job: j.Job})
		if err == nil && (d.Status != engine.StatusWaiting || d.LeaseOwner != "") {
			t.Fatalf("the job asking is %s held by %q", d.Status, d.LeaseOwner)
		}
		return err
	}))
	must("answer", c.do(func(e *embedded.Engine) error {
		_, err := e.AnswerStep(ctx, engine.AnswerStep{Header: engine.Header{RequestID: "answer"}, Target: engine.Target{WorkflowID: "ask"}, Step: "1", Answer: []byte(`"42"`)})
		return err
	}))
	var again engine.ClaimedJob
	must("claim again", c.do(func(e *embedded.Engine) error {
		js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-2"}, Queue: "q", Owner: "w2", Max: 1, LeaseMS: 60_000})
		if err == nil && len(js) == 1 {
			again = js[0]
		} else if err == nil {
			err = errors.New("the answered job was not woken")
		}
		return err
	}))
	ref2 := again.Lease()
	must("adopt", c.do(func(e *embedded.Engine) error {
		res, err := e.LeaseStep(ctx, engine.LeaseStep{Header: engine.Header{RequestID: "lease-2"}, LeaseRef: ref2, Step: "1", Name: "Confirm",
			LeaseMS: 30_000, Capabilities: []string{"sms"}, Start: true})
		if err == nil && (!res.Granted || res.StepAttempt != 2 || res.Resource != "phone" || res.State != engine.StepRunning) {
			t.Fatalf("adopting the answered try: %+v", res)
		}
		return err
	}))
	must("commit", c.do(func(e *embedded.Engine) error {
		_, err := e.CommitStep(ctx, engine.CommitStep{Header: engine.Header{RequestID: "commit"}, LeaseRef: ref2, Step: "1", Name: "Confirm",
			Type: engine.EventActivityCompleted, Payload: []byte(`"ok"`), StepAttempt: 2})
		return err
	}))
	must("resources", c.do(func(e *embedded.Engine) error {
		rs, err := e.Resources(ctx)
		if err == nil && (len(rs) != 1 || len(rs[0].Holders) != 0) {
			t.Fatalf("the unit was not given back: %+v", rs)
		}
		return err
	}))
	c.start(old.cfg.ID, false)
	c.assertSameState()
	c.verifyAll()
}

// Jobs that lease units of one small resource concurrently, through
// whichever node leads, never hold more units than it has: each node's
// Verify checks the holders against the capacity and every holder against
// a live step lease.
func TestResourceExclusivityOnACluster(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	if err := c.do(func(e *embedded.Engine) error {
		_, err := e.AddResource(ctx, engine.AddResource{Header: engine.Header{RequestID: "add"}, ID: "gpu", Capabilities: []string{"gpu"}, Capacity: 2})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const jobs = 8
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- c.do(func(e *embedded.Engine) error {
				id := fmt.Sprintf("j%d", i)
				if _, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: "create-" + id}, Type: "t", Queue: id, WorkflowID: id}); err != nil {
					return err
				}
				js, err := e.Claim(ctx, engine.Claim{Header: engine.Header{RequestID: "claim-" + id}, Queue: id, Owner: id, Max: 1, LeaseMS: 600_000})
				if err != nil || len(js) != 1 {
					return errors.Join(err, fmt.Errorf("%s: claimed %d", id, len(js)))
				}
				ref := js[0].Lease()
				res, err := e.LeaseStep(ctx, engine.LeaseStep{Header: engine.Header{RequestID: "lease-" + id}, LeaseRef: ref, Step: "1", Name: "x",
					LeaseMS: 600_000, Capabilities: []string{"gpu"}, Start: true})
				if err != nil || !res.Granted || i%2 == 1 {
					return err // queued, or kept
				}
				_, err = e.CommitStep(ctx, engine.CommitStep{Header: engine.Header{RequestID: "commit-" + id}, LeaseRef: ref, Step: "1", Name: "x",
					Type: engine.EventActivityCompleted, StepAttempt: res.StepAttempt})
				return err
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.assertSameState()
	c.verifyAll()
	var held int
	if err := c.do(func(e *embedded.Engine) error {
		rs, err := e.Resources(ctx)
		if err == nil {
			held = len(rs[0].Holders)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if held != 2 {
		t.Fatalf("%d units held at the end, want both (held by steps that kept theirs)", held)
	}
}
