package embedded

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// BackfillSchedule takes the actions of a range of a schedule's times now.
func (e *Engine) BackfillSchedule(ctx context.Context, c engine.BackfillSchedule) (*engine.ScheduleResult, error) {
	return propose[*engine.ScheduleResult](ctx, e, &c)
}

var _ engine.ScheduleService = (*Engine)(nil)

// CreateSchedule creates a schedule.
func (e *Engine) CreateSchedule(ctx context.Context, c engine.CreateSchedule) (*engine.ScheduleResult, error) {
	return propose[*engine.ScheduleResult](ctx, e, &c)
}

// UpdateSchedule replaces a schedule's spec, action, policy and state.
func (e *Engine) UpdateSchedule(ctx context.Context, c engine.UpdateSchedule) (*engine.ScheduleResult, error) {
	return propose[*engine.ScheduleResult](ctx, e, &c)
}

// PauseSchedule pauses or unpauses a schedule.
func (e *Engine) PauseSchedule(ctx context.Context, c engine.PauseSchedule) (*engine.ScheduleResult, error) {
	return propose[*engine.ScheduleResult](ctx, e, &c)
}

// TriggerSchedule takes one action of a schedule now.
func (e *Engine) TriggerSchedule(ctx context.Context, c engine.TriggerSchedule) (*engine.ScheduleResult, error) {
	return propose[*engine.ScheduleResult](ctx, e, &c)
}

// DeleteSchedule deletes a schedule.
func (e *Engine) DeleteSchedule(ctx context.Context, c engine.DeleteSchedule) error {
	_, err := propose[*engine.ScheduleResult](ctx, e, &c)
	return err
}

// DescribeSchedule reads a schedule.
func (e *Engine) DescribeSchedule(ctx context.Context, id string) (*engine.ScheduleDescription, error) {
	var d *engine.ScheduleDescription
	err := e.view(ctx, func(r *storage.Reader) error {
		s, err := machine.ReadSchedule(r, id)
		if err != nil {
			return err
		}
		d = &engine.ScheduleDescription{Schedule: s, NextActionTimesMS: engine.NextActionTimes(s, 10)}
		return nil
	})
	return d, err
}

// ListSchedules returns a page of schedules in id order.
func (e *Engine) ListSchedules(ctx context.Context, q engine.ScheduleListQuery) (*engine.ScheduleListPage, error) {
	if q.Limit < 0 || q.Limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: list limit %d is not in [0, %d]", engine.ErrInvalidCommand, q.Limit, engine.MaxPage)
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	page := &engine.ScheduleListPage{Schedules: []*engine.ScheduleDescription{}}
	err := e.view(ctx, func(r *storage.Reader) error {
		p, err := machine.ListSchedules(r, q)
		*page = *p
		return err
	})
	return page, err
}
