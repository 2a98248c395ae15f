package worker_test

// Signals and cancel requests from one workflow to another:
// SignalExternalWorkflow, RequestCancelExternalWorkflow, and a child's
// GetChildWorkflowExecution and SignalChildWorkflow.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Pinged waits for the signal "ping" and returns its value; a cancel
// request ends it as cancelled.
func Pinged(ctx workflow.Context) (string, error) {
	var v string
	s := workflow.NewSelector(ctx)
	s.AddReceive(workflow.GetSignalChannel(ctx, "ping"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &v) })
	s.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	s.Select(ctx)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "pinged " + v, nil
}

// Pinger signals one workflow, signals one that does not exist, asks a
// third to cancel, and reports how each went.
func Pinger(ctx workflow.Context, target, victim string) (string, error) {
	var out []string
	err := workflow.SignalExternalWorkflow(ctx, target, "", "ping", "hello").Get(ctx, nil)
	out = append(out, fmt.Sprint(err))
	err = workflow.SignalExternalWorkflow(ctx, "nobody-home", "", "ping", "hello").Get(ctx, nil)
	out = append(out, fmt.Sprint(errors.As(err, new(*temporal.UnknownExternalWorkflowExecutionError))))
	err = workflow.RequestCancelExternalWorkflow(ctx, victim, "").Get(ctx, nil)
	out = append(out, fmt.Sprint(err))
	// A cancelled context sends nothing.
	cctx, cancel := workflow.WithCancel(ctx)
	cancel()
	err = workflow.SignalExternalWorkflow(cctx, target, "", "ping", "never").Get(ctx, nil)
	out = append(out, fmt.Sprint(temporal.IsCanceledError(err)))
	return strings.Join(out, " "), nil
}

func TestSignalAndCancelExternalWorkflows(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		e := open(t)
		startWorker(t, e, "ext", worker.Options{CacheSize: cache}, func(w worker.Worker) {
			w.RegisterWorkflow(Pinged)
			w.RegisterWorkflow(Pinger)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := client.New(service(t, e))
		runPinger(ctx, t, c, "ext", "pinger", "target", "victim")
		hist, err := c.GetWorkflowHistory(ctx, "pinger", "")
		if err != nil {
			t.Fatal(err)
		}
		types := eventTypes(hist)
		for _, want := range []string{"signal_external_sent", "signal_external_failed", "cancel_external_requested"} {
			if strings.Count(types, want) != 1 {
				t.Fatalf("history %s: want one %s", types, want)
			}
		}
		// The sender's history replays: the sends are steps like any other.
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflow(Pinger)
		if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
			t.Fatal(err)
		}
		verify(t, e)
	})
}

// runPinger starts Pinged as target and victim and Pinger as sender on
// queue, and checks how each ended: Pinger reports the signal sent, the
// unknown run's failure and the cancel requested; the target was pinged,
// the victim cancelled.
func runPinger(ctx context.Context, t *testing.T, c client.Client, queue, sender, target, victim string) {
	t.Helper()
	start := func(id string, wf any, args ...any) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, wf, args...)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	targetRun, victimRun := start(target, Pinged), start(victim, Pinged)
	var got string
	if err := start(sender, Pinger, target, victim).Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "<nil> true <nil> true" {
		t.Fatalf("Pinger reported %q", got)
	}
	var pinged string
	if err := targetRun.Get(ctx, &pinged); err != nil || pinged != "pinged hello" {
		t.Fatalf("target: %q, %v", pinged, err)
	}
	if err := victimRun.Get(ctx, nil); !temporal.IsCanceledError(err) {
		t.Fatalf("victim ended with %v, want cancelled", err)
	}
}

// SignalledChild waits for "go" and returns its value doubled.
func SignalledChild(ctx workflow.Context) (int, error) {
	var n int
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &n)
	return 2 * n, nil
}

// ChildSignaller starts SignalledChild, learns its execution and signals it.
func ChildSignaller(ctx workflow.Context) (string, error) {
	f := workflow.ExecuteChildWorkflow(ctx, SignalledChild)
	var exe workflow.Execution
	if err := f.GetChildWorkflowExecution().Get(ctx, &exe); err != nil {
		return "", err
	}
	if err := f.SignalChildWorkflow(ctx, "go", 21).Get(ctx, nil); err != nil {
		return "", err
	}
	var n int
	if err := f.Get(ctx, &n); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %d", exe.ID, exe.RunID, n), nil
}

