package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// outsiderGate holds RemoteStep until the test has tried its forgeries.
var outsiderGate = make(chan struct{})

// RemoteStep is the activity whose step an outsider tries to write into.
func RemoteStep(ctx context.Context) (string, error) {
	select {
	case <-outsiderGate:
		return "the real result", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// OutsiderFlow runs RemoteStep on another queue, as step 1.
func OutsiderFlow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "outsider-acts", StartToCloseTimeout: time.Minute})
	var got string
	err := workflow.ExecuteActivity(ctx, RemoteStep).Get(ctx, &got)
	return got, err
}

// A caller that does not hold a run cannot write into its steps: a job or
// a review task naming the run as its parent is refused without the run's
// lease, whose attempt it can read but whose token it cannot; nor can it
// write as the run's worker. The run's step keeps its real result. It runs
// embedded, over HTTP and on a three-node cluster (HEDDLE_SDK_BACKEND).
func TestOutsiderCannotWriteIntoARun(t *testing.T) {
	outsiderGate = make(chan struct{})
	e := open(t)
	startWorker(t, e, "outsider", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(OutsiderFlow) })
	startWorker(t, e, "outsider-acts", worker.Options{}, func(w worker.Worker) { w.RegisterActivity(RemoteStep) })
	svc := service(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := client.New(svc).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "victim", TaskQueue: "outsider"}, OutsiderFlow)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the run's worker started step 1 on the other queue.
	var victim *engine.Job
	for {
		if _, err := svc.Describe(ctx, engine.Target{WorkflowID: "victim/" + run.GetRunID() + "/1"}); err == nil {
			if victim, err = svc.Describe(ctx, engine.Target{WorkflowID: "victim"}); err != nil {
				t.Fatal(err)
			}
			break
		} else if !errors.Is(err, engine.ErrUnknownJob) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("step 1 never started")
		case <-time.After(10 * time.Millisecond):
		}
	}
	public := &engine.LeaseRef{Job: victim.ID, Attempt: max(victim.Attempt, 1)}
	for _, pl := range []*engine.LeaseRef{nil, public} {
		_, err := svc.Create(ctx, engine.CreateJob{WorkflowID: "forged-child", Type: engine.ActivityTypePrefix + "RemoteStep", Queue: "nobody",
			ParentID: victim.ID, ParentStep: "1", ParentLease: pl})
		if pl == nil && !errors.Is(err, engine.ErrInvalidCommand) || pl != nil && !errors.Is(err, engine.ErrStaleAttempt) {
			t.Fatalf("a child of the run with parent lease %+v: %v", pl, err)
		}
	}
	if ts, ok := svc.(engine.ReviewService); ok {
		_, err := ts.CreateReview(ctx, engine.CreateReview{Job: "forged", Phase: "p", Queue: "nobody", Type: "w", ParentJob: victim.ID, ParentStep: "1", ParentLease: public})
		if !errors.Is(err, engine.ErrStaleAttempt) {
			t.Fatalf("a task under the run: %v", err)
		}
	}
	if _, err := svc.CommitStep(ctx, engine.CommitStep{LeaseRef: *public, Step: "1", Type: "activity_failed", Failed: true, Payload: []byte(`{"message":"forged"}`)}); !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("a commit as the run's worker: %v", err)
	}
	close(outsiderGate)
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "the real result" {
		t.Fatalf("the run's result: %q, %v", got, err)
	}
	if eff, err := svc.Effect(ctx, victim.ID, "1"); err != nil || eff.Failed {
		t.Fatalf("step 1's effect: %+v, %v", eff, err)
	}
	verify(t, e)
}
