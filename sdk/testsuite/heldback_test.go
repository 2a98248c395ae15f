package testsuite_test

import (
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// A run held back before it starts (here by a start delay) sees workflow
// time begin when it starts, as in Temporal, where its first workflow task
// comes after the delay: workflow.Now and Info.WorkflowStartTime read the
// end of the delay, not the time the run was created. With no cache,
// every turn replays the run from its start: the same holds.
func TestHeldBackRunStartsAtItsStartTime(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{StartDelay: 2 * time.Hour})
		// A signal sent during the delay waits for the run, which takes it
		// once started.
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("go", "early") }, time.Hour)
		env.ExecuteWorkflow(func(ctx workflow.Context) ([]any, error) {
			now, started := workflow.Now(ctx), workflow.GetInfo(ctx).WorkflowStartTime
			var sig string
			workflow.GetSignalChannel(ctx, "go").Receive(ctx, &sig)
			return []any{now, started, sig, workflow.Now(ctx)}, nil
		})
		var got []any
		if err := env.GetWorkflowResult(&got); err != nil {
			t.Fatal(err)
		}
		want := start.Add(2 * time.Hour).Format(time.RFC3339Nano)
		if len(got) != 4 || got[0] != want || got[1] != want || got[2] != "early" || got[3] != want {
			t.Fatalf("Now, WorkflowStartTime, the signal and Now after it: %v, want %v, %v, early, %v", got, want, want, want)
		}
	})
}
