package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Asynchronous completion: an activity task whose code returns
// activity.ErrResultPending is parked on engine.AsyncCompletionSignal, and
// engine.CompleteAsync (client.CompleteActivity) ends it later.

// taskToken is the token of the activity task r runs, nil for a workflow's
// run (its inline activities cannot be completed asynchronously).
func (r *run) taskToken() []byte {
	if r.taskCancel == nil {
		return nil
	}
	// The task's workflow id is "<workflow id>/<run id>/<step>": the step
	// is the activity's id in its workflow (CompleteActivityByID).
	wf := r.job.WorkflowID
	step := wf[strings.LastIndexByte(wf, '/')+1:]
	return sdkhook.TaskToken{Job: r.job.Job, Attempt: r.ref.Attempt, LeaseToken: r.ref.Token, WorkflowID: wf, ActivityID: step}.Encode()
}

// resultPending reports whether o's error is ErrResultPending, which ends
// the tries: an activity task is parked, and an inline activity fails for
// good, since nobody could complete it.
func (r *run) resultPending(o *outcome) bool {
	if !errors.Is(o.err, activity.ErrResultPending) {
		return false
	}
	if r.taskCancel == nil {
		o.err = resultPendingInline(o.c.Name)
	}
	return true
}

// resultPendingInline is the failure of an activity that returned
// ErrResultPending inside its workflow's worker: it has no task token, so
// nobody could complete it, and it fails for good whatever its retry
// policy says.
func resultPendingInline(name string) error {
	return workflow.NewApplicationError(fmt.Sprintf("activity %s returned ErrResultPending, but runs inside its workflow's worker: "+
		"give it its own ActivityOptions.TaskQueue to complete it asynchronously", name), "ResultPendingInline", true)
}

// parkForCompletion parks an activity task that returned ErrResultPending:
// its job waits, with no lease, for CompleteAsync.
func (w *queueWorker) parkForCompletion(ctx context.Context, j engine.ClaimedJob, ref engine.LeaseRef) error {
	_, err := w.e.Wait(ctx, engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{engine.AsyncCompletionSignal}, Park: true},
		SeenSeq: j.LastSeq})
	if errors.Is(err, engine.ErrStaleAttempt) {
		return nil // completed already, with the token the activity handed over
	}
	return err
}
