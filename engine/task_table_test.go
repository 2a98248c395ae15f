package engine

import (
	"errors"
	"slices"
	"testing"
)

// The task transition matrix of docs/state-machines.md §4, written out
// here independently of taskEdges: the origin model's table, plus the rows
// and moves its text gives (PAUSED from and to RUNNING; suspend from any
// active state, PAUSED included; RUNNING and PAUSED
// back to PENDING and REVIEWING back to REVIEW_REQUIRED when a lease
// expires).
var wantTaskMatrix = map[TaskState][]TaskState{
	TaskDraft:                {TaskPending, TaskSuspended, TaskCanceled},
	TaskPending:              {TaskRunning, TaskSuspended, TaskCanceled},
	TaskSuspended:            {TaskPending, TaskCanceled},
	TaskRunning:              {TaskReviewRequired, TaskSuspended, TaskCanceled, TaskPaused, TaskPending},
	TaskPaused:               {TaskRunning, TaskSuspended, TaskCanceled, TaskPending},
	TaskReviewRequired:       {TaskReviewing, TaskSuspended, TaskCanceled},
	TaskReviewing:            {TaskApprovalRequired, TaskInterventionRequired, TaskSuspended, TaskCanceled, TaskReviewRequired},
	TaskApprovalRequired:     {TaskSuccess, TaskPending, TaskSuspended, TaskCanceled},
	TaskInterventionRequired: {TaskPending, TaskReviewRequired, TaskSuspended, TaskCanceled},
	TaskSuccess:              nil,
	TaskCanceled:             nil,
	TaskFailed:               nil,
}

// Every (from, to) cell of the matrix, legal and illegal.
func TestTaskMatrixCellByCell(t *testing.T) {
	got := TaskTransitions()
	for _, from := range TaskStates() {
		for _, to := range TaskStates() {
			want := slices.Contains(wantTaskMatrix[from], to)
			if has := slices.Contains(got[from], to); has != want {
				t.Errorf("%s → %s: engine says legal=%v, the docs' matrix says %v", from, to, has, want)
			}
		}
	}
}

// wantTaskOps is the human commands' table: the state each command leads
// to from each state; a state missing from a row is an illegal cell.
var wantTaskOps = map[TaskOp]map[TaskState]TaskState{
	TaskOpActivate: {TaskDraft: TaskPending},
	TaskOpConfig:   {TaskDraft: TaskDraft},
	TaskOpSuspend: {TaskDraft: TaskSuspended, TaskPending: TaskSuspended, TaskRunning: TaskSuspended, TaskPaused: TaskSuspended,
		TaskReviewRequired: TaskSuspended, TaskReviewing: TaskSuspended, TaskApprovalRequired: TaskSuspended,
		TaskInterventionRequired: TaskSuspended},
	TaskOpResume: {TaskSuspended: TaskPending, TaskPaused: TaskRunning},
	TaskOpCancel: {TaskDraft: TaskCanceled, TaskPending: TaskCanceled, TaskSuspended: TaskCanceled,
		TaskRunning: TaskCanceled, TaskPaused: TaskCanceled, TaskReviewRequired: TaskCanceled,
		TaskReviewing: TaskCanceled, TaskApprovalRequired: TaskCanceled, TaskInterventionRequired: TaskCanceled},
	TaskOpStep:      {TaskReviewRequired: TaskReviewing},
	TaskOpApprove:   {TaskApprovalRequired: TaskSuccess},
	TaskOpReject:    {TaskApprovalRequired: TaskPending},
	TaskOpResubmit:  {TaskInterventionRequired: TaskPending},
	TaskOpFix:       {TaskInterventionRequired: TaskReviewRequired},
	TaskOpTerminate: {TaskInterventionRequired: TaskCanceled},
}

// LegalTaskOps agrees with the table row by row.
func TestLegalTaskOpsMatchTable(t *testing.T) {
	for _, s := range TaskStates() {
		var want []TaskOp
		for _, op := range TaskOps() {
			if _, ok := wantTaskOps[op][s]; ok {
				want = append(want, op)
			}
		}
		if got := LegalTaskOps(s); !slices.Equal(got, want) {
			t.Errorf("%s: legal %v, want %v", s, got, want)
		}
	}
}

// FAILED is kept for compatibility: terminal, reached by nothing.
func TestTaskFailedIsTerminal(t *testing.T) {
	if !TaskFailed.Terminal() || len(TaskTransitions()[TaskFailed]) != 0 || len(LegalTaskOps(TaskFailed)) != 0 {
		t.Fatal("FAILED must be terminal with no move out")
	}
	for _, e := range taskEdges {
		if e.To == TaskFailed {
			t.Fatalf("edge %+v leads to FAILED", e)
		}
	}
}

// The task state names round-trip through their JSON form.
func TestTaskStateNames(t *testing.T) {
	for _, s := range TaskStates() {
		b, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back TaskState
		if err := back.UnmarshalJSON(b); err != nil || back != s {
			t.Fatalf("%s → %s → %s (%v)", s, b, back, err)
		}
	}
	var byNumber TaskState
	if err := byNumber.UnmarshalJSON([]byte("8")); err != nil || byNumber != TaskApprovalRequired {
		t.Fatalf("8 read as %s (%v)", byNumber, err)
	}
	if err := byNumber.UnmarshalJSON([]byte("99")); err == nil {
		t.Fatal("an unknown number was read")
	}
	if _, err := ParseTaskState("DONE"); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("an unknown name parsed: %v", err)
	}
}
