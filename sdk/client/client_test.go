package client_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Tally counts "add" signals and answers the query "count" with the
// count plus its argument (zero when the query has none).
func Tally(ctx workflow.Context) (int, error) {
	n := 0
	if err := workflow.SetQueryHandler(ctx, "count", func(plus int) (int, error) { return n + plus, nil }); err != nil {
		return 0, err
	}
	add := workflow.GetSignalChannel(ctx, "add")
	for {
		var by int
		add.Receive(ctx, &by)
		if by == 0 {
			return n, nil
		}
		n += by
	}
}

func openEngine(t *testing.T) *embedded.Engine {
	t.Helper()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// serve serves e over HTTP and returns the server's URL.
func serve(t *testing.T, e *embedded.Engine) string {
	t.Helper()
	s, err := httpapi.NewServer(httpapi.ServerConfig{Service: e})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}

// The Temporal shape end to end: Dial, worker.New from the client, Run
// until interrupted; queries reach the worker with no querier set, in
// process and through a node, and a query with fewer arguments than its
// handler takes gets zero values, as in Temporal.
func TestDialWorkerAndQueries(t *testing.T) {
	e := openEngine(t)
	for _, tc := range []struct {
		name string
		opts func() client.Options
	}{
		{"embedded", func() client.Options { return client.Options{Service: e} }},
		{"over HTTP", func() client.Options { return client.Options{HostPort: serve(t, e)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.Dial(tc.opts())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			queue := "counters-" + strings.ReplaceAll(tc.name, " ", "-")
			w := worker.New(c, queue, worker.Options{})
			w.RegisterWorkflow(Tally)
			stop := make(chan any)
			ran := make(chan error, 1)
			go func() { ran <- w.Run(stop) }()
			defer func() {
				close(stop)
				if err := <-ran; err != nil {
					t.Error(err)
				}
			}()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, Tally)
			if err != nil {
				t.Fatal(err)
			}
			for _, by := range []int{2, 3} {
				if err := c.SignalWorkflow(ctx, queue, "", "add", by); err != nil {
					t.Fatal(err)
				}
			}
			for _, q := range []struct {
				args []any
				want int
			}{{[]any{10}, 15}, {nil, 5}} {
				v, err := c.QueryWorkflow(ctx, queue, "", "count", q.args...)
				if err != nil {
					t.Fatal(err)
				}
				var got int
				if err := v.Get(&got); err != nil || got != q.want {
					t.Fatalf("query count %v = %d, %v; want %d", q.args, got, err, q.want)
				}
			}
			if err := c.SignalWorkflow(ctx, queue, "", "add", 0); err != nil {
				t.Fatal(err)
			}
			var total int
			if err := run.Get(ctx, &total); err != nil || total != 5 {
				t.Fatalf("Get = %d, %v", total, err)
			}
		})
	}
}

// Dial refuses what heddle cannot do, and a node that does not answer.
func TestDialRefuses(t *testing.T) {
	if _, err := client.Dial(client.Options{Namespace: "billing"}); err == nil || !strings.Contains(err.Error(), "no namespaces") {
		t.Fatalf("Dial with a namespace: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil { // nothing listens there now
		t.Fatal(err)
	}
	if _, err := client.Dial(client.Options{HostPort: addr}); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("Dial of a closed port: %v", err)
	}
	if c, err := client.Dial(client.Options{Service: openEngine(t), Namespace: client.DefaultNamespace}); err != nil || c == nil {
		t.Fatalf("Dial with the default namespace: %v", err)
	}
}

// Fails fails with a typed error; Cancelled ends as cancelled; Waits
// waits for a signal that never comes.
func Fails(ctx workflow.Context) error {
	return temporal.NewNonRetryableApplicationError("no", "Refused", nil, "detail")
}

func Cancelled(ctx workflow.Context) error { return temporal.NewCanceledError() }

// Panics panics; heddle fails the run with the panic.
func Panics(ctx workflow.Context) error { panic("out of cheese") }

func Waits(ctx workflow.Context) error {
	workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
	return nil
}

// A run that did not complete gives a *temporal.WorkflowExecutionError
// wrapping why, matched with errors.As as in Temporal.
func TestGetReturnsWorkflowExecutionError(t *testing.T) {
	e := openEngine(t)
	c := client.New(e)
	w := worker.New(c, "q", worker.Options{})
	w.RegisterWorkflow(Fails)
	w.RegisterWorkflow(Cancelled)
	w.RegisterWorkflow(Waits)
	w.RegisterWorkflow(Panics)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(id string, wf any, opts client.StartWorkflowOptions) client.WorkflowRun {
		opts.ID, opts.TaskQueue = id, "q"
		run, err := c.ExecuteWorkflow(ctx, opts, wf)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	fails := start("fails", Fails, client.StartWorkflowOptions{})
	cancelled := start("cancelled", Cancelled, client.StartWorkflowOptions{})
	timedOut := start("timed-out", Waits, client.StartWorkflowOptions{WorkflowRunTimeout: 50 * time.Millisecond})
	terminated := start("terminated", Waits, client.StartWorkflowOptions{})
	panicked := start("panicked", Panics, client.StartWorkflowOptions{})
	if err := c.TerminateWorkflow(ctx, "terminated", "", "by hand", "ticket-7"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run   client.WorkflowRun
		check func(error) bool
	}{
		{fails, func(err error) bool {
			var app *temporal.ApplicationError
			var d string
			return errors.As(err, &app) && app.Type() == "Refused" && app.Details(&d) == nil && d == "detail"
		}},
		{cancelled, temporal.IsCanceledError},
		{timedOut, func(err error) bool {
			var te *temporal.TimeoutError
			return errors.As(err, &te) && te.TimeoutType() == temporal.TimeoutTypeWorkflowRun
		}},
		{panicked, func(err error) bool {
			var p *temporal.PanicError
			return errors.As(err, &p) && strings.Contains(p.Error(), "out of cheese") && strings.Contains(p.StackTrace(), "Panics")
		}},
		{terminated, func(err error) bool {
			return temporal.IsTerminatedError(err) && strings.Contains(err.Error(), "by hand") && strings.Contains(err.Error(), "ticket-7")
		}},
	} {
		err := tc.run.Get(ctx, nil)
		var we *temporal.WorkflowExecutionError
		if !errors.As(err, &we) || !tc.check(err) {
			t.Errorf("%s: Get = %v", tc.run.GetID(), err)
		}
	}

	// GetWorkflow of an id nobody started: Get says so.
	if err := c.GetWorkflow(ctx, "nobody", "").Get(ctx, nil); !errors.Is(err, engine.ErrUnknownJob) {
		t.Errorf("Get of an unknown workflow = %v", err)
	}
	// Any client of the engine reaches the worker of the run's queue in
	// this process, not only the client the worker was made from.
	if _, err := client.New(e).QueryWorkflow(ctx, "terminated", "", "any"); !errors.Is(err, workflow.ErrUnknownQuery) {
		t.Errorf("query of another client's worker = %v", err)
	}
	// Without a worker of the run's queue in this process, a query waits
	// for its deadline, as in Temporal.
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "unserved", TaskQueue: "nobody"}, Waits); err != nil {
		t.Fatal(err)
	}
	qctx, qcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer qcancel()
	if _, err := client.New(e).QueryWorkflow(qctx, "unserved", "", "any"); !errors.Is(err, client.ErrNoQuerier) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("query without a worker = %v", err)
	}
	// A closed client refuses.
	closed := client.New(e)
	closed.Close()
	if _, err := closed.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "q"}, Waits); !errors.Is(err, client.ErrClientClosed) {
		t.Errorf("ExecuteWorkflow after Close = %v", err)
	}
}

// A worker that cannot run says so at Start, as Temporal's does: New
// returns no error.
func TestWorkerStartErrors(t *testing.T) {
	c := client.New(openEngine(t))
	for _, tc := range []struct {
		name string
		w    worker.Worker
		want string
	}{
		{"no queue", worker.New(c, "", worker.Options{}), "taskQueue is empty"},
		{"bad options", worker.New(c, "q", worker.Options{LeaseTTL: time.Millisecond}), "LeaseTTL"},
		{"no client", worker.New(nil, "q", worker.Options{}), "not one made by client.Dial or client.New"},
	} {
		if err := tc.w.Start(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Start = %v, want an error saying %q", tc.name, err, tc.want)
		}
		if err := tc.w.Run(make(chan any)); err == nil {
			t.Errorf("%s: Run started", tc.name)
		}
	}
}
