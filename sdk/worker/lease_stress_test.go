package worker_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// stressRuns counts the executions of each step, by idempotency key.
var stressRuns counter

// SlowStep takes longer than several leases.
func SlowStep(ctx context.Context) error {
	stressRuns.add(activity.GetInfo(ctx).IdempotencyKey)
	select {
	case <-time.After(4 * stressLease):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func SlowWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}})
	return workflow.ExecuteActivity(ctx, SlowStep).Get(ctx, nil)
}

// Short leases, activities several leases long, and a machine kept busy,
// where every lease renewal takes half a lease to answer: without a fault,
// no lease is lost and no step runs twice. (A worker used to send its next
// renewal a third of the lease after the previous one was answered, and
// stop trusting the lease four fifths of it after the sending of the last
// renewal answered, without waiting for one on its way: one answer that
// took more than about half the lease made it give up a lease it held, the
// turn stopped, the job was reclaimed and the step ran again.)
func TestShortLeasesOnABusyMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load")
	}
	if overCluster() {
		// The renewals' schedule and trust are the worker's own; a
		// cluster's Raft round trips on top of the injected delay would
		// measure the machine, not them. Embedded and HTTP runs cover it.
		t.Skip("the worker's lease logic is covered embedded and over HTTP")
	}
	e := openDurable(t)
	stressRuns.reset()
	startWorkerOn(t, slowBeats{service(t, e)}, "stress", worker.Options{LeaseTTL: stressLease, MaxConcurrentJobs: 64}, func(w worker.Worker) {
		w.RegisterWorkflow(SlowWorkflow)
		w.RegisterActivity(SlowStep)
	})
	stop := burnCPU(t, 1)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(service(t, e))
	const n = 16
	runs := make([]client.WorkflowRun, n)
	for i := range runs {
		var err error
		if runs[i], err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("stress-%d", i), TaskQueue: "stress"}, SlowWorkflow); err != nil {
			t.Fatal(err)
		}
	}
	for i, run := range runs {
		if err := run.Get(ctx, nil); err != nil {
			t.Fatalf("workflow %d: %v", i, err)
		}
	}
	if got := stressRuns.total(); got != n {
		t.Fatalf("%d executions of %d steps: a step ran again without a fault", got, n)
	}
	verify(t, e)
}

// slowBeat is how long a lease renewal takes to answer in the stress test:
// what a commit costs on a busy machine.
const slowBeat = stressLease / 2

// stressLease is the workers' lease in the stress test.
const stressLease = time.Second

// slowBeats is a service whose lease renewals take slowBeat to apply.
type slowBeats struct{ engine.Service }

func (s slowBeats) Heartbeat(ctx context.Context, c engine.Heartbeat) (*engine.HeartbeatResult, error) {
	select {
	case <-time.After(slowBeat):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Service.Heartbeat(ctx, c)
}

// openDurable is open with the engine on a directory, so that commits
// wait for the disk as they do in production (in-process backends only;
// a cluster is on directories already).
func openDurable(t *testing.T) *embedded.Engine {
	t.Helper()
	if overCluster() {
		return openCluster(t)
	}
	e, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	return e
}

// burnCPU starts n processes (this test binary again) that keep a core
// busy each until the returned stop is called: load from outside the
// process, as other programs on the machine make it, which the operating
// system shares out, not the Go scheduler.
func burnCPU(t *testing.T, n int) (stop func()) {
	t.Helper()
	var procs []*exec.Cmd
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBurnHelper$")
		cmd.Env = append(os.Environ(), "HEDDLE_BURN=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	return func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
}

// TestBurnHelper is the body of a burnCPU process; it does nothing in a
// normal run.
func TestBurnHelper(t *testing.T) {
	if os.Getenv("HEDDLE_BURN") != "1" {
		return
	}
	deadline := time.Now().Add(2 * time.Minute) // a bound, should the parent die
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
	}
	_, _ = fmt.Fprintln(io.Discard, x) // keeps the loop from being optimised away
}
