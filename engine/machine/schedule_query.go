package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// ReadSchedule reads the schedule id.
func ReadSchedule(r *storage.Reader, id string) (_ *engine.Schedule, err error) {
	defer markStorage(&err)
	key := storage.ScheduleKey(id)
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", engine.ErrUnknownSchedule, id)
	}
	if err != nil {
		return nil, err
	}
	s := new(engine.Schedule)
	if _, err := storage.DecodeAt(key, b, storage.KindSchedule, scheduleVersion, s); err != nil {
		return nil, err
	}
	return s, nil
}

// ListSchedules reads the page of schedules q asks for (its Limit set, 1
// to MaxPage), in id order. The page is not nil even with an error: it
// holds the schedules read before it.
func ListSchedules(r *storage.Reader, q engine.ScheduleListQuery) (_ *engine.ScheduleListPage, err error) {
	defer markStorage(&err)
	page := &engine.ScheduleListPage{Schedules: []*engine.ScheduleDescription{}}
	var start []byte
	if q.After != "" {
		start = append(storage.ScheduleKey(q.After), 0) // the smallest key after After's
	}
	err = r.Scan(storage.SchedulePrefix, start, true, func(k, v []byte) (bool, error) {
		if len(page.Schedules) == q.Limit {
			page.Next = page.Schedules[len(page.Schedules)-1].Schedule.ID
			return false, nil
		}
		s := new(engine.Schedule)
		if _, err := storage.DecodeAt(k, v, storage.KindSchedule, scheduleVersion, s); err != nil {
			return false, err
		}
		page.Schedules = append(page.Schedules, &engine.ScheduleDescription{Schedule: s, NextActionTimesMS: engine.NextActionTimes(s, 5)})
		return true, nil
	})
	return page, err
}
