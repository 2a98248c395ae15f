package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// runWorkflow runs the workflow function wf to its end on an in-memory
// engine, with activities registered under their map keys, and decodes its
// result into resultPtr. It is what a program does with engine, worker and
// client (see the client package's example), folded into one call.
func runWorkflow(wf any, activities map[string]any, resultPtr any, args ...any) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	w := worker.New(client.New(e), "examples", worker.Options{})
	w.RegisterWorkflowWithName(wf, "Example")
	for name, fn := range activities {
		w.RegisterActivityWithName(fn, name)
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()
	run, err := client.New(e).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "examples"}, "Example", args...)
	if err != nil {
		return err
	}
	return run.Get(ctx, resultPtr)
}

// ExecuteActivity returns a future at once; several activities started
// before any Get run at the same time.
func ExampleExecuteActivity() {
	square := func(ctx context.Context, n int) (int, error) { return n * n, nil }
	sumOfSquares := func(ctx workflow.Context, ns []int) (int, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
		futures := make([]workflow.Future, len(ns))
		for i, n := range ns {
			futures[i] = workflow.ExecuteActivity(ctx, "Square", n) // by its registered name
		}
		sum := 0
		for _, f := range futures {
			var sq int
			if err := f.Get(ctx, &sq); err != nil {
				return 0, err
			}
			sum += sq
		}
		return sum, nil
	}
	var sum int
	if err := runWorkflow(sumOfSquares, map[string]any{"Square": square}, &sum, []int{1, 2, 3}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum)
	// Output: 14
}

// Coroutines started with workflow.Go take turns in a fixed order, so the
// same history always leads to the same interleaving: here the values
// arrive on the channel in the order the coroutines were started.
func ExampleGo() {
	fanIn := func(ctx workflow.Context) ([]string, error) {
		ch := workflow.NewChannel(ctx)
		for _, name := range []string{"first", "second", "third"} {
			workflow.Go(ctx, func(ctx workflow.Context) { ch.Send(ctx, name) })
		}
		var got []string
		for range 3 {
			var s string
			ch.Receive(ctx, &s)
			got = append(got, s)
		}
		return got, nil
	}
	var got []string
	if err := runWorkflow(fanIn, nil, &got); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got)
	// Output: [first second third]
}

// A Selector waits for whichever of several things happens first: here an
// activity raced against a durable timer.
func ExampleNewSelector() {
	lookup := func(ctx context.Context) (string, error) { return "found", nil }
	race := func(ctx workflow.Context) (string, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		defer cancelTimer() // the timer is not needed once the race is decided
		var winner string
		s := workflow.NewSelector(ctx)
		s.AddFuture(workflow.ExecuteActivity(ctx, "Lookup"), func(f workflow.Future) {
			if err := f.Get(ctx, &winner); err != nil {
				winner = "the lookup failed: " + err.Error()
			}
		})
		s.AddFuture(workflow.NewTimer(timerCtx, time.Hour), func(workflow.Future) { winner = "timed out" })
		s.Select(ctx)
		return winner, nil
	}
	var winner string
	if err := runWorkflow(race, map[string]any{"Lookup": lookup}, &winner); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(winner)
	// Output: found
}

// GetVersion lets workflow code change while runs of the old code are in
// flight. A new run records the newest version and takes the new branch; a
// run recorded before the change point existed replays as DefaultVersion and
// keeps the old behaviour.
func ExampleGetVersion() {
	greet := func(ctx workflow.Context, name string) (string, error) {
		v := workflow.GetVersion(ctx, "formal-greeting", workflow.DefaultVersion, 1)
		if v == workflow.DefaultVersion {
			return "hi " + name, nil // what runs started before the change do
		}
		return "good day, " + name, nil
	}
	var s string
	if err := runWorkflow(greet, nil, &s, "Ada"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)
	// Output: good day, Ada
}

// Activities fail with a *workflow.ApplicationError to choose their error's
// type and whether a retry may help; the workflow sees an
// *workflow.ActivityError that wraps it, once the retry policy gives up.
func ExampleNewApplicationError() {
	charge := func(ctx context.Context, cents int) (string, error) {
		if cents <= 0 {
			return "", workflow.NewApplicationError(fmt.Sprintf("cannot charge %d cents", cents), "InvalidAmount", true)
		}
		return "ok", nil
	}
	order := func(ctx workflow.Context, cents int) (string, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
		err := workflow.ExecuteActivity(ctx, "Charge", cents).Get(ctx, nil)
		var app *workflow.ApplicationError
		if errors.As(err, &app) && app.Type() == "InvalidAmount" {
			return "rejected: " + app.Message(), nil
		}
		return "charged", err
	}
	var s string
	if err := runWorkflow(order, map[string]any{"Charge": charge}, &s, -5); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)
	// Output: rejected: cannot charge -5 cents
}
