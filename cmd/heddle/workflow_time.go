package main

// This file formats the engine's timestamps (Unix milliseconds). People read
// "3m12s ago" faster than a date, so text output leads with relative times;
// JSON output carries RFC 3339 UTC times, which scripts parse without
// knowing the reader's zone.

import (
	"fmt"
	"time"
)

// wfNow is the time relative times are measured from. It is the wall clock:
// this is the command line, where the operator's "now" is the wall's.
var wfNow = time.Now

// wfRFC3339 is ms as an RFC 3339 UTC time for JSON, "" for 0 (not set).
func wfRFC3339(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// wfWhen is ms as a local date and time with how long ago (or how soon) it
// is: "2025-03-01 14:02:03 CET (3m12s ago)". 0 is "-".
func wfWhen(ms int64) string {
	if ms == 0 {
		return "-"
	}
	t := time.UnixMilli(ms)
	return fmt.Sprintf("%s (%s)", t.Local().Format("2006-01-02 15:04:05 MST"), wfRelative(ms))
}

// wfRelative is how long ago ms was, or how soon it is: "3m12s ago",
// "in 20s". 0 is "-".
func wfRelative(ms int64) string {
	if ms == 0 {
		return "-"
	}
	d := wfNow().Sub(time.UnixMilli(ms))
	switch {
	case d < 0:
		return "in " + wfDuration(-d)
	case d < time.Second:
		return "just now"
	}
	return wfDuration(d) + " ago"
}

// wfOffset is a time since a run's first event: "+0s", "+850ms",
// "+1.234s", "+2m3s".
func wfOffset(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d <= 0:
		return "+0s"
	case d < time.Second:
		return fmt.Sprintf("+%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("+%.3fs", d.Seconds())
	}
	return "+" + wfDuration(d)
}

// wfDuration is d in its two largest units ("3d4h", "2h5m", "3m12s",
// "12s", "850ms"): enough to read, short enough for a table.
func wfDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	s := int64(d / time.Second)
	days, hours, mins, secs := s/86400, s/3600%24, s/60%60, s%60
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh%dm", hours, mins)
	case mins > 0:
		return fmt.Sprintf("%dm%ds", mins, secs)
	}
	return fmt.Sprintf("%ds", secs)
}
