// Command updates keeps a seat booking in a workflow that clients change
// with updates, as Temporal's: each update runs a handler inside the
// workflow and answers with its result, a validator refuses bad requests
// before anything changes, and the workflow waits for its handlers before
// it ends. The program checks every answer and exits 1 if one is wrong.
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

// Booking holds seats until it is closed, then returns them.
func Booking(ctx workflow.Context, capacity int) ([]string, error) {
	var seats []string
	err := workflow.SetUpdateHandlerWithOptions(ctx, "reserve",
		func(ctx workflow.Context, seat string) (int, error) {
			seats = append(seats, seat)
			return capacity - len(seats), nil // seats left
		},
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, seat string) error {
			if slices.Contains(seats, seat) {
				return fmt.Errorf("seat %s is taken", seat)
			}
			if len(seats) == capacity {
				return errors.New("the booking is full")
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	workflow.GetSignalChannel(ctx, "close").Receive(ctx, nil)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	return seats, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "updates:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "heddle-updates-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	w := worker.New(client.New(e), "bookings", worker.Options{})
	w.RegisterWorkflow(Booking)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	c := client.New(e)
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "flight-12", TaskQueue: "bookings"}, Booking, 2)
	if err != nil {
		return err
	}
	reserve := func(seat string) (int, error) {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "flight-12", UpdateName: "reserve",
			Args: []any{seat}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return 0, err
		}
		var left int
		return left, h.Get(ctx, &left)
	}
	for _, seat := range []string{"1A", "1A", "1B", "2C"} {
		left, err := reserve(seat)
		var rej *client.UpdateRejectedError
		switch {
		case errors.As(err, &rej):
			fmt.Printf("reserve %s: refused: %v\n", seat, rej.Cause)
		case err != nil:
			return err
		default:
			fmt.Printf("reserve %s: %d seats left\n", seat, left)
		}
	}
	if err := c.SignalWorkflow(ctx, "flight-12", "", "close", nil); err != nil {
		return err
	}
	var seats []string
	if err := r.Get(ctx, &seats); err != nil {
		return err
	}
	fmt.Printf("%s closed with seats %v\n", r.GetID(), seats)
	if !slices.Equal(seats, []string{"1A", "1B"}) {
		return fmt.Errorf("the booking holds %v, want [1A 1B]", seats)
	}
	return nil
}
