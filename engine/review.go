package engine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// ReviewState is the state of a review task (docs/state-machines.md §4): a
// unit of work whose output must pass a review gate and an approval before
// its dependants may start.
type ReviewState uint8

// Review states. The numbers are stored in review records and events and must
// never be reused.
const (
	ReviewNone                 ReviewState = 0 // no history yet
	ReviewDraft                ReviewState = 1
	ReviewPending              ReviewState = 2
	ReviewSuspended            ReviewState = 3
	ReviewRunning              ReviewState = 4
	ReviewPaused               ReviewState = 5
	ReviewReviewRequired       ReviewState = 6
	ReviewReviewing            ReviewState = 7
	ReviewApprovalRequired     ReviewState = 8
	ReviewInterventionRequired ReviewState = 9
	ReviewSuccess              ReviewState = 10
	ReviewCanceled             ReviewState = 11
	// ReviewFailed is kept for compatibility with the origin model: no
	// command leads to it, and it is terminal.
	ReviewFailed ReviewState = 12
)

// numReviewStates is one more than the largest task state.
const numReviewStates = 13

var reviewStateNames = [numReviewStates]string{
	"NONE", "DRAFT", "PENDING", "SUSPENDED", "RUNNING", "PAUSED", "REVIEW_REQUIRED",
	"REVIEWING", "APPROVAL_REQUIRED", "INTERVENTION_REQUIRED", "SUCCESS", "CANCELED", "FAILED",
}

func (s ReviewState) String() string {
	if int(s) < len(reviewStateNames) {
		return reviewStateNames[s]
	}
	// The type's former name: this text is on the wire (the JSON form).
	return fmt.Sprintf("TaskState(%d)", uint8(s))
}

// ParseReviewState returns the state with the given name (as String prints it).
func ParseReviewState(name string) (ReviewState, error) {
	for i, n := range reviewStateNames {
		if i != 0 && n == name {
			return ReviewState(i), nil
		}
	}
	return ReviewNone, fmt.Errorf("%w: unknown task state %q", ErrInvalidCommand, name)
}

