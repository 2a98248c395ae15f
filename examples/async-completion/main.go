// Command async-completion completes an activity from outside its worker,
// as Temporal's asynchronous completion does: the activity hands its task
// token to another system (here a goroutine standing for a person who
// approves expenses) and returns activity.ErrResultPending; its job then
// waits, holding no worker, until the client's CompleteActivity gives the
// result. The program checks the workflow's result and that a second use
// of the token is refused, and exits 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// inbox stands for the approver's queue of requests.
var inbox = make(chan request, 1)

type request struct {
	token []byte
	what  string
}

// RequestApproval files the request and leaves the answer to the approver.
func RequestApproval(ctx context.Context, what string) (string, error) {
	inbox <- request{token: activity.GetInfo(ctx).TaskToken, what: what}
	return "", activity.ErrResultPending
}

// Expense asks for approval; the activity runs on the "approvals" queue,
// as an activity task of its own, so that it can wait for an answer.
func Expense(ctx workflow.Context, what string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "approvals", ScheduleToCloseTimeout: time.Hour})
	var answer string
	if err := workflow.ExecuteActivity(ctx, RequestApproval, what).Get(ctx, &answer); err != nil {
		return "", err
	}
	return what + ": " + answer, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "async-completion:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "heddle-async-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	for _, q := range []string{"expenses", "approvals"} {
		w := worker.New(client.New(e), q, worker.Options{})
		w.RegisterWorkflow(Expense)
		w.RegisterActivity(RequestApproval)
		if err := w.Start(); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()
	}

	c := client.New(e)
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "expense-4", TaskQueue: "expenses"}, Expense, "train to Lyon")
	if err != nil {
		return err
	}
	req := <-inbox
	fmt.Printf("approver got %q with a %d-byte token\n", req.what, len(req.token))
	if err := c.CompleteActivity(ctx, req.token, "approved by Ada", nil); err != nil {
		return err
	}
	var got string
	if err := r.Get(ctx, &got); err != nil {
		return err
	}
	fmt.Printf("%s finished: %s\n", r.GetID(), got)
	if got != "train to Lyon: approved by Ada" {
		return fmt.Errorf("the workflow returned %q", got)
	}
	if err := c.CompleteActivity(ctx, req.token, "approved twice", nil); !errors.Is(err, engine.ErrStaleAttempt) {
		return fmt.Errorf("a second completion with the same token was not refused as stale: %v", err)
	}
	fmt.Println("a second completion with the same token was refused")
	return nil
}
