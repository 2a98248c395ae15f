package engine

import (
	"fmt"
	"slices"
)

// FoldReviewEvent moves t along e: the one place that says what each task
// event does to the record, used by Apply as it appends and by ProjectReview
// as it replays, so the stored record and the history cannot drift apart
// unless the store is damaged (which Verify then reports).
func FoldReviewEvent(t *Review, e *ReviewEvent) {
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
	case ReviewEventStarted, ReviewEventReviewerLeased:
		t.Attempt, t.LeaseOwner, t.LeaseExpiryMS = e.Attempt, e.Owner, e.LeaseExpiryMS
		if e.Type == ReviewEventStarted {
			t.Runs++
		} else {
			t.Reviews++
		}
	case ReviewEventOutput:
		t.Output = slices.Clone(e.Output)
		t.CostTotal += e.Cost
		if e.Summary != "" {
			t.Summary = e.Summary
		}
	case ReviewEventReviewed:
		if e.Assessment != nil {
			t.Assessment = *e.Assessment
			t.Assessment.Recommendations = slices.Clone(e.Assessment.Recommendations)
			if e.Assessment.Summary != "" {
				t.Summary = e.Assessment.Summary
			}
		}
	case ReviewEventRejected, ReviewEventResubmitted, ReviewEventFixed:
		t.Feedback = e.Reason
		if e.Reason != "" {
			t.Summary = e.Reason
		}
	case ReviewEventSuspended, ReviewEventCanceled, ReviewEventTerminated:
		if e.Reason != "" {
			t.Summary = e.Reason
		}
	}
	// A lease ends with the state it was held in; PAUSED → RUNNING keeps it.
	keeps := t.State == ReviewRunning || t.State == ReviewPaused || (t.State == ReviewReviewing && e.Type == ReviewEventReviewerLeased)
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

// DeriveReviewState returns the state a task's history leads to: the To of
// its last event (ReviewNone for an empty history). CheckReviewHistory says
// whether the history is legal.
func DeriveReviewState(hist []ReviewEvent) ReviewState {
	if len(hist) == 0 {
		return ReviewNone
	}
	return hist[len(hist)-1].To
}

// CheckReviewHistory checks the invariants of a task's history
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
func CheckReviewHistory(hist []ReviewEvent) error {
	state := ReviewNone
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
		if to, ok := ReviewNext(e.From, e.Type, e.To); !ok || to != e.To {
			return bad(1, "%s from %s to %s is not in the task table", e.Type, e.From, e.To)
		}
		switch e.Type {
		case ReviewEventStarted, ReviewEventReviewerLeased:
			if e.Attempt != attempt+1 {
				return bad(3, "%s gives attempt %d after attempt %d", e.Type, e.Attempt, attempt)
			}
			attempt = e.Attempt
		case ReviewEventOutput, ReviewEventPaused, ReviewEventReviewed, ReviewEventLeaseExpired:
			if e.Attempt != attempt {
				return bad(3, "%s by attempt %d while the lease is attempt %d", e.Type, e.Attempt, attempt)
			}
		}
		state = e.To
	}
	return nil
}

// ProjectReview replays hist over the task's identity (the fields CreateReview
// set, taken from base) and returns the record the history implies. The
// lease expiry, which heartbeats renew without an event, and the ready
// time, which other tasks' ends decide, are taken from base.
func ProjectReview(base *Review, hist []ReviewEvent) *Review {
	t := &Review{
		ID: base.ID, Job: base.Job, Phase: base.Phase, Description: base.Description,
		JobDescription: base.JobDescription, Queue: base.Queue, ReviewQueue: base.ReviewQueue,
		Type: base.Type, ReviewType: base.ReviewType, Deps: slices.Clone(base.Deps),
		AutoReview: base.AutoReview, AutoApprove: base.AutoApprove,
		ParentJob: base.ParentJob, ParentStep: base.ParentStep,
	}
	for i := range hist {
		FoldReviewEvent(t, &hist[i])
	}
	if t.LeaseOwner != "" {
		// The history holds neither a renewal nor the token: they are the
		// record's (Verify checks the token's presence on its own).
		t.LeaseExpiryMS, t.LeaseDigest = base.LeaseExpiryMS, base.LeaseDigest
	}
	t.ReadyAtMS = base.ReadyAtMS
	return t
}
