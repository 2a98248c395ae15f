package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// resetLinks checks the links of the runs a reset replaced and made: a run
// that names the run that replaced it (ResetNewRunID) has ended, and that
// run is a newer run of the same workflow id that a reset made; a run a
// reset made names an older, ended run of its workflow id (ResetBaseRunID)
// which links on to it or to a newer reset of it, and a reset point of
// that run (ResetEventID) that its own last workflow_reset event names too.
func (v *verifier) resetLinks() {
	for _, j := range v.reset {
		if err := v.resetLink(j); err != nil {
			if !v.add(fmt.Errorf("job %d: %w", j.ID, err)) {
				return
			}
		}
	}
}

func (v *verifier) resetLink(j *engine.Job) error {
	other := func(id engine.JobID, what string) (*engine.Job, error) {
		o, err := ReadJob(v.r, id)
		if errors.Is(err, engine.ErrUnknownJob) {
			return nil, fmt.Errorf("its %s %d does not exist", what, id)
		}
		if err == nil && o.WorkflowID != j.WorkflowID {
			err = fmt.Errorf("its %s %d is a run of workflow id %q, not %q", what, id, o.WorkflowID, j.WorkflowID)
		}
		return o, err
	}
	if id := j.ResetNewRunID; id != 0 {
		n, err := other(id, "reset's new run")
		switch {
		case err != nil:
			return err
		case !j.Status.Terminal():
			return fmt.Errorf("a reset replaced it with run %d, yet it is %s", id, j.Status)
		case n.ID <= j.ID:
			return fmt.Errorf("the run %d that replaced it is not newer", id)
		case n.ResetBaseRunID == 0:
			return fmt.Errorf("the run %d that replaced it was not made by a reset", id)
		}
	}
	if (j.ResetBaseRunID == 0) != (j.ResetEventID == 0) {
		return fmt.Errorf("reset from run %d at event %d: both or neither are set", j.ResetBaseRunID, j.ResetEventID)
	}
	if j.ResetBaseRunID == 0 {
		return nil
	}
	b, err := other(j.ResetBaseRunID, "reset's base run")
	switch {
	case err != nil:
		return err
	case b.ID >= j.ID:
		return fmt.Errorf("its reset's base run %d is not older", b.ID)
	case !b.Status.Terminal():
		return fmt.Errorf("its reset's base run %d is still %s", b.ID, b.Status)
	case b.ResetNewRunID < j.ID:
		return fmt.Errorf("its reset's base run %d links to run %d, not to it or a newer one", b.ID, b.ResetNewRunID)
	}
	point, err := v.r.Get(storage.EventKey(uint64(b.ID), j.ResetEventID))
	if err != nil {
		return fmt.Errorf("its reset point, event %d of run %d: %w", j.ResetEventID, b.ID, err)
	}
	pev, err := DecodeEvent(point)
	if err != nil {
		return err
	}
	if !engine.IsResetPoint(pev.Type) {
		return fmt.Errorf("its reset point, event %d of run %d, is a %s, not a turn boundary", j.ResetEventID, b.ID, pev.Type)
	}
	hist, _, err := ReadHistory(v.r, j.ID, 0, 0)
	if err != nil {
		return err
	}
	var mark *engine.Event
	for i := range hist {
		if hist[i].Type == engine.EventWorkflowReset {
			mark = &hist[i]
		}
	}
	if mark == nil || mark.BaseRunID != b.ID || mark.ResetEventID != j.ResetEventID {
		return fmt.Errorf("its history's last workflow_reset (%v) does not name run %d at event %d", mark, b.ID, j.ResetEventID)
	}
	return nil
}
