package ui

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"time":        fmtTime,
	"ago":         ago,
	"statusClass": statusClass,
	"stepClass":   stepClass,
	"duration":    fmtDuration,
	"lower":       strings.ToLower,
	"add":         func(a, b int) int { return a + b },
	"shellQuote":  shellQuote,
	"shellWord":   shellWord,
	"nextRunText": engine.NextRunText,
	// pathEscape writes a name (a schedule id, a step) as one segment of
	// a page's path: a "/" in it does not make two.
	"pathEscape": url.PathEscape,
}

// fmtTime writes Unix ms as a UTC time to the millisecond; 0 is "—".
func fmtTime(ms int64) string {
	if ms == 0 {
		return "—"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

// ago writes how long before now ms was ("12s ago"), or after ("in 3s").
func ago(ms int64, now time.Time) string {
	if ms == 0 {
		return ""
	}
	d := now.Sub(time.UnixMilli(ms))
	if d < 0 {
		return "in " + roughDuration(-d)
	}
	return roughDuration(d) + " ago"
}

// roughDuration writes d to its largest unit or two: 850ms, 12s, 3m20s,
// 5h12m, 3d4h.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// fmtDuration writes a duration in ms, as +offsets of the timeline.
func fmtDuration(ms int64) string { return roughDuration(time.Duration(ms) * time.Millisecond) }

// statusClass is the CSS class of a status badge: open, waiting, good, bad
// or stopped.
func statusClass(s engine.Status) string {
	switch s {
	case engine.StatusQueued, engine.StatusRetrying, engine.StatusDraft:
		return "st-queued"
	case engine.StatusRunning:
		return "st-running"
	case engine.StatusWaiting, engine.StatusParked, engine.StatusSuspended:
		return "st-waiting"
	case engine.StatusCompleted:
		return "st-completed"
	case engine.StatusFailed, engine.StatusTimedOut:
		return "st-failed"
	case engine.StatusCancelled, engine.StatusTerminated:
		return "st-stopped"
	}
	return "st-none"
}

// stepClass is the CSS class of a step state's badge, as statusClass is of
// a run's: waiting for its turn, running, waiting for a person, succeeded
// or failed.
func stepClass(s engine.StepState) string {
	switch s {
	case engine.StepPending, engine.StepWaitingDeps, engine.StepRetrying, engine.StepSwitchingResource, engine.StepLeaseTimeout:
		return "st-queued"
	case engine.StepLeased, engine.StepRunning:
		return "st-running"
	case engine.StepNeedsUser:
		return "st-waiting"
	case engine.StepSucceeded:
		return "st-completed"
	case engine.StepFailedRetryable, engine.StepFailedResource, engine.StepFailedFatal, engine.StepFailed:
		return "st-failed"
	}
	return "st-none"
}
