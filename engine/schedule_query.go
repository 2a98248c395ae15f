package engine

import "context"

// ScheduleService is the schedule half of heddle's API: *embedded.Engine implements
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
