// Command signals-queries keeps a shopping cart in a workflow: "add" signals
// put items in it, the "items" query reads it while the workflow waits, and a
// "checkout" signal ends it with the total. The cart is started with
// SignalWithStartWorkflow, so the first add starts it. The program checks the
// query's answers and the total, and exits 1 if they are wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Item is one line of the cart.
type Item struct {
	SKU   string
	Cents int
}

// Cart holds the items added until checkout and returns their total.
func Cart(ctx workflow.Context) (int, error) {
	var items []Item
	// A query handler reads the workflow's state; it must not change it.
	if err := workflow.SetQueryHandler(ctx, "items", func() ([]Item, error) { return items, nil }); err != nil {
		return 0, err
	}
	add := workflow.GetSignalChannel(ctx, "add")
	checkout := workflow.GetSignalChannel(ctx, "checkout")
	for open := true; open; {
		s := workflow.NewSelector(ctx)
		s.AddReceive(add, func(c workflow.ReceiveChannel, _ bool) {
			var it Item
			c.Receive(ctx, &it)
			items = append(items, it)
		})
		s.AddReceive(checkout, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			open = false
		})
		s.Select(ctx) // a durable wait for the next signal
	}
	// Adds that arrived together with the checkout still count.
	for {
		var it Item
		if !add.ReceiveAsync(&it) {
			break
		}
		items = append(items, it)
	}
	total := 0
	for _, it := range items {
		total += it.Cents
	}
	return total, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "signals-queries:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "heddle-cart-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()

	w := worker.New(client.New(e), "carts", worker.Options{})
	w.RegisterWorkflow(Cart)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	// Queries are answered by workflow code, which the worker has: the
	// client asks the worker (over HTTP, the node brokers the query to a
	// worker that serves its queue's queries).
	c := client.NewWithOptions(e, client.Options{Querier: w})
	opts := client.StartWorkflowOptions{ID: "cart-7", TaskQueue: "carts"}
	run, err := c.SignalWithStartWorkflow(ctx, "cart-7", "add", Item{"tea", 450}, opts, Cart)
	if err != nil {
		return err
	}
	if err := c.SignalWorkflow(ctx, "cart-7", "", "add", Item{"scones", 600}); err != nil {
		return err
	}
	v, err := c.QueryWorkflow(ctx, "cart-7", "", "items")
	if err != nil {
		return err
	}
	var items []Item
	if err := v.Get(&items); err != nil {
		return err
	}
	fmt.Printf("items before checkout: %v\n", items)
	if want := []Item{{"tea", 450}, {"scones", 600}}; !slices.Equal(items, want) {
		return fmt.Errorf("the query answered %v, want %v", items, want)
	}

	if err := c.SignalWorkflow(ctx, "cart-7", "", "checkout", nil); err != nil {
		return err
	}
	var total int
	if err := run.Get(ctx, &total); err != nil {
		return err
	}
	fmt.Printf("%s checked out: %d cents\n", run.GetID(), total)
	if total != 1050 {
		return fmt.Errorf("the total is %d cents, want 1050", total)
	}
	return nil
}
