package ui

import (
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
)

// The compact history: what a person reads a run's history for, without
// the engine's bookkeeping. Each activity, child workflow and timer is one
// entry however many events it wrote (an activity retried ten times wrote
// some fifty: each try's failure, the wait for its retry timer, the timer,
// the wake and the next lease), and the events of leases and waits are
// left out. The full history beside it shows every event.

// maxGroups bounds the entries the compact history shows: the newest.
const maxGroups = 500

// historyGroup is one entry of the compact history.
type historyGroup struct {
	// FirstSeq and LastSeq are the events it stands for.
	FirstSeq, LastSeq uint64
	// AtMS is when its first event was written, OffsetMS that after the
	// run began; Events how many it holds.
	AtMS, OffsetMS int64
	Events         int
	// Class colours it as the timeline's event classes do.
	Class string
	// Title says what it is ("activity Charge", "signal approve",
	// "job_completed"); Step is its step, if any.
	Title, Step string
	// State is how it stands (an activity's "completed after 3 tries");
	// Detail the last failure or the reason; NextTryMS when a retried
	// activity's next try starts.
	State, Detail string
	NextTryMS     int64
	// Bad: it failed.
	Bad bool
}

// compactBuilder builds the compact history from a run's events, given one
// at a time.
type compactBuilder struct {
	groups []*historyGroup
	// open are the activity, child and timer groups by step.
	open map[string]*historyGroup
	// tries counts each activity's failed tries.
	tries map[string]int
}

func newCompactBuilder() *compactBuilder {
	return &compactBuilder{open: map[string]*historyGroup{}, tries: map[string]int{}}
}

// hiddenInCompact reports the events the compact history leaves out: a
// run's leases and waits, a step's leases, the phase-one records of a
// step's commit, and the timers of an activity's retries (which its entry
// stands for).
func hiddenInCompact(ev *engine.Event) bool {
	switch ev.Type {
	case engine.EventJobLeased, engine.EventJobRunning, engine.EventJobWaiting, engine.EventWaitCompleted,
		engine.EventStepLeased, engine.EventStepStarted, engine.EventEffectRecorded:
		return true
	case engine.EventJobRequeued:
		return ev.Reason == engine.ReasonReleased || ev.Reason == "lease_expired" || ev.Reason == "retry_delay_elapsed"
	case engine.EventTimerFired, engine.EventTimerScheduled:
		return strings.HasPrefix(ev.Name, replay.RetryTimerPrefix) || strings.HasPrefix(ev.Step, replay.RetryTimerPrefix)
	}
	return false
}

// add reads the next event.
func (b *compactBuilder) add(ev *engine.Event) {
	if hiddenInCompact(ev) {
		return
	}
	switch ev.Type {
	case engine.EventActivityScheduled, engine.EventActivityAttemptFailed, engine.EventActivityCompleted, engine.EventActivityFailed:
		b.activity(ev)
		return
	case engine.EventChildScheduled, engine.EventChildCompleted, engine.EventChildFailed:
		g := b.stepGroup(ev, "child workflow", "step")
		switch ev.Type {
		case engine.EventChildScheduled:
			g.State = "started"
		case engine.EventChildCompleted:
			g.State = "completed"
		default:
			g.State, g.Detail, g.Bad = "failed", failureMessage(ev.Payload), true
		}
		return
	case engine.EventTimerScheduled, engine.EventTimerFired, engine.EventTimerCanceled:
		step := ev.Step
		if ev.Type == engine.EventTimerFired {
			step = ev.Name // the engine names a fired timer by its id, the step
		}
		if step != "" {
			g := b.stepGroupOf(step, ev, "timer", "timer")
			g.Title = "timer of step " + step
			g.State = map[engine.EventType]string{engine.EventTimerScheduled: "started", engine.EventTimerFired: "fired", engine.EventTimerCanceled: "canceled"}[ev.Type]
			return
		}
	}
	g := &historyGroup{FirstSeq: ev.Seq, LastSeq: ev.Seq, AtMS: ev.AtMS, Events: 1, Class: "other", Title: compactTitle(ev.Type), Step: ev.Step}
	if c, ok := eventClasses[ev.Type]; ok {
		g.Class = c
	} else if engine.IsStatusEvent(ev.Type) {
		g.Class = "status"
	}
	if isFailureEvent(ev.Type) {
		g.Class, g.Bad, g.Detail = "bad", true, failureMessage(ev.Payload)
	}
	switch {
	case ev.Type == engine.EventSignalReceived && ev.Name == engine.UpdateSignalName:
		g.Title = "update received"
	case ev.Type == engine.EventSignalReceived:
		g.Title = "signal " + ev.Name
	case ev.Name != "":
		g.Title += " " + ev.Name
	}
	if g.Detail == "" {
		g.Detail = ev.Reason
	}
	b.groups = append(b.groups, g)
}

