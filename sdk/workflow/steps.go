package workflow

import (
	"errors"
	"fmt"
)

// ReplanErrorType is the failure type of an activity whose critic decided
// to replan: the step failed for good, and the workflow is to choose what
// to do instead. Match it with errors.Is(err, ErrReplan).
const ReplanErrorType = "ReplanError"

// ErrReplan is matched (errors.Is) by the error of an activity whose critic
// decided to replan. The *ActivityError it comes in wraps a
// *temporal.ApplicationError of type ReplanErrorType whose message is the
// critic's reason.
var ErrReplan error = &typedSentinel{msg: "workflow: the critic asked to replan", failureType: ReplanErrorType}

// typedSentinel is a sentinel error that names a failure type. A
// *temporal.ApplicationError of that type matches it (errors.Is), however
// it crossed the history: ApplicationError.Is asks a target for its
// FailureType.
type typedSentinel struct{ msg, failureType string }

func (s *typedSentinel) Error() string { return s.msg }

// FailureType is the type of the application errors that match s.
func (s *typedSentinel) FailureType() string { return s.failureType }

// dependencySteps returns the steps of the activities whose futures deps
// are (checkStepOptions made sure each is one), for the command's options:
// the worker leases the step once they all succeeded.
func dependencySteps(deps []Future) []string {
	steps := make([]string, 0, len(deps))
	for _, f := range deps {
		if fi, ok := f.(*futureImpl); ok && fi.step != "" {
			steps = append(steps, fi.step)
		}
	}
	return steps
}

// checkStepOptions refuses step options the engine would refuse later, so
// that the activity's future fails at once with the reason: a dependency
// that is not an activity's future, an empty capability or selector key,
// a negative timeout. Resources, critics, dependencies and questions to a
// person are for activities the workflow's own worker runs (queue is the
// workflow's task queue): one sent to another queue is refused rather
// than run without them.
func checkStepOptions(opts *ActivityOptions, queue string) error {
	if opts.TaskQueue != "" && opts.TaskQueue != queue && (len(opts.RequiredCapabilities) > 0 || len(opts.LabelSelector) > 0 ||
		opts.Critic != "" || len(opts.DependsOn) > 0 || opts.NeedsUserTimeout > 0) {
		return fmt.Errorf("RequiredCapabilities, LabelSelector, Critic, DependsOn and NeedsUserTimeout are for activities on the workflow's own task queue %q, not %q",
			queue, opts.TaskQueue)
	}
	for i, f := range opts.DependsOn {
		if fi, ok := f.(*futureImpl); !ok || fi.step == "" {
			return fmt.Errorf("DependsOn[%d] is not the future of an activity (ExecuteActivity's)", i)
		}
	}
	for i, c := range opts.RequiredCapabilities {
		if c == "" {
			return fmt.Errorf("RequiredCapabilities[%d] is empty", i)
		}
	}
	for k := range opts.LabelSelector {
		if k == "" {
			return errors.New("LabelSelector has an empty key")
		}
	}
	if opts.NeedsUserTimeout < 0 {
		return fmt.Errorf("NeedsUserTimeout %v is negative", opts.NeedsUserTimeout)
	}
	return nil
}
