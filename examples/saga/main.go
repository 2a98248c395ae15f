// Command saga books trips as sagas: every booking that succeeds adds its
// compensation to a list, and when a later booking fails for good the
// workflow runs the compensations in reverse order and fails. The first trip
// books everything; the second finds no car and undoes its flight and hotel.
// The program checks what the booking service saw and exits 1 if the saga did
// not behave.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Trip is the workflow's input.
type Trip struct {
	ID   string
	City string
}

// bookings stands in for the booking service. It remembers each request by
// its idempotency key, so a step that runs twice books once.
var bookings = struct {
	sync.Mutex
	done map[string]bool
	log  []string
}{done: map[string]bool{}}

func book(ctx context.Context, what string) error {
	key := activity.GetInfo(ctx).IdempotencyKey
	bookings.Lock()
	defer bookings.Unlock()
	if !bookings.done[key] {
		bookings.done[key] = true
		bookings.log = append(bookings.log, what)
	}
	return nil
}

// The activities: three bookings and the compensations of the first two.
func BookFlight(ctx context.Context, t Trip) error { return book(ctx, t.ID+": book flight") }
func BookHotel(ctx context.Context, t Trip) error  { return book(ctx, t.ID+": book hotel") }
func BookCar(ctx context.Context, t Trip) error {
	if t.City == "Atlantis" {
		// Non-retryable: no retry will find a car, so the saga unwinds now.
		return workflow.NewApplicationError("no cars in "+t.City, "NoCars", true)
	}
	return book(ctx, t.ID+": book car")
}
func CancelFlight(ctx context.Context, t Trip) error { return book(ctx, t.ID+": cancel flight") }
func CancelHotel(ctx context.Context, t Trip) error  { return book(ctx, t.ID+": cancel hotel") }

// BookTrip is the saga.
func BookTrip(ctx workflow.Context, t Trip) (err error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &workflow.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 3},
	})
	var compensations []any // activities that undo what succeeded, in order
	defer func() {
		if err == nil {
			return
		}
		// A disconnected context still runs activities when the workflow
		// itself was cancelled: the undoing must happen either way.
		undo, _ := workflow.NewDisconnectedContext(ctx)
		for _, c := range slices.Backward(compensations) {
			if cerr := workflow.ExecuteActivity(undo, c, t).Get(undo, nil); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	steps := []struct{ do, undo any }{{BookFlight, CancelFlight}, {BookHotel, CancelHotel}, {BookCar, nil}}
	for _, s := range steps {
		if err := workflow.ExecuteActivity(ctx, s.do, t).Get(ctx, nil); err != nil {
			return err
		}
		if s.undo != nil {
			compensations = append(compensations, s.undo)
		}
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "saga:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "heddle-saga-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()

	w := worker.New(client.New(e), "trips", worker.Options{})
	w.RegisterWorkflow(BookTrip)
	for _, a := range []any{BookFlight, BookHotel, BookCar, CancelFlight, CancelHotel} {
		w.RegisterActivity(a)
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	c := client.New(e)
	results := map[string]error{}
	for _, t := range []Trip{{ID: "trip-1", City: "Lisbon"}, {ID: "trip-2", City: "Atlantis"}} {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: t.ID, TaskQueue: "trips"}, BookTrip, t)
		if err != nil {
			return err
		}
		results[t.ID] = r.Get(ctx, nil)
		fmt.Printf("%s to %s: %v\n", t.ID, t.City, orOK(results[t.ID]))
	}

	bookings.Lock()
	log := slices.Clone(bookings.log)
	bookings.Unlock()
	fmt.Println("the booking service saw:")
	for _, l := range log {
		fmt.Println("  " + l)
	}
	want := []string{
		"trip-1: book flight", "trip-1: book hotel", "trip-1: book car",
		"trip-2: book flight", "trip-2: book hotel", "trip-2: cancel hotel", "trip-2: cancel flight",
	}
	var app *workflow.ApplicationError
	switch {
	case results["trip-1"] != nil:
		return fmt.Errorf("trip-1 should have been booked: %w", results["trip-1"])
	case !errors.As(results["trip-2"], &app) || app.Type() != "NoCars":
		return fmt.Errorf("trip-2 should have failed with NoCars, got %v", results["trip-2"])
	case !slices.Equal(log, want):
		return fmt.Errorf("the bookings were %q, want %q", log, want)
	}
	fmt.Println("ok: trip-2 was undone in reverse order")
	return nil
}

func orOK(err error) string {
	if err == nil {
		return "booked"
	}
	return "failed: " + err.Error()
}
