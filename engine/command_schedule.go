package engine

import (
	"context"
	"fmt"
)

// BackfillSchedule takes the actions of a schedule's spec times in
// [StartMS, EndMS] now, as if those times were passing (Temporal's
// backfill): each under Overlap (Unspecified: the schedule's policy), named
// after its time, whether the schedule is paused or not, and regardless of
// the catch-up window and of RemainingActions. A range with more than
// MaxBackfillTimes times is refused: split it.
type BackfillSchedule struct {
	Header
	ID      string        `json:"id" msgpack:"id"`
	StartMS int64         `json:"start_ms" msgpack:"s"`
	EndMS   int64         `json:"end_ms" msgpack:"e"`
	Overlap OverlapPolicy `json:"overlap,omitempty" msgpack:"ov,omitempty"`
}

// MaxBackfillTimes bounds the spec times of one BackfillSchedule: the runs
// one command may start.
const MaxBackfillTimes = 100

func (*BackfillSchedule) Kind() CommandKind { return KindBackfillSchedule }

func (c *BackfillSchedule) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	switch {
	case c.StartMS <= 0 || c.StartMS > maxScheduleTimeMS:
		ch.fail("StartMS", fmt.Sprintf("is %d, not a time up to the year 9999", c.StartMS))
	case c.EndMS < c.StartMS || c.EndMS > maxScheduleTimeMS:
		ch.fail("EndMS", fmt.Sprintf("is %d, before StartMS %d or after the year 9999", c.EndMS, c.StartMS))
	}
	if c.Overlap > OverlapAllowAll {
		ch.fail("Overlap", fmt.Sprintf("%d is not a policy (0 the schedule's, 1 Skip .. 6 AllowAll)", c.Overlap))
	}
	return ch.err
}

func (a *applier) backfillSchedule(c *BackfillSchedule) (Result, error) {
	s, err := a.loadSchedule(c.ID)
	if err != nil {
		return nil, err
	}
	spec, _, err := CompileSpec(&s.Spec)
	if err != nil {
		return nil, err
	}
	var times []int64
	for t := spec.Next(c.StartMS - 1); t != 0 && t <= c.EndMS; t = spec.Next(t) {
		if len(times) == MaxBackfillTimes {
			return nil, InvalidField("BackfillSchedule", "EndMS", fmt.Sprintf("the range holds more than %d times of the spec: split it", MaxBackfillTimes))
		}
		times = append(times, t)
	}
	res := &ScheduleResult{Schedule: s}
	a.refreshRunning(s)
	if err := a.drainBuffer(s, res); err != nil {
		return nil, err
	}
	for _, t := range times {
		if err := a.act(s, t, a.now, overlapOf(s, c.Overlap), res); err != nil {
			return nil, err
		}
	}
	if err := a.reschedule(s, s.DueMS, res); err != nil {
		return nil, err
	}
	return res, nil
}

// BackfillSchedule takes the actions of a range of a schedule's times now.
func (e *Engine) BackfillSchedule(ctx context.Context, c BackfillSchedule) (*ScheduleResult, error) {
	return propose[*ScheduleResult](ctx, e, &c)
}
