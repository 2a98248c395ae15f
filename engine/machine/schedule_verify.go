package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// schedules checks that every schedule record decodes, holds a valid spec,
// and has its live entry in the schedule-due index when it is due.
func (v *verifier) schedules() {
	_ = v.r.Scan(storage.SchedulePrefix, nil, true, func(k, b []byte) (bool, error) {
		s := new(engine.Schedule)
		if _, err := storage.DecodeAt(k, b, storage.KindSchedule, scheduleVersion, s); err != nil {
			return v.add(err), nil
		}
		if string(k[1:]) != s.ID {
			return v.add(fmt.Errorf("schedule record at %q holds id %q", k, s.ID)), nil
		}
		if _, field, err := engine.CompileSpec(&s.Spec); err != nil {
			return v.add(fmt.Errorf("schedule %q: %s %v", s.ID, field, err)), nil
		}
		for _, r := range s.Running {
			if d := r.Delivery; d != nil {
				// A run on another shard whose create is on its way.
				ok, err := v.has(storage.OutboxEntryKey(d.Target, d.Seq))
				if err != nil {
					return false, err
				}
				if !ok || r.Job != 0 {
					return v.add(fmt.Errorf("schedule %q: run %q waits for %s, which is not pending (or names job %d)", s.ID, r.WorkflowID, d, r.Job)), nil
				}
			}
		}
		if s.DueMS != 0 {
			_, err := v.r.Get(storage.SchedDueKey(s.DueMS, s.ID))
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return false, err
			}
			if err != nil {
				return v.add(fmt.Errorf("schedule %q is due at %d but has no due entry", s.ID, s.DueMS)), nil
			}
		}
		return true, nil
	})
}
