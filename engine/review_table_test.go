package engine

import (
	"errors"
	"slices"
	"testing"
)

// The task transition matrix of docs/state-machines.md §4, written out
// here independently of reviewEdges: the origin model's table, plus the rows
// and moves its text gives (PAUSED from and to RUNNING; suspend from any
// active state, PAUSED included; RUNNING and PAUSED
// back to PENDING and REVIEWING back to REVIEW_REQUIRED when a lease
// expires).
var wantReviewMatrix = map[ReviewState][]ReviewState{
	ReviewDraft:                {ReviewPending, ReviewSuspended, ReviewCanceled},
	ReviewPending:              {ReviewRunning, ReviewSuspended, ReviewCanceled},
	ReviewSuspended:            {ReviewPending, ReviewCanceled},
	ReviewRunning:              {ReviewReviewRequired, ReviewSuspended, ReviewCanceled, ReviewPaused, ReviewPending},
	ReviewPaused:               {ReviewRunning, ReviewSuspended, ReviewCanceled, ReviewPending},
	ReviewReviewRequired:       {ReviewReviewing, ReviewSuspended, ReviewCanceled},
	ReviewReviewing:            {ReviewApprovalRequired, ReviewInterventionRequired, ReviewSuspended, ReviewCanceled, ReviewReviewRequired},
	ReviewApprovalRequired:     {ReviewSuccess, ReviewPending, ReviewSuspended, ReviewCanceled},
	ReviewInterventionRequired: {ReviewPending, ReviewReviewRequired, ReviewSuspended, ReviewCanceled},
	ReviewSuccess:              nil,
	ReviewCanceled:             nil,
	ReviewFailed:               nil,
}

// Every (from, to) cell of the matrix, legal and illegal.
func TestReviewMatrixCellByCell(t *testing.T) {
	got := ReviewTransitions()
	for _, from := range ReviewStates() {
		for _, to := range ReviewStates() {
			want := slices.Contains(wantReviewMatrix[from], to)
			if has := slices.Contains(got[from], to); has != want {
				t.Errorf("%s → %s: engine says legal=%v, the docs' matrix says %v", from, to, has, want)
			}
		}
	}
}

// wantReviewOps is the human commands' table: the state each command leads
// to from each state; a state missing from a row is an illegal cell.
var wantReviewOps = map[ReviewOp]map[ReviewState]ReviewState{
	ReviewOpActivate: {ReviewDraft: ReviewPending},
	ReviewOpConfig:   {ReviewDraft: ReviewDraft},
	ReviewOpSuspend: {ReviewDraft: ReviewSuspended, ReviewPending: ReviewSuspended, ReviewRunning: ReviewSuspended, ReviewPaused: ReviewSuspended,
		ReviewReviewRequired: ReviewSuspended, ReviewReviewing: ReviewSuspended, ReviewApprovalRequired: ReviewSuspended,
		ReviewInterventionRequired: ReviewSuspended},
	ReviewOpResume: {ReviewSuspended: ReviewPending, ReviewPaused: ReviewRunning},
	ReviewOpCancel: {ReviewDraft: ReviewCanceled, ReviewPending: ReviewCanceled, ReviewSuspended: ReviewCanceled,
		ReviewRunning: ReviewCanceled, ReviewPaused: ReviewCanceled, ReviewReviewRequired: ReviewCanceled,
		ReviewReviewing: ReviewCanceled, ReviewApprovalRequired: ReviewCanceled, ReviewInterventionRequired: ReviewCanceled},
	ReviewOpStep:      {ReviewReviewRequired: ReviewReviewing},
	ReviewOpApprove:   {ReviewApprovalRequired: ReviewSuccess},
	ReviewOpReject:    {ReviewApprovalRequired: ReviewPending},
	ReviewOpResubmit:  {ReviewInterventionRequired: ReviewPending},
	ReviewOpFix:       {ReviewInterventionRequired: ReviewReviewRequired},
	ReviewOpTerminate: {ReviewInterventionRequired: ReviewCanceled},
}

// LegalReviewOps agrees with the table row by row.
func TestLegalReviewOpsMatchTable(t *testing.T) {
	for _, s := range ReviewStates() {
		var want []ReviewOp
		for _, op := range ReviewOps() {
			if _, ok := wantReviewOps[op][s]; ok {
				want = append(want, op)
			}
		}
		if got := LegalReviewOps(s); !slices.Equal(got, want) {
			t.Errorf("%s: legal %v, want %v", s, got, want)
		}
	}
}

// FAILED is kept for compatibility: terminal, reached by nothing.
func TestReviewFailedIsTerminal(t *testing.T) {
	if !ReviewFailed.Terminal() || len(ReviewTransitions()[ReviewFailed]) != 0 || len(LegalReviewOps(ReviewFailed)) != 0 {
		t.Fatal("FAILED must be terminal with no move out")
	}
	for _, e := range reviewEdges {
		if e.To == ReviewFailed {
			t.Fatalf("edge %+v leads to FAILED", e)
		}
	}
}

// The task state names round-trip through their JSON form.
func TestReviewStateNames(t *testing.T) {
	for _, s := range ReviewStates() {
		b, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back ReviewState
		if err := back.UnmarshalJSON(b); err != nil || back != s {
			t.Fatalf("%s → %s → %s (%v)", s, b, back, err)
		}
	}
	var byNumber ReviewState
	if err := byNumber.UnmarshalJSON([]byte("8")); err != nil || byNumber != ReviewApprovalRequired {
		t.Fatalf("8 read as %s (%v)", byNumber, err)
	}
	if err := byNumber.UnmarshalJSON([]byte("99")); err == nil {
		t.Fatal("an unknown number was read")
	}
	if _, err := ParseReviewState("DONE"); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("an unknown name parsed: %v", err)
	}
}
