package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// lateLeaseAnswer makes the first answer that grants a step lease arrive
// later than the lease it grants had left (as one can across a leader's
// failover): it says 1 ms was left and comes back 5 ms after it was asked.
type lateLeaseAnswer struct {
	engine.Service
	calls    atomic.Int32
	answered atomic.Bool
}

func (s *lateLeaseAnswer) LeaseStep(ctx context.Context, c engine.LeaseStep) (*engine.StepResult, error) {
	s.calls.Add(1)
	res, err := s.Service.LeaseStep(ctx, c)
	if err == nil && res.Granted && !s.answered.Swap(true) {
		late := *res
		late.StepLeaseRemainingMS = 1
		time.Sleep(5 * time.Millisecond) // the answer on its way: only ever longer
		return &late, nil
	}
	return res, err
}

var lateLeaseSvc atomic.Pointer[lateLeaseAnswer]

// StartsOnAFreshLease records whether its try began before the worker
// asked for the lease again after the late answer.
func StartsOnAFreshLease(ctx context.Context) (int32, error) {
	activity.RecordHeartbeat(ctx)
	return lateLeaseSvc.Load().calls.Load(), nil
}

func CallsFreshLease(ctx workflow.Context) (int32, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{HeartbeatTimeout: 10 * time.Second})
	var n int32
	err := workflow.ExecuteActivity(ctx, StartsOnAFreshLease).Get(ctx, &n)
	return n, err
}

// A worker whose step lease was granted by an answer that came back later
// than the lease had left does not start the try on it: the lease may
// have ended on the way, and the next try run beside it. It asks again,
// and starts on the answer that grants the lease afresh.
func TestTryNotStartedOnALateLease(t *testing.T) {
	e := open(t)
	svc := &lateLeaseAnswer{Service: service(t, e)}
	lateLeaseSvc.Store(svc)
	startWorkerOn(t, svc, "late-lease", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(CallsFreshLease)
		w.RegisterActivity(StartsOnAFreshLease)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "late-lease", TaskQueue: "late-lease"}, CallsFreshLease)
	if err != nil {
		t.Fatal(err)
	}
	var calls int32
	if err := run.Get(ctx, &calls); err != nil {
		t.Fatal(err)
	}
	if calls < 2 {
		t.Fatalf("the try started after %d LeaseStep calls: it ran on the late answer's lease", calls)
	}
}
