package machine_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// wantTaskOps is the human commands' table: the state each command leads
// to from each state; a state missing from a row is an illegal cell.
var wantTaskOps = map[engine.TaskOp]map[engine.TaskState]engine.TaskState{
	engine.TaskOpActivate: {engine.TaskDraft: engine.TaskPending},
	engine.TaskOpConfig:   {engine.TaskDraft: engine.TaskDraft},
	engine.TaskOpSuspend: {engine.TaskDraft: engine.TaskSuspended, engine.TaskPending: engine.TaskSuspended, engine.TaskRunning: engine.TaskSuspended, engine.TaskPaused: engine.TaskSuspended,
		engine.TaskReviewRequired: engine.TaskSuspended, engine.TaskReviewing: engine.TaskSuspended, engine.TaskApprovalRequired: engine.TaskSuspended,
		engine.TaskInterventionRequired: engine.TaskSuspended},
	engine.TaskOpResume: {engine.TaskSuspended: engine.TaskPending, engine.TaskPaused: engine.TaskRunning},
	engine.TaskOpCancel: {engine.TaskDraft: engine.TaskCanceled, engine.TaskPending: engine.TaskCanceled, engine.TaskSuspended: engine.TaskCanceled,
		engine.TaskRunning: engine.TaskCanceled, engine.TaskPaused: engine.TaskCanceled, engine.TaskReviewRequired: engine.TaskCanceled,
		engine.TaskReviewing: engine.TaskCanceled, engine.TaskApprovalRequired: engine.TaskCanceled, engine.TaskInterventionRequired: engine.TaskCanceled},
	engine.TaskOpStep:      {engine.TaskReviewRequired: engine.TaskReviewing},
	engine.TaskOpApprove:   {engine.TaskApprovalRequired: engine.TaskSuccess},
	engine.TaskOpReject:    {engine.TaskApprovalRequired: engine.TaskPending},
	engine.TaskOpResubmit:  {engine.TaskInterventionRequired: engine.TaskPending},
	engine.TaskOpFix:       {engine.TaskInterventionRequired: engine.TaskReviewRequired},
	engine.TaskOpTerminate: {engine.TaskInterventionRequired: engine.TaskCanceled},
}

// taskTo drives a new task of job j (phase "p") through the engine into
// state s, with the commands a person, a worker and a reviewer give.
func (h *harness) taskTo(job string, s engine.TaskState) engine.TaskID {
	h.t.Helper()
	c := &engine.CreateTask{Job: job, Phase: "p", Queue: "tq-" + job, Type: "work", Draft: s == engine.TaskDraft}
	id := h.must(c).(*engine.TaskResult).Task
	op := func(o engine.TaskOp) {
		h.must(&engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id}, Op: o, By: "ann"})
	}
	claim := func(role engine.TaskRole) uint64 {
		r := h.must(&engine.ClaimTasks{Role: role, Queue: "tq-" + job, Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimTasksResult)
		if len(r.Tasks) != 1 || r.Tasks[0].Task != id {
			h.t.Fatalf("claim %s in %s: %+v", role, job, r)
		}
		return r.Tasks[0].Attempt
	}
	report := func(rp engine.TaskReport) { h.must(&rp) }
	switch s {
	case engine.TaskDraft, engine.TaskPending:
	case engine.TaskSuspended:
		op(engine.TaskOpSuspend)
	case engine.TaskCanceled:
		op(engine.TaskOpCancel)
	default:
		a := claim(engine.TaskRoleWork)
		if s == engine.TaskRunning {
			break
		}
		if s == engine.TaskPaused {
			report(engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: a}, Op: engine.TaskReportPause})
			break
		}
		report(engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: a}, Op: engine.TaskReportOutput, Output: []byte("out"), Cost: 1})
		if s == engine.TaskReviewRequired {
			break
		}
		op(engine.TaskOpStep)
		if s == engine.TaskReviewing {
			break
		}
		a = claim(engine.TaskRoleReview)
		v := engine.VerdictApprove
		if s == engine.TaskInterventionRequired {
			v = engine.VerdictIntervene
		}
		report(engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: a}, Op: engine.TaskReportVerdict, Review: &engine.Review{Verdict: v, Summary: "judged"}})
		if s == engine.TaskSuccess {
			op(engine.TaskOpApprove)
		}
	}
	if got := h.task(id).State; got != s {
		h.t.Fatalf("driving a task to %s reached %s", s, got)
	}
	return id
}

func (h *harness) task(id engine.TaskID) *engine.Task {
	h.t.Helper()
	var t *engine.Task
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		t, err = machine.ReadTask(r, id)
		return err
	})
	return t
}

func (h *harness) taskHistory(id engine.TaskID) []engine.TaskEvent {
	h.t.Helper()
	var evs []engine.TaskEvent
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		evs, err = machine.ReadTaskHistory(r, id)
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
	for _, s := range engine.TaskStates() {
		if s == engine.TaskFailed {
			continue // no command leads there; TestTaskFailedIsTerminal covers it
		}
		for _, op := range engine.TaskOps() {
			job := fmt.Sprintf("%s-%s", s, op)
			id := h.taskTo(job, s)
			cmd := &engine.TaskCommand{TaskTarget: engine.TaskTarget{ID: id}, Op: op, By: "bob", Reason: "because"}
			if op == engine.TaskOpConfig {
				cmd.Config = &engine.TaskConfig{Objective: "new objective"}
			}
			want, legal := wantTaskOps[op][s]
			before := h.snapshot()
			res, err := h.apply(cmd)
			if !legal {
				var se *engine.TaskStateError
				if !errors.As(err, &se) || !errors.Is(err, engine.ErrIllegalTaskCommand) {
					t.Errorf("%s in %s: got %v, want a TaskStateError", op, s, err)
					continue
				}
				if se.State != s || !slices.Equal(se.Legal, engine.LegalTaskOps(s)) || se.Code() != engine.TaskStateCode {
					t.Errorf("%s in %s: error names state %s, legal %v", op, s, se.State, se.Legal)
				}
				sameStore(t, before, h.snapshot())
				continue
			}
			if err != nil {
				t.Errorf("%s in %s: %v, want %s", op, s, err, want)
				continue
			}
			if got := res.(*engine.TaskResult).State; got != want {
				t.Errorf("%s in %s: reached %s, want %s", op, s, got, want)
			}
			hist := h.taskHistory(id)
			last := hist[len(hist)-1]
			if last.By != "bob" || last.Type != op.Event() || last.From != s || last.To != want {
				t.Errorf("%s in %s: last event %+v", op, s, last)
			}
			if op == engine.TaskOpConfig && h.task(id).Config.Objective != "new objective" {
				t.Errorf("config did not change the objective")
			}
		}
	}
	h.verify()
}
