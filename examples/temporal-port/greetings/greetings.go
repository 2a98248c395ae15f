// Package greetings runs three activities that are methods of one struct,
// registered whole, in Temporal's shape.
package greetings

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/contrib/envconfig"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Activities share what they were built with: the struct is registered
// whole, and its exported methods are the activities.
type Activities struct {
	Name     string
	Greeting string
}

// GetGreeting returns the greeting.
func (a *Activities) GetGreeting(ctx context.Context) (string, error) {
	activity.GetLogger(ctx).Info("GetGreeting")
	return a.Greeting, nil
}

// GetName returns the name.
func (a *Activities) GetName(ctx context.Context) (string, error) { return a.Name, nil }

// SayGreeting puts them together.
func (a *Activities) SayGreeting(ctx context.Context, greeting, name string) (string, error) {
	return fmt.Sprintf("Greeting: %s %s!", greeting, name), nil
}

// GreetingSample calls the three activities through a nil *Activities, as
// Temporal code does: the worker runs the registered struct's methods.
func GreetingSample(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var a *Activities
	var greeting, name, said string
	if err := workflow.ExecuteActivity(ctx, a.GetGreeting).Get(ctx, &greeting); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, a.GetName).Get(ctx, &name); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, a.SayGreeting, greeting, name).Get(ctx, &said); err != nil {
		return "", err
	}
	return said, nil
}

// RunWorker serves the "greetings" queue until interruptCh delivers.
func RunWorker(interruptCh <-chan any) error {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, "greetings", worker.Options{})
	w.RegisterWorkflow(GreetingSample)
	w.RegisterActivity(&Activities{Name: "Temporal", Greeting: "Hello"})
	return w.Run(interruptCh)
}

// RunStarter runs GreetingSample and returns its result.
func RunStarter() (string, error) {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return "", err
	}
	defer c.Close()
	we, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "greetings_workflow", TaskQueue: "greetings"}, GreetingSample)
	if err != nil {
		return "", err
	}
	var result string
	err = we.Get(context.Background(), &result)
	return result, err
}
