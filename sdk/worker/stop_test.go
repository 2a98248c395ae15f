package worker_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// BlockedFlow runs Blocker, which holds until cancelled.
func BlockedFlow(ctx workflow.Context, key string) (string, error) {
	var s string
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, liveOptions()), Blocker, key).Get(ctx, &s)
	return s, err
}

// Stop waits up to WorkerStopTimeout for the jobs in hand, then leaves
// them to their leases and cancels their activities: a worker whose
// activity never ends still stops, as Temporal's does on Ctrl-C.
func TestStopIsBoundedByWorkerStopTimeout(t *testing.T) {
	key := newProbe(t)
	e := open(t)
	c := client.New(service(t, e))
	w := worker.New(c, "stop", worker.Options{WorkerStopTimeout: 100 * time.Millisecond})
	w.RegisterWorkflow(BlockedFlow)
	w.RegisterActivity(Blocker)
	stop := make(chan any)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(stop) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "stop"}, BlockedFlow, key); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).started, "the activity's start")
	close(stop) // as worker.InterruptCh() does on SIGINT
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after its interrupt channel closed")
	}
	await(t, ctx, probeOf(key).cancelled, "the abandoned activity's cancellation")
}

// StopAware returns when its worker is asked to stop.
func StopAware(ctx context.Context, key string) error {
	p := probeOf(key)
	p.started <- struct{}{}
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		p.cancelled <- struct{}{}
		return errors.New("the worker is stopping")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func StopAwareFlow(ctx workflow.Context, key string) error {
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, liveOptions()), StopAware, key).Get(ctx, nil)
}

// GetWorkerStopChannel is closed when Stop is called, before the drain
// ends, so a long activity can end early and let the worker stop.
func TestWorkerStopChannel(t *testing.T) {
	key := newProbe(t)
	e := open(t)
	c := client.New(service(t, e))
	w := worker.New(c, "stop", worker.Options{WorkerStopTimeout: time.Minute})
	w.RegisterWorkflow(StopAwareFlow)
	w.RegisterActivity(StopAware)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "stop"}, StopAwareFlow, key); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, probeOf(key).started, "the activity's start")
	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	await(t, ctx, probeOf(key).cancelled, "the activity seeing the stop channel closed")
	await(t, ctx, stopped, "Stop returning once the activity returned")
}

// lateClaims is a service whose claims land only after their caller gave
// up: ClaimWait waits until its context ends, then claims (as a node does
// when the worker's request is cut while the node applies its claim) and
// answers the context's error, so the claim's jobs never reach the worker.
type lateClaims struct {
	engine.Service
	waiting chan struct{} // closed when the first ClaimWait is in
	once    sync.Once
	landed  chan []engine.ClaimedJob
}

func (s *lateClaims) ClaimWait(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	s.once.Do(func() { close(s.waiting) })
	<-ctx.Done()
	jobs, err := s.Claim(context.Background(), c)
	if err == nil && len(jobs) > 0 {
		s.landed <- jobs
	}
	return nil, ctx.Err()
}

// LateQuick returns at once.
func LateQuick(workflow.Context) (string, error) { return "late-quick", nil }

// A claim that lands while its worker is stopping leased a run the worker
// then dropped, which sat Running, unattended, until its lease ran out (30
// s by default). The stopping worker now gives back what such a claim
// took: the run is Queued again when Stop returns, and another worker
// takes it at once.
func TestStopReleasesALateClaim(t *testing.T) {
	e := open(t)
	svc := &lateClaims{Service: service(t, e), waiting: make(chan struct{}), landed: make(chan []engine.ClaimedJob, 1)}
	w := worker.New(client.New(svc), "late", worker.Options{})
	w.RegisterWorkflow(LateQuick)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "late-1", TaskQueue: "late"}, LateQuick)
	if err != nil {
		t.Fatal(err)
	}
	await(t, ctx, svc.waiting, "the worker's claim")
	w.Stop()
	select {
	case jobs := <-svc.landed:
		if len(jobs) != 1 || strconv.FormatUint(uint64(jobs[0].Job), 10) != run.GetRunID() {
			t.Fatalf("the late claim took %+v, want run %s", jobs, run.GetRunID())
		}
	default:
		t.Fatal("the late claim took nothing: the test sets nothing up")
	}
	j, err := c.DescribeWorkflow(ctx, "late-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != engine.StatusQueued {
		t.Fatalf("after Stop the run is %s (lease owner %q), want Queued again", j.Status, j.LeaseOwner)
	}
	hist, err := c.GetWorkflowHistory(ctx, "late-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1]; last.Type != engine.EventJobRequeued || last.Reason != engine.ReasonReleased {
		t.Fatalf("the run's last event is %s (%s), want job_requeued (%s)", last.Type, last.Reason, engine.ReasonReleased)
	}
	startWorker(t, e, "late", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(LateQuick) })
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "late-quick" {
		t.Fatalf("the released run: %q, %v", got, err)
	}
}
