package engine

import (
	"errors"
	"fmt"
)

// checkSchedule validates the parts of a schedule a create or an update sets.
func (ch *checker) schedule(id string, spec *ScheduleSpec, act *ScheduleAction, pol *SchedulePolicy, st *ScheduleState, h Header) {
	ch.name("ID", id, true)
	if ch.err != nil {
		return
	}
	if _, field, err := CompileSpec(spec); err != nil {
		ch.fail(field, err.Error())
		return
	}
	cj := act.CreateJob(h.NowMS)
	if err := cj.Check(ch.lim); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			c := *fe
			c.Command, c.Field = ch.cmd, "Action."+fe.Field
			ch.err = &c
			return
		}
		ch.err = err
		return
	}
	// The run's workflow id is the base, "-" and a 20-byte time.
	base := act.WorkflowID
	if base == "" {
		base = id
	}
	if len(base)+21 > ch.lim.MaxNameBytes {
		ch.err = tooLarge(ch.cmd, "Action.WorkflowID", len(base)+21, ch.lim.MaxNameBytes)
		return
	}
	if pol.Overlap > OverlapAllowAll {
		ch.fail("Policy.Overlap", fmt.Sprintf("%d is not a policy (1 Skip .. 6 AllowAll)", pol.Overlap))
	}
	if pol.CatchupWindowMS != 0 && (pol.CatchupWindowMS < MinCatchupWindowMS || pol.CatchupWindowMS > MaxDelayMS) {
		ch.fail("Policy.CatchupWindowMS", fmt.Sprintf("is %d, not 0 (one year) or in [%d, 100 years]", pol.CatchupWindowMS, MinCatchupWindowMS))
	}
	ch.name("State.Note", st.Note, false)
	if st.RemainingActions < 0 || (!st.LimitedActions && st.RemainingActions != 0) {
		ch.fail("State.RemainingActions", fmt.Sprintf("is %d: it must be 0, or positive with LimitedActions", st.RemainingActions))
	}
}

// CreateJob is the start of a run of the action (without its workflow id).
func (act *ScheduleAction) CreateJob(nowMS int64) *CreateJob {
	return &CreateJob{Header: Header{NowMS: nowMS}, Type: act.Type, Queue: act.Queue, Input: act.Input,
		ExecutionTimeoutMS: act.ExecutionTimeoutMS, RunTimeoutMS: act.RunTimeoutMS, Retry: act.Retry}
}

func (c *CreateSchedule) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.schedule(c.ID, &c.Spec, &c.Action, &c.Policy, &c.State, c.Header)
	return ch.err
}

func (c *UpdateSchedule) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.schedule(c.ID, &c.Spec, &c.Action, &c.Policy, &c.State, c.Header)
	return ch.err
}

func (c *PauseSchedule) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	ch.name("Note", c.Note, false)
	return ch.err
}

func (c *TriggerSchedule) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	if c.Overlap > OverlapAllowAll {
		ch.fail("Overlap", fmt.Sprintf("%d is not a policy (0 the schedule's, 1 Skip .. 6 AllowAll)", c.Overlap))
	}
	return ch.err
}

func (c *DeleteSchedule) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	return ch.err
}

func (c *FireSchedules) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Max", c.Max)
	return ch.err
}