// activity adds an activity's event to its entry.
func (b *compactBuilder) activity(ev *engine.Event) {
	g := b.stepGroup(ev, "activity", "step")
	switch ev.Type {
	case engine.EventActivityScheduled:
		g.State = "scheduled on another queue"
	case engine.EventActivityAttemptFailed:
		b.tries[ev.Step]++
		msg, retryAt := attemptDetail(ev)
		g.State, g.Detail, g.NextTryMS = fmt.Sprintf("retrying: %s", plural(b.tries[ev.Step], "try", "tries")+" failed"), msg, retryAt
	case engine.EventActivityCompleted:
		g.State, g.Detail, g.NextTryMS = "completed"+afterTries(b.tries[ev.Step]), "", 0
	case engine.EventActivityFailed:
		g.State, g.Detail, g.NextTryMS, g.Bad = "failed"+afterTries(b.tries[ev.Step]), failureMessage(ev.Payload), 0, true
	}
}

// stepGroup returns the entry of ev's step, a new one the first time.
func (b *compactBuilder) stepGroup(ev *engine.Event, kind, class string) *historyGroup {
	return b.stepGroupOf(ev.Step, ev, kind, class)
}

func (b *compactBuilder) stepGroupOf(step string, ev *engine.Event, kind, class string) *historyGroup {
	key := kind + "\x00" + step
	g := b.open[key]
	if g == nil {
		g = &historyGroup{FirstSeq: ev.Seq, AtMS: ev.AtMS, Class: class, Title: kind, Step: step}
		b.open[key] = g
		b.groups = append(b.groups, g)
	}
	if ev.Name != "" && ev.Type != engine.EventTimerFired {
		g.Title = kind + " " + ev.Name
	}
	g.LastSeq = ev.Seq
	g.Events++
	if ev.Type == engine.EventChildFailed || ev.Type == engine.EventActivityFailed {
		g.Class = "bad"
	}
	return g
}

// afterTries is " after 3 tries" when an activity failed before it ended.
func afterTries(failed int) string {
	if failed == 0 {
		return ""
	}
	return fmt.Sprintf(" after %d tries", failed+1)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// result returns the newest maxGroups entries, and how many were left out.
func (b *compactBuilder) result() ([]historyGroup, int) {
	cut := max(len(b.groups)-maxGroups, 0)
	out := make([]historyGroup, 0, len(b.groups)-cut)
	for _, g := range b.groups[cut:] {
		out = append(out, *g)
	}
	return out, cut
}

// compactTitles name the run's own events in the compact history in the
// words of Temporal's UI ("Workflow Execution Started" is "run started");
// the full history beside it keeps the engine's names.
var compactTitles = map[engine.EventType]string{
	engine.EventJobCreated:      "run started",
	engine.EventJobDrafted:      "run drafted",
	engine.EventJobQueued:       "run queued",
	engine.EventJobCompleted:    "run completed",
	engine.EventJobFailed:       "run failed",
	engine.EventJobCancelled:    "run cancelled",
	engine.EventJobTerminated:   "run terminated",
	engine.EventJobTimedOut:     "run timed out",
	engine.EventJobSuspended:    "run suspended",
	engine.EventJobResumed:      "run resumed",
	engine.EventCancelRequested: "cancel requested",
	engine.EventStepNeedsUser:   "waits for a person",
	engine.EventStepAnswered:    "answered by a person",
	engine.EventMarkerRecorded:  "marker",
}

// compactTitle is an event's name in the compact history: its words, or
// its type with spaces.
func compactTitle(t engine.EventType) string {
	if s, ok := compactTitles[t]; ok {
		return s
	}
	return strings.ReplaceAll(string(t), "_", " ")
}
