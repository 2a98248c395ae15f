package client

import (
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func TestScheduleCalendarSpecAsCron(t *testing.T) {
	cases := []struct {
		cal  ScheduleCalendarSpec
		want string
	}{
		{ScheduleCalendarSpec{}, "0 0 0 * * *"},
		// Temporal's sample: 5 pm on Fridays.
		{ScheduleCalendarSpec{Hour: []ScheduleRange{{Start: 17}}, DayOfWeek: []ScheduleRange{{Start: 5}}}, "0 0 17 * * 5"},
		{ScheduleCalendarSpec{Minute: []ScheduleRange{{Start: 0, End: 59, Step: 15}}, Hour: []ScheduleRange{{Start: 9, End: 17}},
			DayOfWeek: []ScheduleRange{{Start: 1, End: 5}, {Start: 0}}}, "0 0-59/15 9-17 * * 1-5,0"},
		{ScheduleCalendarSpec{Second: []ScheduleRange{{Start: 30, End: 10}}, DayOfMonth: []ScheduleRange{{Start: 1}}, Month: []ScheduleRange{{Start: 1, End: 12, Step: 3}}},
			"30 0 0 1 1-12/3 *"},
	}
	for _, tc := range cases {
		got, err := tc.cal.cron()
		if err != nil || got != tc.want {
			t.Errorf("%+v: %q %v, want %q", tc.cal, got, err, tc.want)
		}
		if err := engine.ParseCron(got); err != nil {
			t.Errorf("%q does not parse: %v", got, err)
		}
	}
	for _, bad := range []ScheduleCalendarSpec{
		{Year: []ScheduleRange{{Start: 2030}}},
		{Hour: []ScheduleRange{{Start: 24}}},
		{DayOfMonth: []ScheduleRange{{Start: 0}}},
	} {
		if _, err := bad.cron(); err == nil || !strings.Contains(err.Error(), "ScheduleCalendarSpec") {
			t.Errorf("%+v: %v, want a refusal naming the field", bad, err)
		}
	}
}
