package worker

import (
	"strings"
	"testing"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The worker reads a command's options as the one type sdk/workflow issues
// them with. A command that carries any other type is not taken for one
// with no options (which would run an activity without its timeouts and
// retry policy, or start a child under a derived id): it is sent to where
// the worker reports it, with the type it carried.
func TestCommandsWithoutTheSDKsOptionsAreReported(t *testing.T) {
	r := &run{w: &queueWorker{queue: "q"}}
	r.job.Job, r.job.WorkflowID = 7, "wf"
	good := &replay.Command{Step: "1", Kind: replay.KindActivity, Name: "A",
		Options: activityCommand{Options: workflow.ActivityOptions{TaskQueue: "q", StartToCloseTimeout: 5}}}
	if !r.isInline(good) {
		t.Fatal("an activity of the worker's queue does not run inline")
	}
	if opts, _, _ := activityOptions(good); opts.StartToCloseTimeout != 5 {
		t.Fatalf("the activity's options read back as %+v", opts)
	}
	bad := &replay.Command{Step: "2", Kind: replay.KindActivity, Name: "B",
		Options: sdkhook.Activity[*workflow.ActivityOptions]{Options: &workflow.ActivityOptions{}}}
	if r.isInline(bad) || !r.isRemote(bad) {
		t.Fatal("an activity with options of another type runs inline, with none")
	}
	if _, err := r.createRemote(bad); err == nil || !strings.Contains(err.Error(), "step 2: the activity command \"B\" carries sdkhook.Activity[*") {
		t.Fatalf("creating the job of an activity with options of another type: %v", err)
	}
	child := &replay.Command{Step: "3", Kind: replay.KindChild, Name: "C",
		Options: childCommand{Options: workflow.ChildWorkflowOptions{WorkflowID: "kid"}}}
	if id := r.remoteID(child); id != "kid" {
		t.Fatalf("the child's workflow id is %q", id)
	}
}
