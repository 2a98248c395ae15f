package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

func Double(ctx context.Context, n int) (int, error) { return 2 * n, nil }

// ChildDoubler doubles n on the "remote" queue, a queue of another worker.
func ChildDoubler(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "remote"})
	var out int
	err := workflow.ExecuteActivity(ctx, Double, n).Get(ctx, &out)
	return out, err
}

// Counter continues as new until it reaches limit.
func Counter(ctx workflow.Context, n, limit int) (int, error) {
	if n < limit {
		return 0, workflow.NewContinueAsNewError(ctx, Counter, n+1, limit)
	}
	return n, nil
}

func Failing(ctx workflow.Context) error { return errors.New("child gives up") }

// Parent runs two children in parallel, a continue-as-new chain and a
// failing child.
func Parent(ctx workflow.Context) (string, error) {
	a := workflow.ExecuteChildWorkflow(ctx, ChildDoubler, 20)
	b := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "counter"}), Counter, 0, 3)
	var x, y int
	if err := a.Get(ctx, &x); err != nil {
		return "", err
	}
	if err := b.Get(ctx, &y); err != nil {
		return "", err
	}
	var cwe *workflow.ChildWorkflowError
	err := workflow.ExecuteChildWorkflow(ctx, Failing).Get(ctx, nil)
	if !errors.As(err, &cwe) {
		return "", fmt.Errorf("failing child returned %v", err)
	}
	var app *workflow.ApplicationError
	if !errors.As(err, &app) {
		return "", fmt.Errorf("failing child's cause is %T", errors.Unwrap(cwe))
	}
	return fmt.Sprintf("%d %d %s", x, y, app.Message()), nil
}

func TestChildWorkflowsRemoteActivitiesAndContinueAsNew(t *testing.T) {
	for _, cache := range []int{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
			e := open(t)
			main := startWorker(t, e, "main", worker.Options{CacheSize: cache})
			main.RegisterWorkflow(Parent)
			main.RegisterWorkflow(ChildDoubler)
			main.RegisterWorkflow(Counter)
			main.RegisterWorkflow(Failing)
			remote := startWorker(t, e, "remote", worker.Options{CacheSize: cache})
			remote.RegisterActivity(Double)
			c := client.New(service(t, e))
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "parent", TaskQueue: "main"}, Parent)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := run.Get(ctx, &got); err != nil {
				dumpJobs(t, e)
				t.Fatal(err)
			}
			if want := "40 3 child gives up"; got != want {
				t.Fatalf("result %q, want %q", got, want)
			}
			// The counter chain: runs 0..3 under one workflow id.
			page, err := c.ListWorkflows(ctx, engine.ListQuery{Type: "Counter"})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Jobs) != 4 {
				t.Fatalf("%d Counter runs, want 4", len(page.Jobs))
			}
			verify(t, e)
		})
	}
}
