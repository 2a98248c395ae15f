package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Greet is the workflow of these examples: it asks an activity for a title
// and greets.
func Greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var title string
	if err := workflow.ExecuteActivity(ctx, Title, name).Get(ctx, &title); err != nil {
		return "", err
	}
	return "hello, " + title + " " + name, nil
}

// Title is Greet's activity.
func Title(ctx context.Context, name string) (string, error) { return "Dr.", nil }

// Example starts a workflow on an embedded engine and waits for its result:
// an engine, a worker that runs the task queue's code, and a client.
func Example() {
	ctx := context.Background()
	e, err := embedded.Open(embedded.Config{InMemory: true}) // embedded.Config{Dir: "data"} keeps it on disk
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			log.Print(err)
		}
	}()

	w := worker.New(client.New(e), "greetings", worker.Options{})
	w.RegisterWorkflow(Greet)
	w.RegisterActivity(Title)
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := w.Shutdown(ctx); err != nil {
			log.Print(err)
		}
	}()

	c := client.New(e)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-ada", TaskQueue: "greetings"}, Greet, "Ada")
	if err != nil {
		log.Fatal(err)
	}
	var greeting string
	if err := run.Get(ctx, &greeting); err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.GetID(), "->", greeting)
	// Output: greet-ada -> hello, Dr. Ada
}

// setUp opens an in-memory engine with a worker for the "greetings" queue
// that runs the given workflows and Title, as Example does; stop closes both.
func setUp(workflows ...any) (e *embedded.Engine, w worker.Worker, stop func()) {
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	w = worker.New(client.New(e), "greetings", worker.Options{})
	for _, wf := range workflows {
		w.RegisterWorkflow(wf)
	}
	w.RegisterActivity(Title)
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	return e, w, func() {
		if err := errors.Join(w.Shutdown(context.Background()), e.Close()); err != nil {
			log.Print(err)
		}
	}
}

// WaitForName blocks on the signal "name" (a durable wait: no worker holds
// the workflow meanwhile) and greets whoever it names.
func WaitForName(ctx workflow.Context) (string, error) {
	var name string
	workflow.GetSignalChannel(ctx, "name").Receive(ctx, &name)
	return "hello, " + name, nil
}

// A signal reaches the workflow's signal channel of the same name; it is
// recorded in the history first, so it is never lost, even when no worker
// is running.
func ExampleClient_SignalWorkflow() {
	e, _, stop := setUp(WaitForName)
	defer stop()
	ctx := context.Background()
	c := client.New(e)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greeter", TaskQueue: "greetings"}, WaitForName)
	if err != nil {
		log.Fatal(err)
	}
	// "" is the latest run of the workflow id.
	if err := c.SignalWorkflow(ctx, "greeter", "", "name", "Grace"); err != nil {
		log.Fatal(err)
	}
	var greeting string
	if err := run.Get(ctx, &greeting); err != nil {
		log.Fatal(err)
	}
	fmt.Println(greeting)
	// Output: hello, Grace
}

// Counter counts "tick" signals until a "stop" signal and answers the query
// "count" meanwhile.
func Counter(ctx workflow.Context) (int, error) {
	count := 0
	if err := workflow.SetQueryHandler(ctx, "count", func() (int, error) { return count, nil }); err != nil {
		return 0, err
	}
	ticks, stop := workflow.GetSignalChannel(ctx, "tick"), workflow.GetSignalChannel(ctx, "stop")
	for running := true; running; {
		s := workflow.NewSelector(ctx)
		s.AddReceive(ticks, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); count++ })
		s.AddReceive(stop, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); running = false })
		s.Select(ctx)
	}
	return count, nil
}

// A query runs the workflow's query handler on a replay of its history. The
// engine does not hold workflow code, so the client asks a worker: in one
// process the worker itself, over HTTP the workers that run
// httpapi.ServeQueries (an httpapi.Client is then the Querier).
func ExampleClient_QueryWorkflow() {
	e, w, stop := setUp(Counter)
	defer stop()
	ctx := context.Background()
	c := client.NewWithOptions(e, client.Options{Querier: w})
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "counter", TaskQueue: "greetings"}, Counter)
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if err := c.SignalWorkflow(ctx, "counter", "", "tick", nil); err != nil {
			log.Fatal(err)
		}
	}
	v, err := c.QueryWorkflow(ctx, "counter", "", "count")
	if err != nil {
		log.Fatal(err)
	}
	var count int
	if err := v.Get(&count); err != nil {
		log.Fatal(err)
	}
	fmt.Println("count while running:", count)

	if err := c.SignalWorkflow(ctx, "counter", "", "stop", nil); err != nil {
		log.Fatal(err)
	}
	if err := run.Get(ctx, &count); err != nil {
		log.Fatal(err)
	}
	fmt.Println("result:", count)
	// Output:
	// count while running: 3
	// result: 3
}

// A workflow id has at most one open run. As in Temporal, a second start
// of an open id returns the open run; with
// WorkflowExecutionErrorWhenAlreadyStarted it is refused with
// engine.ErrWorkflowExists instead. After the run ends, a start begins a
// new run.
func ExampleClient_ExecuteWorkflow_reusePolicy() {
	e, _, stop := setUp(WaitForName)
	defer stop()
	ctx := context.Background()
	c := client.New(e)
	opts := client.StartWorkflowOptions{ID: "order-1", TaskQueue: "greetings"}
	first, err := c.ExecuteWorkflow(ctx, opts, WaitForName)
	if err != nil {
		log.Fatal(err)
	}

	again, err := c.ExecuteWorkflow(ctx, opts, WaitForName)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("run open: same run", again.GetRunID() == first.GetRunID())

	strict := opts
	strict.WorkflowExecutionErrorWhenAlreadyStarted = true
	_, err = c.ExecuteWorkflow(ctx, strict, WaitForName)
	fmt.Println("run open, error when started:", errors.Is(err, engine.ErrWorkflowExists))

	if err := c.SignalWorkflow(ctx, "order-1", "", "name", "Ada"); err != nil {
		log.Fatal(err)
	}
	if err := first.Get(ctx, nil); err != nil {
		log.Fatal(err)
	}
	next, err := c.ExecuteWorkflow(ctx, opts, WaitForName)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after the run ended: new run", next.GetRunID() != first.GetRunID())
	if err := c.TerminateWorkflow(ctx, "order-1", "", "example over"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// run open: same run true
	// run open, error when started: true
	// after the run ended: new run true
}
