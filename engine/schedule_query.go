package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/storage"
)

// ScheduleService is the schedule half of heddle's API: *Engine implements
// it in-process and engine/httpapi's client over HTTP. It is apart from
// Service so that a Service implementation without schedules still is one;
// a client asks for it with a type assertion. Every method is safe for
// concurrent use, and returns errors matching this package's sentinels
// (ErrUnknownSchedule, ErrScheduleExists, ErrInvalidCommand, ...).
type ScheduleService interface {
	CreateSchedule(ctx context.Context, c CreateSchedule) (*ScheduleResult, error)
	UpdateSchedule(ctx context.Context, c UpdateSchedule) (*ScheduleResult, error)
	PauseSchedule(ctx context.Context, c PauseSchedule) (*ScheduleResult, error)
	TriggerSchedule(ctx context.Context, c TriggerSchedule) (*ScheduleResult, error)
	DeleteSchedule(ctx context.Context, c DeleteSchedule) error
	BackfillSchedule(ctx context.Context, c BackfillSchedule) (*ScheduleResult, error)
	DescribeSchedule(ctx context.Context, id string) (*ScheduleDescription, error)
	ListSchedules(ctx context.Context, q ScheduleListQuery) (*ScheduleListPage, error)
}

var _ ScheduleService = (*Engine)(nil)

// ScheduleDescription is a schedule's record and its coming action times.
type ScheduleDescription struct {
	Schedule *Schedule `json:"schedule"`
	// NextActionTimesMS are up to 10 coming action times (Unix ms, jitter
	// included); none while paused.
	NextActionTimesMS []int64 `json:"next_action_times_ms,omitempty"`
}

// ScheduleListQuery pages ListSchedules.
type ScheduleListQuery struct {
	// After is the cursor: only schedules with a larger id are listed.
	After string `json:"after,omitempty"`
	// Limit bounds the page (0 means 100; at most MaxPage).
	Limit int `json:"limit,omitempty"`
}

// ScheduleListPage is one page of ListSchedules, in id order.
type ScheduleListPage struct {
	Schedules []*ScheduleDescription `json:"schedules"`
	// Next is the cursor of the following page; "" at the end.
	Next string `json:"next,omitempty"`
}

// CreateSchedule creates a schedule.
func (e *Engine) CreateSchedule(ctx context.Context, c CreateSchedule) (*ScheduleResult, error) {
	return propose[*ScheduleResult](ctx, e, &c)
}

// UpdateSchedule replaces a schedule's spec, action, policy and state.
func (e *Engine) UpdateSchedule(ctx context.Context, c UpdateSchedule) (*ScheduleResult, error) {
	return propose[*ScheduleResult](ctx, e, &c)
}

// PauseSchedule pauses or unpauses a schedule.
func (e *Engine) PauseSchedule(ctx context.Context, c PauseSchedule) (*ScheduleResult, error) {
	return propose[*ScheduleResult](ctx, e, &c)
}

// TriggerSchedule takes one action of a schedule now.
func (e *Engine) TriggerSchedule(ctx context.Context, c TriggerSchedule) (*ScheduleResult, error) {
	return propose[*ScheduleResult](ctx, e, &c)
}

// DeleteSchedule deletes a schedule.
func (e *Engine) DeleteSchedule(ctx context.Context, c DeleteSchedule) error {
	_, err := propose[*ScheduleResult](ctx, e, &c)
	return err
}

// DescribeSchedule reads a schedule.
func (e *Engine) DescribeSchedule(ctx context.Context, id string) (*ScheduleDescription, error) {
	var d *ScheduleDescription
	err := e.view(ctx, func(r *storage.Reader) error {
		s, err := ReadSchedule(r, id)
		if err != nil {
			return err
		}
		d = &ScheduleDescription{Schedule: s, NextActionTimesMS: NextActionTimes(s, 10)}
		return nil
	})
	return d, err
}

// ReadSchedule reads the schedule id.
func ReadSchedule(r *storage.Reader, id string) (*Schedule, error) {
	key := storage.ScheduleKey(id)
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownSchedule, id)
	}
	if err != nil {
		return nil, err
	}
	s := new(Schedule)
	if _, err := storage.DecodeAt(key, b, storage.KindSchedule, scheduleVersion, s); err != nil {
		return nil, err
	}
	return s, nil
}

// ListSchedules returns a page of schedules in id order.
func (e *Engine) ListSchedules(ctx context.Context, q ScheduleListQuery) (*ScheduleListPage, error) {
	if q.Limit < 0 || q.Limit > MaxPage {
		return nil, fmt.Errorf("%w: list limit %d is not in [0, %d]", ErrInvalidCommand, q.Limit, MaxPage)
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	page := &ScheduleListPage{Schedules: []*ScheduleDescription{}}
	err := e.view(ctx, func(r *storage.Reader) error {
		p, err := ListSchedules(r, q)
		*page = *p
		return err
	})
	return page, err
}

// ListSchedules reads the page of schedules q asks for (its Limit set, 1
// to MaxPage), in id order. The page is not nil even with an error: it
// holds the schedules read before it.
func ListSchedules(r *storage.Reader, q ScheduleListQuery) (*ScheduleListPage, error) {
	page := &ScheduleListPage{Schedules: []*ScheduleDescription{}}
	var start []byte
	if q.After != "" {
		start = append(storage.ScheduleKey(q.After), 0) // the smallest key after After's
	}
	err := r.Scan(storage.SchedulePrefix, start, true, func(k, v []byte) (bool, error) {
		if len(page.Schedules) == q.Limit {
			page.Next = page.Schedules[len(page.Schedules)-1].Schedule.ID
			return false, nil
		}
		s := new(Schedule)
		if _, err := storage.DecodeAt(k, v, storage.KindSchedule, scheduleVersion, s); err != nil {
			return false, err
		}
		page.Schedules = append(page.Schedules, &ScheduleDescription{Schedule: s, NextActionTimesMS: NextActionTimes(s, 5)})
		return true, nil
	})
	return page, err
}
