package helloworld

import (
	"context"

	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/contrib/envconfig"
	"github.com/heddlewf/heddle/sdk/worker"
)

// RunWorker is the sample's worker program: it serves the "hello-world"
// queue until interruptCh delivers (worker.InterruptCh() in a real
// program).
func RunWorker(interruptCh <-chan any) error {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return err
	}
	defer c.Close()

	w := worker.New(c, "hello-world", worker.Options{})
	w.RegisterWorkflow(Workflow)
	w.RegisterActivity(Activity)
	return w.Run(interruptCh)
}

// RunStarter is the sample's starter program: it runs the workflow and
// returns its result.
func RunStarter() (string, error) {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		return "", err
	}
	defer c.Close()

	workflowOptions := client.StartWorkflowOptions{
		ID:        "hello_world_workflowID",
		TaskQueue: "hello-world",
	}
	we, err := c.ExecuteWorkflow(context.Background(), workflowOptions, Workflow, "Temporal")
	if err != nil {
		return "", err
	}
	var result string
	if err := we.Get(context.Background(), &result); err != nil {
		return "", err
	}
	return result, nil
}