// MarshalJSON writes the state by name, as the manifest shows it.
func (s ReviewState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a state by name, or by number as the job statuses
// are read.
func (s *ReviewState) UnmarshalJSON(b []byte) error {
	var n uint8
	if err := json.Unmarshal(b, &n); err == nil {
		if n >= numReviewStates {
			return fmt.Errorf("%w: task state %d is not in [0, %d]", ErrInvalidCommand, n, numReviewStates-1)
		}
		*s = ReviewState(n)
		return nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return fmt.Errorf("task state: %w", err)
	}
	if name == "NONE" || name == "" {
		*s = ReviewNone
		return nil
	}
	v, err := ParseReviewState(name)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Terminal reports whether s ends the task: SUCCESS, CANCELED or FAILED.
func (s ReviewState) Terminal() bool {
	return s == ReviewSuccess || s == ReviewCanceled || s == ReviewFailed
}

// AwaitsPerson reports whether a task in s waits for a person's command:
// REVIEW_REQUIRED (a review to start), APPROVAL_REQUIRED (approve or
// reject) or INTERVENTION_REQUIRED (resubmit, fix or terminate). Such
// tasks are indexed across jobs (ListAwaitingReviews). REVIEWING is not
// among them: it waits for a reviewer's claim, which is a worker's.
func (s ReviewState) AwaitsPerson() bool {
	return s == ReviewReviewRequired || s == ReviewApprovalRequired || s == ReviewInterventionRequired
}

// ReviewStates lists every real state, in numeric order.
func ReviewStates() []ReviewState {
	out := make([]ReviewState, 0, numReviewStates-1)
	for s := ReviewState(1); s < numReviewStates; s++ {
		out = append(out, s)
	}
	return out
}

// ReviewOp is a command a person (or an operator's tool) gives a task. The
// names are those of the CLI and the HTTP API.
type ReviewOp string

// The human commands.
const (
	ReviewOpActivate  ReviewOp = "activate"
	ReviewOpConfig    ReviewOp = "config"
	ReviewOpSuspend   ReviewOp = "suspend"
	ReviewOpResume    ReviewOp = "resume"
	ReviewOpCancel    ReviewOp = "cancel"
	ReviewOpStep      ReviewOp = "step"
	ReviewOpApprove   ReviewOp = "approve"
	ReviewOpReject    ReviewOp = "reject"
	ReviewOpResubmit  ReviewOp = "resubmit"
	ReviewOpFix       ReviewOp = "fix"
	ReviewOpTerminate ReviewOp = "terminate"
)

// ReviewOps lists the human commands in the order the docs give them.
func ReviewOps() []ReviewOp {
	return []ReviewOp{ReviewOpActivate, ReviewOpConfig, ReviewOpSuspend, ReviewOpResume, ReviewOpCancel, ReviewOpStep,
		ReviewOpApprove, ReviewOpReject, ReviewOpResubmit, ReviewOpFix, ReviewOpTerminate}
}

// reviewOpEvents maps each human command to the event it writes.
var reviewOpEvents = map[ReviewOp]ReviewEventType{
	ReviewOpActivate: ReviewEventActivated, ReviewOpConfig: ReviewEventConfigured, ReviewOpSuspend: ReviewEventSuspended,
	ReviewOpResume: ReviewEventResumed, ReviewOpCancel: ReviewEventCanceled, ReviewOpStep: ReviewEventReviewStarted,
	ReviewOpApprove: ReviewEventApproved, ReviewOpReject: ReviewEventRejected, ReviewOpResubmit: ReviewEventResubmitted,
	ReviewOpFix: ReviewEventFixed, ReviewOpTerminate: ReviewEventTerminated,
}

// Event returns the event op writes, or "" for an op this version does not
// know.
func (op ReviewOp) Event() ReviewEventType { return reviewOpEvents[op] }

// reviewEdge is one legal move: event Event takes a task in From to To.
type reviewEdge struct {
	Event    ReviewEventType
	From, To ReviewState
}

// reviewEdges is the task state machine as data. The set of (From, To) pairs
// it holds is the origin model's transition matrix plus the moves its text
// gives and its table leaves out (PAUSED, the stuck recoveries), as listed
// in docs/state-machines.md §4; transitions of the table are tested cell by
// cell against the docs' table (task_table_test.go). Anything not here is
// illegal.
var reviewEdges = func() []reviewEdge {
	var es []reviewEdge
	add := func(ev ReviewEventType, to ReviewState, from ...ReviewState) {
		for _, f := range from {
			es = append(es, reviewEdge{ev, f, to})
		}
	}
	add(ReviewEventCreated, ReviewPending, ReviewNone)
	add(ReviewEventDrafted, ReviewDraft, ReviewNone)
	add(ReviewEventConfigured, ReviewDraft, ReviewDraft)
	add(ReviewEventActivated, ReviewPending, ReviewDraft)
	// Suspend from every active state, as the origin model's text says
	// ("any active state"): PAUSED too, which its matrix leaves out. The
	// lease of a RUNNING, PAUSED or REVIEWING task ends with it.
	add(ReviewEventSuspended, ReviewSuspended, ReviewDraft, ReviewPending, ReviewRunning, ReviewPaused, ReviewReviewRequired,
		ReviewReviewing, ReviewApprovalRequired, ReviewInterventionRequired)
	add(ReviewEventResumed, ReviewPending, ReviewSuspended)
	add(ReviewEventResumed, ReviewRunning, ReviewPaused)
	add(ReviewEventCanceled, ReviewCanceled, ReviewDraft, ReviewPending, ReviewSuspended, ReviewRunning, ReviewPaused,
		ReviewReviewRequired, ReviewReviewing, ReviewApprovalRequired, ReviewInterventionRequired)
	add(ReviewEventStarted, ReviewRunning, ReviewPending)
	add(ReviewEventPaused, ReviewPaused, ReviewRunning)
	add(ReviewEventOutput, ReviewReviewRequired, ReviewRunning)
	add(ReviewEventReviewStarted, ReviewReviewing, ReviewReviewRequired)
	add(ReviewEventReviewerLeased, ReviewReviewing, ReviewReviewing)
	add(ReviewEventReviewed, ReviewApprovalRequired, ReviewReviewing)
	add(ReviewEventReviewed, ReviewInterventionRequired, ReviewReviewing)
	add(ReviewEventApproved, ReviewSuccess, ReviewApprovalRequired)
	add(ReviewEventRejected, ReviewPending, ReviewApprovalRequired)
	add(ReviewEventResubmitted, ReviewPending, ReviewInterventionRequired)
	add(ReviewEventFixed, ReviewReviewRequired, ReviewInterventionRequired)
	add(ReviewEventTerminated, ReviewCanceled, ReviewInterventionRequired)
	add(ReviewEventLeaseExpired, ReviewPending, ReviewRunning, ReviewPaused)
	add(ReviewEventLeaseExpired, ReviewReviewRequired, ReviewReviewing)
	return es
}()

// ReviewNext returns the state event ev leads to from state from, and whether
// that move is legal. For task_reviewed, whose target depends on the
// verdict, want names the target (ReviewNone takes the first legal one).
func ReviewNext(from ReviewState, ev ReviewEventType, want ReviewState) (ReviewState, bool) {
	for _, e := range reviewEdges {
		if e.Event == ev && e.From == from && (want == ReviewNone || e.To == want) {
			return e.To, true
		}
	}
	return from, false
}

// ReviewTransitions returns the task transition matrix the engine enforces:
// for each state, the states it may move to, in numeric order. A move to
// the same state (config, a reviewer's lease) is not listed.
func ReviewTransitions() map[ReviewState][]ReviewState {
	m := map[ReviewState][]ReviewState{}
	for _, e := range reviewEdges {
		if e.From == ReviewNone || e.From == e.To || slices.Contains(m[e.From], e.To) {
			continue
		}
		m[e.From] = append(m[e.From], e.To)
	}
	for s := range m {
		slices.Sort(m[s])
	}
	return m
}

// LegalReviewOps returns the human commands legal in state s, in the order of
// ReviewOps.
func LegalReviewOps(s ReviewState) []ReviewOp {
	var out []ReviewOp
	for _, op := range ReviewOps() {
		if _, ok := ReviewNext(s, reviewOpEvents[op], ReviewNone); ok {
			out = append(out, op)
		}
	}
	return out
}

// ReviewOpTarget returns the state op leads to from s, and whether op is
// legal in s.
func ReviewOpTarget(s ReviewState, op ReviewOp) (ReviewState, bool) {
	ev, ok := reviewOpEvents[op]
	if !ok {
		return s, false
	}
	return ReviewNext(s, ev, ReviewNone)
}

// HoldsLease reports whether t is held by a worker or a
// reviewer under a lease (RUNNING, PAUSED, or REVIEWING once a reviewer
// took it).
func (t *Review) HoldsLease() bool {
	switch t.State {
	case ReviewRunning, ReviewPaused:
		return true
	case ReviewReviewing:
		return t.LeaseOwner != ""
	}
	return false
}
