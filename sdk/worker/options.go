package worker

import (
	"fmt"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The options sdk/workflow issues each kind of command with
// (replay.Command.Options): internal/sdkhook's carriers over sdk/workflow's
// option types. A command's options are read back with one checked type
// assertion to these; external commands carry an sdkhook.External.
type (
	activityCommand = sdkhook.Activity[workflow.ActivityOptions]
	childCommand    = sdkhook.Child[workflow.ChildWorkflowOptions]
	reviewCommand   = sdkhook.Review[workflow.ReviewOptions]
)

// activityOf returns the options activity command c was issued with, and
// whether c has them: sdk/workflow issues every activity with an
// activityCommand, and the worker makes one for an activity task, so false
// means c is not an activity's command (or, a bug of the SDK, carries
// options of another type).
func activityOf(c *replay.Command) (activityCommand, bool) {
	a, ok := c.Options.(activityCommand)
	return a, ok
}

// errOptions is the error of a command whose options are not those the SDK
// issues its kind with: a bug of the SDK, which the worker reports rather
// than carry the command out with no options.
func errOptions(c *replay.Command) error {
	return fmt.Errorf("worker: step %s: the %s command %q carries %T, not the SDK's options for it", c.Step, c.Kind, c.Name, c.Options)
}
