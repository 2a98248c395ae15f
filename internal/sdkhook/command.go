package sdkhook

import "github.com/heddlewf/heddle/replay"

// The options of workflow commands (replay.CommandOptions), one type for
// each kind of command that has options, from the workflow call that issues
// the command (sdk/workflow) to the worker that carries it out
// (sdk/worker).
//
// The SDK's option types (workflow.ActivityOptions, ChildWorkflowOptions,
// ReviewOptions) are declared in sdk/workflow, which imports this package, so
// these types take them as a type parameter O: sdk/workflow issues, and
// sdk/worker reads, exactly Activity[workflow.ActivityOptions],
// Child[workflow.ChildWorkflowOptions] and Review[workflow.ReviewOptions]. A
// command's options are then one typed value all the way, with no field of
// type any to assert; the worker checks the one assertion it makes.

// Activity is the options of an activity command (workflow.ExecuteActivity
// or ExecuteLocalActivity).
type Activity[O any] struct {
	// Options are the activity's options (workflow.ActivityOptions).
	Options O
	// DependsOn are the steps of the activities whose futures the options'
	// DependsOn lists, taken when the command was issued.
	DependsOn []string
	// Local marks a local activity; LocalFn is the function its workflow
	// call was given (nil: the function registered under the command's
	// name). A user's function: its type is the user's.
	Local   bool
	LocalFn any
}

// CommandKind implements replay.CommandOptions.
func (Activity[O]) CommandKind() replay.CommandKind { return replay.KindActivity }

// Child is the options of a child workflow command
// (workflow.ExecuteChildWorkflow): Options is its
// workflow.ChildWorkflowOptions.
type Child[O any] struct{ Options O }

// CommandKind implements replay.CommandOptions.
func (Child[O]) CommandKind() replay.CommandKind { return replay.KindChild }

// Review is the options of a review task command (workflow.ExecuteReview):
// Options is its workflow.ReviewOptions.
type Review[O any] struct{ Options O }

// CommandKind implements replay.CommandOptions.
func (Review[O]) CommandKind() replay.CommandKind { return replay.KindReview }

// External is the options of an external signal or cancel command: the
// target run (RunID "" is the workflow id's current run). A signal's name
// is the command's Name and its argument the command's Input.
type External struct {
	WorkflowID string
	RunID      string
	// Cancel marks a cancel request (replay.KindCancelExternal); a signal
	// (replay.KindSignalExternal) otherwise.
	Cancel bool
}

// CommandKind implements replay.CommandOptions.
func (e External) CommandKind() replay.CommandKind {
	if e.Cancel {
		return replay.KindCancelExternal
	}
	return replay.KindSignalExternal
}
