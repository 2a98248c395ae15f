package engine

import (
	"fmt"
	"slices"
)

// FoldTaskEvent moves t along e: the one place that says what each task
// event does to the record, used by Apply as it appends and by ProjectTask
// as it replays, so the stored record and the history cannot drift apart
// unless the store is damaged (which Verify then reports).
func FoldTaskEvent(t *Task, e *TaskEvent) {
	wasActive := t.HoldsLease()
	t.State = e.To
	t.LastSeq = e.Seq
	if e.Config != nil {
		t.Config = t.Config.merge(*e.Config)
	}
	if e.By != "" && e.By != ByAuto {
		t.DecidedBy = e.By
	}
	switch e.Type {
	case TaskEventStarted, TaskEventReviewerLeased:
		t.Attempt, t.LeaseOwner, t.LeaseExpiryMS = e.Attempt, e.Owner, e.LeaseExpiryMS
		if e.Type == TaskEventStarted {
			t.Runs++
		} else {
			t.Reviews++
		}
	case TaskEventOutput:
		t.Output = slices.Clone(e.Output)
		t.CostTotal += e.Cost
		if e.Summary != "" {
			t.Summary = e.Summary
		}
	case TaskEventReviewed:
		if e.Review != nil {
			t.Review = *e.Review
			t.Review.Recommendations = slices.Clone(e.Review.Recommendations)
			if e.Review.Summary != "" {
				t.Summary = e.Review.Summary
			}
		}
	case TaskEventRejected, TaskEventResubmitted, TaskEventFixed:
		t.Feedback = e.Reason
		if e.Reason != "" {
			t.Summary = e.Reason
		}
	case TaskEventSuspended, TaskEventCanceled, TaskEventTerminated:
		if e.Reason != "" {
			t.Summary = e.Reason
		}
	}
	// A lease ends with the state it was held in; PAUSED → RUNNING keeps it.
	keeps := t.State == TaskRunning || t.State == TaskPaused || (t.State == TaskReviewing && e.Type == TaskEventReviewerLeased)
	if !keeps {
		t.LeaseOwner, t.LeaseExpiryMS, t.LeaseDigest = "", 0, nil
	}
	isActive := t.HoldsLease()
	switch {
	case isActive && !wasActive:
		t.ActiveSinceMS = e.AtMS
	case wasActive && !isActive:
		t.ActiveMS += e.AtMS - t.ActiveSinceMS
		t.ActiveSinceMS = 0
	}
}

// ByAuto is the By of the steps and approvals the engine makes itself for a
// task configured to (AutoReview, AutoApprove).
const ByAuto = "auto"

// DeriveTaskState returns the state a task's history leads to: the To of
// its last event (TaskNone for an empty history). CheckTaskHistory says
// whether the history is legal.
func DeriveTaskState(hist []TaskEvent) TaskState {
	if len(hist) == 0 {
		return TaskNone
	}
	return hist[len(hist)-1].To
}

// CheckTaskHistory checks the invariants of a task's history
// (docs/state-machines.md §4) and returns the first one broken, as an
// *InvariantError:
//
//  0. seqs run 1, 2, 3 … without gaps, and times never go back;
//  1. each event starts where the one before ended (From), and its
//     (type, From, To) is an edge of the task table;
//  2. the history starts with task_created or task_drafted, and nothing
//     follows an end (SUCCESS, CANCELED, FAILED);
//  3. every write of a lease holder (task_output, task_paused,
//     task_reviewed, a PAUSED task's resume by its worker) carries the
//     attempt of the lease it was given, and a lease-expiry names it too.
func CheckTaskHistory(hist []TaskEvent) error {
	state := TaskNone
	var attempt uint64
	var lastAt int64
	for i := range hist {
		e := &hist[i]
		bad := func(rule int, format string, args ...any) error {
			return &InvariantError{Invariant: rule, Seq: e.Seq, Detail: fmt.Sprintf("task: "+format, args...)}
		}
		if e.Seq != uint64(i+1) {
			return bad(0, "seq %d at position %d", e.Seq, i+1)
		}
		if e.AtMS < lastAt {
			return bad(0, "time %d before the previous event's %d", e.AtMS, lastAt)
		}
		lastAt = e.AtMS
		if state.Terminal() {
			return bad(2, "%s after the task ended %s", e.Type, state)
		}
		if e.From != state {
			return bad(1, "%s starts from %s, but the task is %s", e.Type, e.From, state)
		}
		if to, ok := TaskNext(e.From, e.Type, e.To); !ok || to != e.To {
			return bad(1, "%s from %s to %s is not in the task table", e.Type, e.From, e.To)
		}
		switch e.Type {
		case TaskEventStarted, TaskEventReviewerLeased:
			if e.Attempt != attempt+1 {
				return bad(3, "%s gives attempt %d after attempt %d", e.Type, e.Attempt, attempt)
			}
			attempt = e.Attempt
		case TaskEventOutput, TaskEventPaused, TaskEventReviewed, TaskEventLeaseExpired:
			if e.Attempt != attempt {
				return bad(3, "%s by attempt %d while the lease is attempt %d", e.Type, e.Attempt, attempt)
			}
		}
		state = e.To
	}
	return nil
}

// ProjectTask replays hist over the task's identity (the fields CreateTask
// set, taken from base) and returns the record the history implies. The
// lease expiry, which heartbeats renew without an event, and the ready
// time, which other tasks' ends decide, are taken from base.
func ProjectTask(base *Task, hist []TaskEvent) *Task {
	t := &Task{
		ID: base.ID, Job: base.Job, Phase: base.Phase, Description: base.Description,
		JobDescription: base.JobDescription, Queue: base.Queue, ReviewQueue: base.ReviewQueue,
		Type: base.Type, ReviewType: base.ReviewType, Deps: slices.Clone(base.Deps),
		AutoReview: base.AutoReview, AutoApprove: base.AutoApprove,
		ParentJob: base.ParentJob, ParentStep: base.ParentStep,
	}
	for i := range hist {
		FoldTaskEvent(t, &hist[i])
	}
	if t.LeaseOwner != "" {
		// The history holds neither a renewal nor the token: they are the
		// record's (Verify checks the token's presence on its own).
		t.LeaseExpiryMS, t.LeaseDigest = base.LeaseExpiryMS, base.LeaseDigest
	}
	t.ReadyAtMS = base.ReadyAtMS
	return t
}
