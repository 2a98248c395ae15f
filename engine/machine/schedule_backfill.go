package machine

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

func (a *applier) backfillSchedule(c *engine.BackfillSchedule) (engine.Result, error) {
	s, err := a.loadSchedule(c.ID)
	if err != nil {
		return nil, err
	}
	spec, _, err := engine.CompileSpec(&s.Spec)
	if err != nil {
		return nil, err
	}
	var times []int64
	for t := spec.Next(c.StartMS - 1); t != 0 && t <= c.EndMS; t = spec.Next(t) {
		if len(times) == engine.MaxBackfillTimes {
			return nil, engine.InvalidField("BackfillSchedule", "EndMS", fmt.Sprintf("the range holds more than %d times of the spec: split it", engine.MaxBackfillTimes))
		}
		times = append(times, t)
	}
	res := &engine.ScheduleResult{Schedule: s}
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
