// Command child ships an order as a parent workflow that starts one child
// workflow per parcel, in parallel, and waits for all of them. Each child is
// a run of its own, with its own history and workflow id; its result becomes
// a step of the parent's history. The program checks the parent's result and
// the children's runs, and exits 1 if they are wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Label is the activity a child runs.
func Label(ctx context.Context, parcel string) (string, error) {
	return "label for " + parcel, nil
}

// ShipParcel is the child workflow.
func ShipParcel(ctx workflow.Context, parcel string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var label string
	if err := workflow.ExecuteActivity(ctx, Label, parcel).Get(ctx, &label); err != nil {
		return "", err
	}
	return parcel + " shipped with " + label, nil
}

// ShipOrder is the parent: it starts the children first and then waits for
// each, so they run at the same time.
func ShipOrder(ctx workflow.Context, parcels []string) ([]string, error) {
	futures := make([]workflow.Future, len(parcels))
	for i, p := range parcels {
		// A child's workflow id is "<parent id>/<step>" unless the options
		// name one; the parent-close policy ends the child if the parent
		// ends first (Terminate is the default, as in Temporal).
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:        workflow.GetInfo(ctx).WorkflowID + "-" + p,
			ParentClosePolicy: workflow.ParentCloseTerminate,
		})
		futures[i] = workflow.ExecuteChildWorkflow(cctx, ShipParcel, p)
	}
	out := make([]string, len(parcels))
	for i, f := range futures {
		if err := f.Get(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "heddle-child-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()

	w := worker.New(client.New(e), "shipping", worker.Options{})
	w.RegisterWorkflow(ShipOrder)
	w.RegisterWorkflow(ShipParcel)
	w.RegisterActivity(Label)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	c := client.New(e)
	parcels := []string{"box-a", "box-b", "box-c"}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-9", TaskQueue: "shipping"}, ShipOrder, parcels)
	if err != nil {
		return err
	}
	var shipped []string
	if err := run.Get(ctx, &shipped); err != nil {
		return err
	}
	for _, s := range shipped {
		fmt.Println(s)
	}
	if len(shipped) != len(parcels) {
		return fmt.Errorf("%d parcels shipped, want %d", len(shipped), len(parcels))
	}
	// Each child is a workflow run of its own that a client can look up.
	for i, p := range parcels {
		if want := p + " shipped with label for " + p; shipped[i] != want {
			return fmt.Errorf("parcel %d: %q, want %q", i, shipped[i], want)
		}
		j, err := c.DescribeWorkflow(ctx, "order-9-"+p, "")
		if err != nil {
			return err
		}
		fmt.Printf("child %s: run %d, %s, child of run %d\n", j.WorkflowID, j.ID, j.Status, j.ParentID)
		if j.Status != engine.StatusCompleted || j.ParentID == 0 || !strings.HasPrefix(j.WorkflowID, "order-9-") {
			return fmt.Errorf("child %s is %s with parent %d", j.WorkflowID, j.Status, j.ParentID)
		}
	}
	return nil
}
