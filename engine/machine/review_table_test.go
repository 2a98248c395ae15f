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

// wantReviewOps is the human commands' table: the state each command leads
// to from each state; a state missing from a row is an illegal cell.
var wantReviewOps = map[engine.ReviewOp]map[engine.ReviewState]engine.ReviewState{
	engine.ReviewOpActivate: {engine.ReviewDraft: engine.ReviewPending},
	engine.ReviewOpConfig:   {engine.ReviewDraft: engine.ReviewDraft},
	engine.ReviewOpSuspend: {engine.ReviewDraft: engine.ReviewSuspended, engine.ReviewPending: engine.ReviewSuspended, engine.ReviewRunning: engine.ReviewSuspended, engine.ReviewPaused: engine.ReviewSuspended,
		engine.ReviewReviewRequired: engine.ReviewSuspended, engine.ReviewReviewing: engine.ReviewSuspended, engine.ReviewApprovalRequired: engine.ReviewSuspended,
		engine.ReviewInterventionRequired: engine.ReviewSuspended},
	engine.ReviewOpResume: {engine.ReviewSuspended: engine.ReviewPending, engine.ReviewPaused: engine.ReviewRunning},
	engine.ReviewOpCancel: {engine.ReviewDraft: engine.ReviewCanceled, engine.ReviewPending: engine.ReviewCanceled, engine.ReviewSuspended: engine.ReviewCanceled,
		engine.ReviewRunning: engine.ReviewCanceled, engine.ReviewPaused: engine.ReviewCanceled, engine.ReviewReviewRequired: engine.ReviewCanceled,
		engine.ReviewReviewing: engine.ReviewCanceled, engine.ReviewApprovalRequired: engine.ReviewCanceled, engine.ReviewInterventionRequired: engine.ReviewCanceled},
	engine.ReviewOpStep:      {engine.ReviewReviewRequired: engine.ReviewReviewing},
	engine.ReviewOpApprove:   {engine.ReviewApprovalRequired: engine.ReviewSuccess},
	engine.ReviewOpReject:    {engine.ReviewApprovalRequired: engine.ReviewPending},
	engine.ReviewOpResubmit:  {engine.ReviewInterventionRequired: engine.ReviewPending},
	engine.ReviewOpFix:       {engine.ReviewInterventionRequired: engine.ReviewReviewRequired},
	engine.ReviewOpTerminate: {engine.ReviewInterventionRequired: engine.ReviewCanceled},
}

// reviewTo drives a new task of job j (phase "p") through the engine into
// state s, with the commands a person, a worker and a reviewer give.
func (h *harness) reviewTo(job string, s engine.ReviewState) engine.ReviewID {
	h.t.Helper()
	c := &engine.CreateReview{Job: job, Phase: "p", Queue: "tq-" + job, Type: "work", Draft: s == engine.ReviewDraft}
	id := h.must(c).(*engine.ReviewResult).Review
	op := func(o engine.ReviewOp) {
		h.must(&engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: o, By: "ann"})
	}
	claim := func(role engine.ReviewRole) uint64 {
		r := h.must(&engine.ClaimReviews{Role: role, Queue: "tq-" + job, Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimReviewsResult)
		if len(r.Reviews) != 1 || r.Reviews[0].Review != id {
			h.t.Fatalf("claim %s in %s: %+v", role, job, r)
		}
		return r.Reviews[0].Attempt
	}
	report := func(rp engine.ReviewReport) { h.must(&rp) }
	switch s {
	case engine.ReviewDraft, engine.ReviewPending:
	case engine.ReviewSuspended:
		op(engine.ReviewOpSuspend)
	case engine.ReviewCanceled:
		op(engine.ReviewOpCancel)
	default:
		a := claim(engine.ReviewRoleWork)
		if s == engine.ReviewRunning {
			break
		}
		if s == engine.ReviewPaused {
			report(engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: a}, Op: engine.ReviewReportPause})
			break
		}
		report(engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: a}, Op: engine.ReviewReportOutput, Output: []byte("out"), Cost: 1})
		if s == engine.ReviewReviewRequired {
			break
		}
		op(engine.ReviewOpStep)
		if s == engine.ReviewReviewing {
			break
		}
		a = claim(engine.ReviewRoleReview)
		v := engine.VerdictApprove
		if s == engine.ReviewInterventionRequired {
			v = engine.VerdictIntervene
		}
		report(engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: a}, Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: v, Summary: "judged"}})
		if s == engine.ReviewSuccess {
			op(engine.ReviewOpApprove)
		}
	}
	if got := h.review(id).State; got != s {
		h.t.Fatalf("driving a task to %s reached %s", s, got)
	}
	return id
}

func (h *harness) review(id engine.ReviewID) *engine.Review {
	h.t.Helper()
	var t *engine.Review
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		t, err = machine.ReadReview(r, id)
		return err
	})
	return t
}

func (h *harness) reviewHistory(id engine.ReviewID) []engine.ReviewEvent {
	h.t.Helper()
	var evs []engine.ReviewEvent
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		evs, err = machine.ReadReviewHistory(r, id)
		return err
	})
	return evs
}

// Every (state, command) cell, through the engine: a legal command moves
// the task to the table's state and records who gave it; an illegal one
// is refused with a *ReviewStateError naming the state and the legal
// commands, and writes nothing.
func TestReviewCommandsCellByCell(t *testing.T) {
	h := newHarness(t)
	for _, s := range engine.ReviewStates() {
		if s == engine.ReviewFailed {
			continue // no command leads there; TestReviewFailedIsTerminal covers it
		}
		for _, op := range engine.ReviewOps() {
			job := fmt.Sprintf("%s-%s", s, op)
			id := h.reviewTo(job, s)
			cmd := &engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: op, By: "bob", Reason: "because"}
			if op == engine.ReviewOpConfig {
				cmd.Config = &engine.ReviewConfig{Objective: "new objective"}
			}
			want, legal := wantReviewOps[op][s]
			before := h.snapshot()
			res, err := h.apply(cmd)
			if !legal {
				var se *engine.ReviewStateError
				if !errors.As(err, &se) || !errors.Is(err, engine.ErrIllegalReviewCommand) {
					t.Errorf("%s in %s: got %v, want a ReviewStateError", op, s, err)
					continue
				}
				if se.State != s || !slices.Equal(se.Legal, engine.LegalReviewOps(s)) || se.Code() != engine.ReviewStateCode {
					t.Errorf("%s in %s: error names state %s, legal %v", op, s, se.State, se.Legal)
				}
				sameStore(t, before, h.snapshot())
				continue
			}
			if err != nil {
				t.Errorf("%s in %s: %v, want %s", op, s, err, want)
				continue
			}
			if got := res.(*engine.ReviewResult).State; got != want {
				t.Errorf("%s in %s: reached %s, want %s", op, s, got, want)
			}
			hist := h.reviewHistory(id)
			last := hist[len(hist)-1]
			if last.By != "bob" || last.Type != op.Event() || last.From != s || last.To != want {
				t.Errorf("%s in %s: last event %+v", op, s, last)
			}
			if op == engine.ReviewOpConfig && h.review(id).Config.Objective != "new objective" {
				t.Errorf("config did not change the objective")
			}
		}
	}
	h.verify()
}
