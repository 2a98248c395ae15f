package listfilter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// timeLayouts are the absolute forms a time is written in, tried in order.
// The layouts without a zone are read as UTC.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02",
}

// day is the "d" of a relative time.
const day = 24 * time.Hour

// parseTime reads a time value (see the package documentation).
func parseTime(s string, now time.Time) (time.Time, error) {
	if strings.EqualFold(s, "now") {
		return now, nil
	}
	rel, isRel := strings.CutPrefix(strings.ToLower(s), "now")
	if isRel || strings.HasPrefix(s, "-") {
		if !isRel {
			rel = s
		}
		back, ok := strings.CutPrefix(rel, "-")
		if !ok {
			return time.Time{}, fmt.Errorf("time %q: after \"now\" comes \"-\" and a duration, such as now-24h", s)
		}
		d, err := parseDuration(back)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q: %v", s, err)
		}
		return now.Add(-d), nil
	}
	if isDigits(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q: too large for Unix milliseconds", s)
		}
		return time.UnixMilli(ms), nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2026-11-01T10:30:00Z), a date (2026-11-01), Unix milliseconds, now, or a time back from now (-24h, -7d)", s)
}

// parseDuration reads a positive Go duration, or a whole number of days
// ("7d").
func parseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok && isDigits(n) {
		days, err := strconv.Atoi(n)
		if err != nil || days > 100000 {
			return 0, fmt.Errorf("%q: too many days", s)
		}
		return time.Duration(days) * day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (90m, 24h, 7d)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("the duration %q must be positive", s)
	}
	return d, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
