// Package childsignal starts a child workflow, learns its execution,
// signals it, and lets the child signal its parent back, in Temporal's
// shape.
package childsignal

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/contrib/envconfig"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ChildWorkflow waits for "name", then signals "done" to its parent.
func ChildWorkflow(ctx workflow.Context) (string, error) {
	var name string
	workflow.GetSignalChannel(ctx, "name").Receive(ctx, &name)
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if err := workflow.SignalExternalWorkflow(ctx, parent.ID, "", "done", "child greeted "+name).Get(ctx, nil); err != nil {
		return "", err
	}
	return "Hello " + name + "!", nil
}

// ParentWorkflow starts the child, signals it, and waits for both the
// child's signal and its result.
func ParentWorkflow(ctx workflow.Context) (string, error) {
	cwo := workflow.ChildWorkflowOptions{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID + "-child"}
	ctx = workflow.WithChildOptions(ctx, cwo)
	child := workflow.ExecuteChildWorkflow(ctx, ChildWorkflow)
	var childWE workflow.Execution
	if err := child.GetChildWorkflowExecution().Get(ctx, &childWE); err != nil {
		return "", err
	}
	if err := child.SignalChildWorkflow(ctx, "name", "World").Get(ctx, nil); err != nil {
		return "", err
	}
	var note, result string
	workflow.GetSignalChannel(ctx, "done").Receive(ctx, &note)
	if err := child.Get(ctx, &result); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (child %s: %s)", result, childWE.ID, note), nil
}

// RunWorker serves the "child-signal" queue until interruptCh delivers.
func RunWorker(interruptCh <-chan any) error {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, "child-signal", worker.Options{})
	w.RegisterWorkflow(ParentWorkflow)
	w.RegisterWorkflow(ChildWorkflow)
	return w.Run(interruptCh)
}

// RunStarter runs ParentWorkflow and returns its result.
func RunStarter() (string, error) {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return "", err
	}
	defer c.Close()
	we, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "parent-workflow", TaskQueue: "child-signal"}, ParentWorkflow)
	if err != nil {
		return "", err
	}
	var result string
	err = we.Get(context.Background(), &result)
	return result, err
}
