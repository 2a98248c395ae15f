// Command hello is the README's first workflow: an order that charges a card,
// waits for an approval signal and a short durable timer, and returns the
// receipt. Run it with `go run ./examples/hello`; run it again and the same
// order id gets a new run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Charge is an activity: plain Go. It may run more than once (a retry, or a
// crash after it ran but before its result was recorded), so it hands the
// payment service a key that is the same every time.
func Charge(ctx context.Context, cents int) (string, error) {
	key := activity.GetInfo(ctx).IdempotencyKey // the same on every retry and replay
	return fmt.Sprintf("charged %d cents (idempotency key %s)", cents, key), nil
}

// Order is a workflow: deterministic Go over a workflow.Context.
func Order(ctx workflow.Context, cents int) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5},
	})
	var receipt string
	if err := workflow.ExecuteActivity(ctx, Charge, cents).Get(ctx, &receipt); err != nil {
		return "", err
	}
	var approved bool
	workflow.GetSignalChannel(ctx, "approved").Receive(ctx, &approved) // a durable wait
	if !approved {
		return "", temporal.NewNonRetryableApplicationError("the order was not approved", "NotApproved", nil)
	}
	if err := workflow.Sleep(ctx, time.Second); err != nil { // a durable timer
		return "", err
	}
	return receipt, nil
}

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "heddle-hello"), "the database directory, kept between runs")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run(dir string) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The engine lives in this program; client.Dial with a HostPort instead
	// reaches a heddle node over HTTP.
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	c, err := client.Dial(client.Options{Service: e})
	if err != nil {
		return err
	}
	defer c.Close()

	w := worker.New(c, "orders", worker.Options{})
	w.RegisterWorkflow(Order)
	w.RegisterActivity(Charge)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	// A workflow id names the order. As in Temporal, starting an id whose
	// run is still open (this program was stopped half-way) returns that
	// run; once the run has ended, a start of the same id begins a new run.
	opts := client.StartWorkflowOptions{ID: "order-1", TaskQueue: "orders"}
	run, err := c.ExecuteWorkflow(ctx, opts, Order, 4200)
	if err != nil {
		return err
	}
	if err := c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), "approved", true); err != nil {
		return err
	}
	var receipt string
	if err := run.Get(ctx, &receipt); err != nil {
		return err
	}
	fmt.Printf("%s run %s: %s\n", run.GetID(), run.GetRunID(), receipt)
	return nil
}
