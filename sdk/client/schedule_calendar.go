package client

import (
	"fmt"
	"strconv"
	"strings"
)

// ScheduleRange is a set of values of one calendar field: Start to End
// (End below Start means Start alone) every Step (0 means 1), as Temporal's.
type ScheduleRange struct {
	Start int
	End   int
	Step  int
}

// ScheduleCalendarSpec matches the times whose every field is in one of its
// ranges, as Temporal's. Second, Minute and Hour default to 0; DayOfMonth,
// Month and DayOfWeek (0 is Sunday) to all. Year is not supported: a spec
// with a Year range is refused. The engine keeps a calendar as the cron
// expression it is equal to, so Describe shows it among CronExpressions.
type ScheduleCalendarSpec struct {
	Second     []ScheduleRange
	Minute     []ScheduleRange
	Hour       []ScheduleRange
	DayOfMonth []ScheduleRange
	Month      []ScheduleRange
	Year       []ScheduleRange
	DayOfWeek  []ScheduleRange
	Comment    string
}

// cron returns the 6-field cron line (seconds first) the calendar equals.
func (c ScheduleCalendarSpec) cron() (string, error) {
	if len(c.Year) > 0 {
		return "", fmt.Errorf("client: ScheduleCalendarSpec.Year is not supported")
	}
	fields := []struct {
		name     string
		ranges   []ScheduleRange
		lo, hi   int
		allByDef bool
	}{
		{"Second", c.Second, 0, 59, false}, {"Minute", c.Minute, 0, 59, false}, {"Hour", c.Hour, 0, 23, false},
		{"DayOfMonth", c.DayOfMonth, 1, 31, true}, {"Month", c.Month, 1, 12, true}, {"DayOfWeek", c.DayOfWeek, 0, 6, true},
	}
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		if len(f.ranges) == 0 {
			if f.allByDef {
				parts = append(parts, "*")
			} else {
				parts = append(parts, "0")
			}
			continue
		}
		var items []string
		for _, r := range f.ranges {
			end, step := r.End, r.Step
			if end < r.Start {
				end = r.Start
			}
			if step <= 0 {
				step = 1
			}
			if r.Start < f.lo || end > f.hi {
				return "", fmt.Errorf("client: ScheduleCalendarSpec.%s range %d-%d is not within %d-%d", f.name, r.Start, end, f.lo, f.hi)
			}
			item := strconv.Itoa(r.Start)
			if end != r.Start || step != 1 {
				item += "-" + strconv.Itoa(end)
			}
			if step != 1 {
				item += "/" + strconv.Itoa(step)
			}
			items = append(items, item)
		}
		parts = append(parts, strings.Join(items, ","))
	}
	return strings.Join(parts, " "), nil
}
