package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/heddlewf/heddle/storage"
)

// counter records activity executions by idempotency key.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *counter) add(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[key]++
	return c.runs[key]
}

func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs = nil
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.runs {
		n += v
	}
	return n
}

var executions counter

func Reserve(ctx context.Context, item string) (string, error) {
	executions.add(activity.GetInfo(ctx).IdempotencyKey)
	return "R-" + item, nil
}

func Charge(ctx context.Context, amount int) (string, error) {
	info := activity.GetInfo(ctx)
	if n := executions.add(info.IdempotencyKey); amount < 0 && n < 3 {
		return "", fmt.Errorf("card network timeout (try %d)", info.Attempt)
	}
	return fmt.Sprintf("C-%d", amount), nil
}

func Ship(ctx context.Context, reservation string) (string, error) {
	executions.add(activity.GetInfo(ctx).IdempotencyKey)
	return "S-" + reservation, nil
}

// OrderWorkflow: three sequential activities, a side effect, a durable
// timer and a signal.
func OrderWorkflow(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 5 * time.Millisecond, MaximumAttempts: 5}})
	var r, c, s string
	if err := workflow.ExecuteActivity(ctx, Reserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	var token string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return "tok-" + item }).Get(&token); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 20*time.Millisecond); err != nil {
		return "", err
	}
	var approval string
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approval)
	if err := workflow.ExecuteActivity(ctx, Charge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, Ship, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %s %s %s", r, token, approval, c, s), nil
}

func open(t *testing.T) *embedded.Engine {
	t.Helper()
	if overCluster() {
		return openCluster(t)
	}
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	return e
}

// startWorker starts a worker with the common workflows and activities, and
// whatever register adds before it starts: a test whose job exists before
// its worker must register its types here, or the worker may claim the job
// before they are known.
func startWorker(t *testing.T, e *embedded.Engine, queue string, opts worker.Options, register ...func(worker.Worker)) worker.Worker {
	t.Helper()
	return startWorkerOn(t, service(t, e), queue, opts, register...)
}

// startWorkerOn is startWorker on a given service (a wrapper of the test's
// engine that changes how some calls behave).
func startWorkerOn(t *testing.T, svc engine.Service, queue string, opts worker.Options, register ...func(worker.Worker)) worker.Worker {
	t.Helper()
	var errMu sync.Mutex
	opts.OnError = func(job engine.JobID, err error) {
		errMu.Lock()
		defer errMu.Unlock()
		t.Errorf("worker error on job %d: %v", job, err)
	}
	w := worker.New(client.New(svc), queue, opts)
	w.RegisterWorkflow(OrderWorkflow)
	w.RegisterWorkflow(CancellableWorkflow)
	w.RegisterActivity(Reserve)
	w.RegisterActivity(Charge)
	w.RegisterActivity(Ship)
	for _, r := range register {
		r(w)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopOK(t, w) })
	return w
}

func verify(t *testing.T, e *embedded.Engine) {
	t.Helper()
	var errs []error
	// A stale read: on a cluster the leader's own state, which holds every
	// write the test saw acknowledged.
	err := e.View(engine.WithStaleRead(context.Background()), func(r *storage.Reader) error { errs = machine.Verify(r, 5); return nil })
	if err != nil {
		t.Fatalf("reading the store to verify it: %v", err)
	}
	for _, err := range errs {
		t.Error(err)
	}
}

// closeOK closes c, failing the test if that fails.
func closeOK(t testing.TB, c interface{ Close() error }) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("closing %T: %v", c, err)
	}
}

// stopOK stops w, draining its jobs, failing the test if that fails.
func stopOK(t testing.TB, w worker.Worker) {
	t.Helper()
	if err := w.Shutdown(context.Background()); err != nil {
		t.Errorf("stopping the worker: %v", err)
	}
}

// The order workflow end to end, with the workflow cache and without it
// (every turn replays from history): same results, each step run once.
func TestOrderWorkflowWithAndWithoutCache(t *testing.T) {
	for _, cache := range []int{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
			e := open(t)
			startWorker(t, e, "orders", worker.Options{CacheSize: cache})
			c := client.New(service(t, e))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			executions.reset() // activities count by idempotency key, which repeats across -count runs
			before := executions.total()
			id := fmt.Sprintf("order-cache%d", cache) // idempotency keys differ per subtest
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "orders"}, OrderWorkflow, "loom", -7)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.SignalWorkflow(ctx, id, "", "approve", "alice"); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := run.Get(ctx, &got); err != nil {
				t.Fatal(err)
			}
			if want := "R-loom tok-loom alice C--7 S-R-loom"; got != want {
				t.Fatalf("result %q, want %q", got, want)
			}
			// Reserve and Ship once each; Charge failed twice then succeeded.
			if n := executions.total() - before; n != 5 {
				t.Fatalf("%d activity executions, want 5", n)
			}
			hist, err := c.GetWorkflowHistory(ctx, id, "")
			if err != nil {
				t.Fatal(err)
			}
			commits, failedTries := 0, 0
			for _, ev := range hist {
				if ev.Commit {
					commits++
				}
				if ev.Type == "activity_attempt_failed" {
					failedTries++
				}
			}
			if commits != 3 || failedTries != 2 {
				t.Fatalf("history has %d commits and %d failed tries, want 3 and 2", commits, failedTries)
			}
			verify(t, e)
		})
	}
}

func CancellableWorkflow(ctx workflow.Context) (string, error) {
	var v string
	s := workflow.NewSelector(ctx)
	s.AddReceive(workflow.GetSignalChannel(ctx, "never"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &v) })
	s.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	s.Select(ctx)
	if ctx.Err() != nil {
		return "", workflow.ErrCanceled
	}
	return v, nil
}

// A cancel request reaches the workflow through its context.
func TestCancelRequestReachesWorkflow(t *testing.T) {
	forEachCache(t, testCancelRequestReachesWorkflow)
}

func testCancelRequestReachesWorkflow(t *testing.T, cache int) {
	e := open(t)
	startWorker(t, e, "orders", worker.Options{CacheSize: cache})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "c-1", TaskQueue: "orders"}, CancellableWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the workflow blocks, then ask it to cancel.
	for {
		changed := e.Committed() // before the read, or a commit in between is missed
		j, err := c.DescribeWorkflow(ctx, "c-1", "")
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == engine.StatusWaiting {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("workflow never waited")
		}
	}
	if err := c.CancelWorkflow(ctx, "c-1", ""); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		t.Fatalf("Get = %v, want ErrCanceled", err)
	}
	verify(t, e)
}

// forEachCache runs a test twice: with the workflow cache (every turn after
// the first resumes from memory) and without it (every turn replays the
// history from the start). The results must be the same.
func forEachCache(t *testing.T, test func(t *testing.T, cache int)) {
	for _, cache := range []int{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) { test(t, cache) })
	}
}
