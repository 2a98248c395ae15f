package workflow

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// ReviewOptions configure ExecuteReview: a review task, a unit of work whose
// output must pass a review and an approval before the workflow (and the
// tasks that depend on it) may go on (docs/state-machines.md §4).
type ReviewOptions struct {
	// Job groups the tasks of one DAG, and is the manifest's job_id
	// (`heddle task describe JOB`). Empty: the workflow id.
	Job string
	// Phase names the task within its job, uniquely (the manifest lists
	// phases). Required.
	Phase string
	// DependsOn lists phases of the same job, issued earlier, that must
	// reach SUCCESS before this task may run: the engine keeps it PENDING
	// until then, so a workflow may issue a whole DAG at once.
	DependsOn []string
	// Description says what the task is; JobDescription what the job is
	// (the first one given is the manifest's description).
	Description    string
	JobDescription string
	// Objective, Details and AcceptanceCriteria are the task's
	// configuration, which the work and the reviewer read.
	Objective          string
	Details            string
	AcceptanceCriteria []string
	// TaskQueue is where workers claim the work; ReviewQueue where
	// reviewers claim the review. Empty: the workflow's task queue, and
	// then TaskQueue.
	TaskQueue   string
	ReviewQueue string
	// Reviewer names the reviewer function (worker.RegisterReviewer) that
	// judges the output; empty: any reviewer on the review queue.
	Reviewer string
	// AutoReview starts the review as soon as the output is recorded
	// (otherwise a person runs `heddle task step`); AutoApprove approves a
	// review whose verdict is approve (otherwise a person approves).
	AutoReview  bool
	AutoApprove bool
	// Draft creates the task in DRAFT, to be configured and activated by a
	// person before it runs.
	Draft bool
}

// ReviewError is what ExecuteReview's future returns when the review task
// ended without SUCCESS (canceled, or terminated by a person).
type ReviewError struct {
	Phase   string
	Step    string
	Message string
	Cause   error
}

func (e *ReviewError) Error() string {
	return fmt.Sprintf("task %s (step %s) ended without success: %s", e.Phase, e.Step, e.Message)
}

// Unwrap returns the failure the engine recorded.
func (e *ReviewError) Unwrap() error { return e.Cause }

// ExecuteReview asks for work (an activity function, or its registered name)
// to be done with args as a review task, and returns the future of its
// output. The work runs on a worker of the task queue that registered it;
// its output is then reviewed (by a reviewer registered with
// worker.RegisterReviewer) and approved (by a person, or automatically),
// and only then does the future resolve: at SUCCESS. A rejection sends the
// work back with the reviewer's and the person's feedback
// (activity.GetReviewInfo). A task that ends CANCELED fails the future with a
// *ReviewError.
func ExecuteReview(ctx Context, opts ReviewOptions, work any, args ...any) Future {
	st := stateOf(ctx)
	f, set := newCommandFuture()
	if opts.Phase == "" {
		set(nil, errors.New("workflow: ExecuteReview needs ReviewOptions.Phase"))
		return f
	}
	name, input, err := prepareCommand(ctx, "task", work, args)
	if err != nil {
		set(nil, err)
		return f
	}
	st.x.Issue(replay.KindReview, name, input, sdkhook.Review[ReviewOptions]{Options: opts}, 0, func(r replay.Resolution) {
		if !r.Failed {
			set(converter.NewEncodedValue(r.Payload), nil)
			return
		}
		step := ""
		if r.Event != nil {
			step = r.Event.Step
		}
		cause := sdkhook.DecodeFailure(r.Payload)
		set(nil, &ReviewError{Phase: opts.Phase, Step: step, Message: cause.Error(), Cause: cause})
	})
	return f
}

// TaskOptions is the former name of ReviewOptions.
//
// Deprecated: use ReviewOptions.
type TaskOptions = ReviewOptions

// TaskError is the former name of ReviewError.
//
// Deprecated: use ReviewError.
type TaskError = ReviewError

// ExecuteTask is the former name of ExecuteReview.
//
// Deprecated: use ExecuteReview.
func ExecuteTask(ctx Context, opts ReviewOptions, work any, args ...any) Future {
	return ExecuteReview(ctx, opts, work, args...)
}
