package machine_test

// The coverage of the three transition tables by the traces: every legal
// cell of the job table (status × status event), every legal move of the
// step table and every move of the review-task table is walked by some
// block under testdata/, or is listed below with the reason no command
// takes it. A new legal cell must come with a trace (or a reason), and a
// listed cell that a trace walks must leave the list.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

type jobCell struct {
	from engine.Status
	ev   engine.EventType
}

func (c jobCell) String() string { return fmt.Sprintf("%s + %s", c.from, c.ev) }

// stateEdge is a move between two states of the step or review-task table.
type stateEdge struct{ from, to int }

type traceCoverage struct {
	jobCells    map[jobCell]bool
	stepEdges   map[stateEdge]bool
	reviewEdges map[stateEdge]bool
}

func newTraceCoverage() *traceCoverage {
	return &traceCoverage{jobCells: map[jobCell]bool{}, stepEdges: map[stateEdge]bool{}, reviewEdges: map[stateEdge]bool{}}
}

// untracedJobCells are the legal cells of the job table that no command
// writes (docs/state-machines.md §1: "some legal cells are never used by
// the engine's commands, and are kept because the origin model allows
// them").
var untracedJobCells = map[jobCell]string{
	{engine.StatusNone, engine.EventJobQueued}:         "no command writes job_queued",
	{engine.StatusQueued, engine.EventJobRunning}:      "no command writes job_running",
	{engine.StatusRetrying, engine.EventJobRunning}:    "no command writes job_running",
	{engine.StatusNone, engine.EventJobRequeued}:       "a run starts with job_created; its hold-back follows it",
	{engine.StatusRetrying, engine.EventJobLeased}:     "a Retrying job is not in the ready index",
	{engine.StatusQueued, engine.EventWaitCompleted}:   "wait_completed is written only for a Waiting or Parked job",
	{engine.StatusRunning, engine.EventWaitCompleted}:  "wait_completed is written only for a Waiting or Parked job",
	{engine.StatusRetrying, engine.EventWaitCompleted}: "wait_completed is written only for a Waiting or Parked job",
}

// untracedStepEdges are the legal moves of the step table that no trace
// walks, with the reason.
var untracedStepEdges = map[stateEdge]string{}

func (c *traceCoverage) check(t *testing.T) {
	statuses := []engine.Status{engine.StatusNone}
	for s := engine.StatusQueued; s <= engine.StatusTerminated; s++ {
		statuses = append(statuses, s)
	}
	var events []engine.EventType
	for _, ev := range []engine.EventType{engine.EventJobCreated, engine.EventJobQueued, engine.EventJobRequeued,
		engine.EventJobLeased, engine.EventJobRunning, engine.EventJobWaiting, engine.EventWaitCompleted,
		engine.EventJobCompleted, engine.EventJobFailed, engine.EventJobCancelled, engine.EventJobDrafted,
		engine.EventJobActivated, engine.EventJobSuspended, engine.EventJobResumed, engine.EventJobTimedOut,
		engine.EventJobTerminated} {
		if !engine.IsStatusEvent(ev) {
			t.Fatalf("%s is not a status event", ev)
		}
		events = append(events, ev)
	}
	for _, from := range statuses {
		for _, ev := range events {
			cell := jobCell{from, ev}
			_, legal := engine.BaseTransition(from, ev)
			why, listed := untracedJobCells[cell]
			switch {
			case legal && !c.jobCells[cell] && !listed:
				t.Errorf("job table: %s is legal and no trace takes it: add a block under %s/ (or the reason to untracedJobCells)", cell, traceDir)
			case listed && c.jobCells[cell]:
				t.Errorf("job table: %s is traced now: take it off untracedJobCells (%q)", cell, why)
			}
		}
	}
	all := append([]engine.StepState{engine.StepNone}, engine.StepStates()...)
	for _, from := range all {
		for _, to := range all {
			e := stateEdge{int(from), int(to)}
			why, listed := untracedStepEdges[e]
			switch {
			case engine.StepTransitionLegal(from, to) && !c.stepEdges[e] && !listed:
				t.Errorf("step table: %s → %s is legal and no trace takes it: add a block under %s/", from, to, traceDir)
			case listed && c.stepEdges[e]:
				t.Errorf("step table: %s → %s is traced now: take it off untracedStepEdges (%q)", from, to, why)
			}
		}
	}
	for from, tos := range engine.ReviewTransitions() {
		for _, to := range tos {
			if !c.reviewEdges[stateEdge{int(from), int(to)}] {
				t.Errorf("review-task table: %s → %s is legal and no trace takes it: add a block under %s/", from, to, traceDir)
			}
		}
	}
	for e := range c.reviewEdges {
		from, to := engine.ReviewState(e.from), engine.ReviewState(e.to)
		if from != engine.ReviewNone && from != to && !slices.Contains(engine.ReviewTransitions()[from], to) {
			t.Errorf("review-task table: a trace took %s → %s, which the table does not have", from, to)
		}
	}
}