// A child's future gives its execution once it started, and signals it.
func TestChildExecutionAndSignal(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		e := open(t)
		startWorker(t, e, "kids", worker.Options{CacheSize: cache}, func(w worker.Worker) {
			w.RegisterWorkflow(SignalledChild)
			w.RegisterWorkflow(ChildSignaller)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := client.New(service(t, e))
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "signaller", TaskQueue: "kids"}, ChildSignaller)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := run.Get(ctx, &got); err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(got)
		if len(fields) != 3 || fields[2] != "42" {
			t.Fatalf("result %q", got)
		}
		child, err := c.DescribeWorkflow(ctx, fields[0], "")
		if err != nil {
			t.Fatal(err)
		}
		if strconv.FormatUint(uint64(child.ID), 10) != fields[1] || strconv.FormatUint(uint64(child.ParentID), 10) != run.GetRunID() {
			t.Fatalf("the execution %q is not the child's run %d", got, child.ID)
		}
		verify(t, e)
	})
}

// SlowChild waits for a signal that never comes.
func SlowChild(ctx workflow.Context) error {
	workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
	return nil
}

// TimedChild gives its child a run timeout and reports how the child
// ended.
func TimedChild(ctx workflow.Context) (string, error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowRunTimeout: 100 * time.Millisecond})
	err := workflow.ExecuteChildWorkflow(cctx, SlowChild).Get(ctx, nil)
	var ce *temporal.ChildWorkflowExecutionError
	var te *temporal.TimeoutError
	if !errors.As(err, &ce) || !errors.As(err, &te) {
		return "", fmt.Errorf("the child ended with %v", err)
	}
	return string(te.TimeoutType()), nil
}

// A child's timeouts are the engine's, as a started workflow's are.
func TestChildTimeout(t *testing.T) {
	e := open(t)
	startWorker(t, e, "kids", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(SlowChild)
		w.RegisterWorkflow(TimedChild)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "kids"}, TimedChild)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "WorkflowRun" {
		t.Fatalf("Get = %q, %v; want the child's WorkflowRun timeout", got, err)
	}
}

// answerLost is a service whose first signal sent on behalf of a step is
// applied but answers an error, as when the connection dropped after the
// engine committed it: the run's turn fails, and a later attempt of the
// run, holding a lease of its own, sends the signal again.
type answerLost struct {
	engine.Service
	once sync.Once
}

func (s *answerLost) Signal(ctx context.Context, c engine.Signal) (*engine.SignalResult, error) {
	res, err := s.Service.Signal(ctx, c)
	lost := false
	if c.Sender != nil && err == nil {
		s.once.Do(func() { lost = true })
	}
	if lost {
		return nil, errors.New("connection reset by peer")
	}
	return res, err
}

// A signal whose answer was lost is sent again by the run's next attempt:
// the engine finds the step's effect, the target gets the signal once, and
// the sender goes on (a request id derived from the step, which the old
// worker used, conflicts with the first one's body, which holds the first
// attempt's lease).
func TestSignalSentAgainByALaterAttempt(t *testing.T) {
	e := open(t)
	svc := &answerLost{Service: service(t, e)}
	var errMu sync.Mutex
	var errs []error
	w := worker.New(client.New(svc), "ext-again", worker.Options{CacheSize: -1, LeaseTTL: 2 * time.Second,
		OnError: func(_ engine.JobID, err error) { errMu.Lock(); errs = append(errs, err); errMu.Unlock() }})
	w.RegisterWorkflow(Pinged)
	w.RegisterWorkflow(Pinger)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopOK(t, w) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	runPinger(ctx, t, c, "ext-again", "pinger", "target", "victim")
	hist, err := c.GetWorkflowHistory(ctx, "target", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(eventTypes(hist), "signal_received"); n != 1 {
		t.Fatalf("the target's history %s holds %d signals, want 1", eventTypes(hist), n)
	}
	errMu.Lock()
	defer errMu.Unlock()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "connection reset") {
		t.Fatalf("worker errors %v, want the one lost answer", errs)
	}
	verify(t, e)
}
