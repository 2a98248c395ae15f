// Command subscription bills a subscriber once a period until they cancel
// or the plan's number of charges is reached, with a welcome and a
// goodbye email. A real plan's period is a month; this program runs one
// with a period of 50 ms on an in-memory engine. Its test,
// subscription_test.go, runs a year of monthly billing in milliseconds
// with the test suite (sdk/testsuite), its activities mocked.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Plan is what a subscriber signed up for.
type Plan struct {
	Customer   string
	Period     time.Duration
	MaxCharges int
	Cents      int
}

// Billing waits a period, charges, and again, until the plan's charges are
// done or a "cancel" signal comes. It answers the query "charges" with the
// number of charges so far, and returns it.
func Billing(ctx workflow.Context, plan Plan) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Minute, MaximumInterval: time.Hour, MaximumAttempts: 3}})
	charges := 0
	if err := workflow.SetQueryHandler(ctx, "charges", func() (int, error) { return charges, nil }); err != nil {
		return 0, err
	}
	if err := workflow.ExecuteActivity(ctx, SendEmail, plan.Customer, "welcome").Get(ctx, nil); err != nil {
		return 0, err
	}
	cancelled := false
	cancel := workflow.GetSignalChannel(ctx, "cancel")
	for charges < plan.MaxCharges && !cancelled {
		s := workflow.NewSelector(ctx)
		s.AddFuture(workflow.NewTimer(ctx, plan.Period), func(workflow.Future) {})
		s.AddReceive(cancel, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			cancelled = true
		})
		s.Select(ctx)
		if cancelled {
			break
		}
		if err := workflow.ExecuteActivity(ctx, Charge, plan.Customer, plan.Cents).Get(ctx, nil); err != nil {
			return charges, err
		}
		charges++
	}
	return charges, workflow.ExecuteActivity(ctx, SendEmail, plan.Customer, "goodbye").Get(ctx, nil)
}

// SendEmail would send an email; this one prints it.
func SendEmail(_ context.Context, customer, kind string) error {
	fmt.Printf("email to %s: %s\n", customer, kind)
	return nil
}

// Charge would charge a card; this one prints the charge and returns a
// receipt.
func Charge(_ context.Context, customer string, cents int) (string, error) {
	fmt.Printf("charged %s %d cents\n", customer, cents)
	return fmt.Sprintf("receipt-%s-%d", customer, cents), nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "subscription:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	c := client.New(e)
	defer c.Close()
	w := worker.New(c, "billing", worker.Options{})
	w.RegisterWorkflow(Billing)
	w.RegisterActivity(SendEmail)
	w.RegisterActivity(Charge)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(ctx)) }()
	plan := Plan{Customer: "sub-1", Period: 50 * time.Millisecond, MaxCharges: 3, Cents: 999}
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sub-1", TaskQueue: "billing"}, Billing, plan)
	if err != nil {
		return err
	}
	var charges int
	if err := r.Get(ctx, &charges); err != nil {
		return err
	}
	if charges != plan.MaxCharges {
		return fmt.Errorf("charged %d times, want %d", charges, plan.MaxCharges)
	}
	fmt.Printf("%s: charged %d times\n", plan.Customer, charges)
	return nil
}
