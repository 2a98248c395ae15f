package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

// scheduleRoutes registers the schedule routes. A Service that does not
// implement engine.ScheduleService answers them ErrNoRoute.
func (s *Server) scheduleRoutes() {
	ss, ok := s.cfg.Service.(engine.ScheduleService)
	if !ok {
		return
	}
	s.handle("POST /v1/schedules", RoleClient, command(ss.CreateSchedule))
	s.handle("POST /v1/schedules/update", RoleClient, command(ss.UpdateSchedule))
	s.handle("POST /v1/schedules/pause", RoleClient, command(ss.PauseSchedule))
	s.handle("POST /v1/schedules/trigger", RoleClient, command(ss.TriggerSchedule))
	s.handle("POST /v1/schedules/backfill", RoleClient, command(ss.BackfillSchedule))
	s.handle("POST /v1/schedules/delete", RoleClient, command(func(ctx context.Context, c engine.DeleteSchedule) (*engine.ScheduleResult, error) {
		return &engine.ScheduleResult{}, ss.DeleteSchedule(ctx, c)
	}))
	s.handle("GET /v1/schedules", RoleReader, func(c *call) (any, error) {
		limit, err := c.limitParam()
		if err != nil {
			return nil, err
		}
		page, err := ss.ListSchedules(c.r.Context(), engine.ScheduleListQuery{After: c.r.URL.Query().Get("after"), Limit: limit})
		if page != nil && page.Schedules == nil {
			page.Schedules = []*engine.ScheduleDescription{} // JSON readers see [], not null
		}
		return page, err
	})
	s.handle("GET /v1/schedules/{schedule}", RoleReader, func(c *call) (any, error) {
		id := c.r.PathValue("schedule")
		if id == "" {
			return nil, fieldMissing("describing a schedule", "an id")
		}
		return ss.DescribeSchedule(c.r.Context(), id)
	})
}

var _ engine.ScheduleService = (*Client)(nil)

// CreateSchedule implements engine.ScheduleService.
func (c *Client) CreateSchedule(ctx context.Context, cmd engine.CreateSchedule) (*engine.ScheduleResult, error) {
	return send[engine.ScheduleResult](ctx, c, "/v1/schedules", &cmd, &cmd.Header)
}

// UpdateSchedule implements engine.ScheduleService.
func (c *Client) UpdateSchedule(ctx context.Context, cmd engine.UpdateSchedule) (*engine.ScheduleResult, error) {
	return send[engine.ScheduleResult](ctx, c, "/v1/schedules/update", &cmd, &cmd.Header)
}

// PauseSchedule implements engine.ScheduleService.
func (c *Client) PauseSchedule(ctx context.Context, cmd engine.PauseSchedule) (*engine.ScheduleResult, error) {
	return send[engine.ScheduleResult](ctx, c, "/v1/schedules/pause", &cmd, &cmd.Header)
}

// TriggerSchedule implements engine.ScheduleService.
func (c *Client) TriggerSchedule(ctx context.Context, cmd engine.TriggerSchedule) (*engine.ScheduleResult, error) {
	return send[engine.ScheduleResult](ctx, c, "/v1/schedules/trigger", &cmd, &cmd.Header)
}

// BackfillSchedule implements engine.ScheduleService.
func (c *Client) BackfillSchedule(ctx context.Context, cmd engine.BackfillSchedule) (*engine.ScheduleResult, error) {
	return send[engine.ScheduleResult](ctx, c, "/v1/schedules/backfill", &cmd, &cmd.Header)
}

// DeleteSchedule implements engine.ScheduleService.
func (c *Client) DeleteSchedule(ctx context.Context, cmd engine.DeleteSchedule) error {
	_, err := send[engine.ScheduleResult](ctx, c, "/v1/schedules/delete", &cmd, &cmd.Header)
	return err
}

// DescribeSchedule implements engine.ScheduleService.
func (c *Client) DescribeSchedule(ctx context.Context, id string) (*engine.ScheduleDescription, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: a schedule id is required", engine.ErrInvalidCommand)
	}
	return read[engine.ScheduleDescription](ctx, c, "/v1/schedules/"+url.PathEscape(id), nil)
}

// ListSchedules implements engine.ScheduleService.
func (c *Client) ListSchedules(ctx context.Context, lq engine.ScheduleListQuery) (*engine.ScheduleListPage, error) {
	q := url.Values{}
	if lq.After != "" {
		q.Set("after", lq.After)
	}
	if lq.Limit != 0 {
		q.Set("limit", strconv.Itoa(lq.Limit))
	}
	return read[engine.ScheduleListPage](ctx, c, "/v1/schedules", q)
}

// asyncRoutes registers the route of asynchronous activity completion.
func (s *Server) asyncRoutes() {
	if as, ok := s.cfg.Service.(engine.AsyncService); ok {
		s.handle("POST /v1/jobs/complete-async", RoleClient, command(as.CompleteAsync))
	}
}

var _ engine.AsyncService = (*Client)(nil)

// CompleteAsync implements engine.AsyncService.
func (c *Client) CompleteAsync(ctx context.Context, cmd engine.CompleteAsync) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/complete-async", &cmd, &cmd.Header)
}
