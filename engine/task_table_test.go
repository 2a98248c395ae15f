package engine

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/heddlewf/heddle/storage"
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

// taskTo drives a new task of job j (phase "p") through the engine into
// state s, with the commands a person, a worker and a reviewer give.
func (h *harness) taskTo(job string, s TaskState) TaskID {
	h.t.Helper()
	c := &CreateTask{Job: job, Phase: "p", Queue: "tq-" + job, Type: "work", Draft: s == TaskDraft}
	id := h.must(c).(*TaskResult).Task
	op := func(o TaskOp) { h.must(&TaskCommand{TaskTarget: TaskTarget{ID: id}, Op: o, By: "ann"}) }
	claim := func(role TaskRole) uint64 {
		r := h.must(&ClaimTasks{Role: role, Queue: "tq-" + job, Owner: "w", Max: 1, LeaseMS: 10_000}).(*ClaimTasksResult)
		if len(r.Tasks) != 1 || r.Tasks[0].Task != id {
			h.t.Fatalf("claim %s in %s: %+v", role, job, r)
		}
		return r.Tasks[0].Attempt
	}
	report := func(rp TaskReport) { h.must(&rp) }
	switch s {
	case TaskDraft, TaskPending:
	case TaskSuspended:
		op(TaskOpSuspend)
	case TaskCanceled:
		op(TaskOpCancel)
	default:
		a := claim(TaskRoleWork)
		if s == TaskRunning {
			break
		}
		if s == TaskPaused {
			report(TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: a}, Op: TaskReportPause})
			break
		}
		report(TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: a}, Op: TaskReportOutput, Output: []byte("out"), Cost: 1})
		if s == TaskReviewRequired {
			break
		}
		op(TaskOpStep)
		if s == TaskReviewing {
			break
		}
		a = claim(TaskRoleReview)
		v := VerdictApprove
		if s == TaskInterventionRequired {
			v = VerdictIntervene
		}
		report(TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: a}, Op: TaskReportVerdict, Review: &Review{Verdict: v, Summary: "judged"}})
		if s == TaskSuccess {
			op(TaskOpApprove)
		}
	}
	if got := h.task(id).State; got != s {
		h.t.Fatalf("driving a task to %s reached %s", s, got)
	}
	return id
}

func (h *harness) task(id TaskID) *Task {
	h.t.Helper()
	var t *Task
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		t, err = ReadTask(r, id)
		return err
	})
	return t
}

func (h *harness) taskHistory(id TaskID) []TaskEvent {
	h.t.Helper()
	var evs []TaskEvent
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		evs, err = ReadTaskHistory(r, id)
		return err
	})
	return evs
}

// Every (state, command) cell, through the engine: a legal command moves
// the task to the table's state and records who gave it; an illegal one
// is refused with a *TaskStateError naming the state and the legal
// commands, and writes nothing.
func TestTaskCommandsCellByCell(t *testing.T) {
	h := newHarness(t)
	for _, s := range TaskStates() {
		if s == TaskFailed {
			continue // no command leads there; TestTaskFailedIsTerminal covers it
		}
		for _, op := range TaskOps() {
			job := fmt.Sprintf("%s-%s", s, op)
			id := h.taskTo(job, s)
			cmd := &TaskCommand{TaskTarget: TaskTarget{ID: id}, Op: op, By: "bob", Reason: "because"}
			if op == TaskOpConfig {
				cmd.Config = &TaskConfig{Objective: "new objective"}
			}
			want, legal := wantTaskOps[op][s]
			before := h.snapshot()
			res, err := h.apply(cmd)
			if !legal {
				var se *TaskStateError
				if !errors.As(err, &se) || !errors.Is(err, ErrIllegalTaskCommand) {
					t.Errorf("%s in %s: got %v, want a TaskStateError", op, s, err)
					continue
				}
				if se.State != s || !slices.Equal(se.Legal, LegalTaskOps(s)) || se.Code() != TaskStateCode {
					t.Errorf("%s in %s: error names state %s, legal %v", op, s, se.State, se.Legal)
				}
				sameStore(t, before, h.snapshot())
				continue
			}
			if err != nil {
				t.Errorf("%s in %s: %v, want %s", op, s, err, want)
				continue
			}
			if got := res.(*TaskResult).State; got != want {
				t.Errorf("%s in %s: reached %s, want %s", op, s, got, want)
			}
			hist := h.taskHistory(id)
			last := hist[len(hist)-1]
			if last.By != "bob" || last.Type != op.Event() || last.From != s || last.To != want {
				t.Errorf("%s in %s: last event %+v", op, s, last)
			}
			if op == TaskOpConfig && h.task(id).Config.Objective != "new objective" {
				t.Errorf("config did not change the objective")
			}
		}
	}
	h.verify()
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
