package worker_test

// Temporal's worker options MaxConcurrentActivityExecutionSize,
// BackgroundActivityContext and OnFatalError.

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// slotGauge counts the activities running at once and the most seen.
type slotGauge struct{ now, most atomic.Int32 }

func (g *slotGauge) Busy(ctx context.Context) error {
	n := g.now.Add(1)
	defer g.now.Add(-1)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			break
		}
	}
	// Long enough that, without a bound, the workflow's other activities
	// start while this one runs.
	time.Sleep(50 * time.Millisecond)
	return nil
}

// BoundedFanOut runs n activities at once and waits for them all.
func BoundedFanOut(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var fs []workflow.Future
	for range n {
		fs = append(fs, workflow.ExecuteActivity(ctx, "Busy"))
	}
	for _, f := range fs {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func TestMaxConcurrentActivityExecutionSize(t *testing.T) {
	for _, tc := range []struct {
		bound      int
		wantAbove  int32 // the most running at once is above this
		wantAtMost int32
	}{
		{bound: 2, wantAbove: 0, wantAtMost: 2},
		{bound: 0, wantAbove: 2, wantAtMost: 6}, // no bound: they overlap
	} {
		e := open(t)
		g := &slotGauge{}
		queue := "slots" + string(rune('a'+tc.bound))
		startWorker(t, e, queue, worker.Options{MaxConcurrentActivityExecutionSize: tc.bound}, func(w worker.Worker) {
			w.RegisterWorkflow(BoundedFanOut)
			w.RegisterActivityWithName(g.Busy, "Busy")
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, BoundedFanOut, 6)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		cancel()
		if most := g.most.Load(); most <= tc.wantAbove || most > tc.wantAtMost {
			t.Errorf("bound %d: at most %d activities ran at once, want (%d, %d]", tc.bound, most, tc.wantAbove, tc.wantAtMost)
		}
	}
	if err := (worker.Options{MaxConcurrentActivityExecutionSize: -1}).Validate(); err == nil {
		t.Error("a negative MaxConcurrentActivityExecutionSize passed Validate")
	}
}

type backgroundKey struct{}

// started is closed by WaitForBackground once it runs.
var started = make(chan struct{})

// WaitForBackground returns the background context's value once that
// context is cancelled.
func WaitForBackground(ctx context.Context) (string, error) {
	close(started)
	<-ctx.Done()
	v, _ := ctx.Value(backgroundKey{}).(string)
	return "", temporal.NewNonRetryableApplicationError("stopped with "+v+": "+context.Cause(ctx).Error(), "Stopped", nil)
}

// CallBackground runs WaitForBackground once.
func CallBackground(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var s string
	err := workflow.ExecuteActivity(ctx, WaitForBackground).Get(ctx, &s)
	return s, err
}

func TestBackgroundActivityContext(t *testing.T) {
	e := open(t)
	bg, stop := context.WithCancelCause(context.WithValue(context.Background(), backgroundKey{}, "shared"))
	defer stop(nil)
	startWorker(t, e, "background", worker.Options{BackgroundActivityContext: bg}, func(w worker.Worker) {
		w.RegisterWorkflow(CallBackground)
		w.RegisterActivity(WaitForBackground)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "background"}, CallBackground)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the activity did not start")
	}
	stop(errors.New("shutting down"))
	err = run.Get(ctx, nil)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Message() != "stopped with shared: shutting down" {
		t.Fatalf("run ended with %v, want the activity to see the background value and its cancellation", err)
	}
}

// A node that refuses the worker's token will never serve it: the worker
// stops claiming and says so once, where it would otherwise poll forever.
func TestOnFatalErrorWhenTheNodeRefusesTheToken(t *testing.T) {
	e := open(t)
	tokens := &httpapi.Tokens{}
	if err := tokens.Add("ops", httpapi.RoleAdmin, httpapi.NewToken()); err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.ServerConfig{Service: e, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	hc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{hs.URL}, Token: httpapi.NewToken()})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	fatal := make(chan error, 1)
	w := worker.New(client.New(hc), "fatal", worker.Options{OnFatalError: func(err error) {
		if calls.Add(1) == 1 {
			fatal <- err
		}
	}})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case err := <-fatal:
		if !errors.Is(err, httpapi.ErrUnauthorized) {
			t.Errorf("OnFatalError got %v, want httpapi.ErrUnauthorized", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("OnFatalError was not called for a refused token")
	}
	time.Sleep(100 * time.Millisecond) // a worker that polled on would call it again
	if n := calls.Load(); n != 1 {
		t.Errorf("OnFatalError was called %d times, want once", n)
	}
}
