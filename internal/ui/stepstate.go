package ui

import (
	"context"
	"errors"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// readStepInfos reads the engine's state of run id's steps, each question
// longer than maxQuestionBytes left out: nil, and no error, when the API
// has no such read (a server older than step states), so that the page
// shows the steps its history tells alone.
func readStepInfos(ctx context.Context, api engine.BoundedReader, id engine.JobID) ([]engine.StepInfo, error) {
	infos, err := api.QuerySteps(ctx, engine.StepsQuery{Target: engine.Target{Job: id}, MaxQuestionBytes: maxQuestionBytes})
	if errors.Is(err, httpapi.ErrNoRoute) {
		return nil, nil
	}
	return infos, err
}

// mergeStepInfos joins the engine's step states to the steps read from the
// history: each step the engine knows gets its info, and a step the
// history does not show yet (one leased, waiting for a resource or a
// dependency, or known from its heartbeats alone) is added. A step the
// engine holds open is pending, whatever its events said last.
func mergeStepInfos(steps []*stepView, infos []engine.StepInfo) []*stepView {
	byStep := map[string]*stepView{}
	for _, s := range steps {
		byStep[s.Step] = s
	}
	for i := range infos {
		info := &infos[i]
		s := byStep[info.Step]
		if s == nil {
			// No history state: the step's events so far are the
			// engine's (step_leased, ...), which the history view
			// does not read.
			s = &stepView{Step: info.Step, Kind: "activity", Name: info.Activity, AtMS: info.UpdatedMS}
			byStep[info.Step] = s
			steps = append(steps, s)
		}
		s.Engine = info
		if !info.State.Terminal() {
			s.Pending = true
		}
	}
	return steps
}
