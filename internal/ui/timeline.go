package ui

import (
	"encoding/json"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// eventView is one event of the timeline.
type eventView struct {
	engine.Event
	// OffsetMS is the time since the history's first event.
	OffsetMS int64
	// Class groups events for their colour: status, step, signal, timer,
	// cancel or other.
	Class   string
	Payload *payloadView
	// Waits says what a job_waiting event waits for.
	Waits []string
	// Message is a failure event's error message, shown beside it so that
	// a person sees why without opening the payload.
	Message string
	// Failure is a failure event's chain of errors when one of them
	// carries a stack trace (a panic's), shown as text.
	Failure *failureView
	// TimerLabel names a fired timer for people ("retry of activity
	// Charge, try 3,"): the event's Name is its id ("retry:1:2"), which
	// the label's title keeps.
	TimerLabel string
}

// eventClasses is the timeline's colour of each event type the engine and
// the SDK write; status events are "status", others "other".
var eventClasses = map[engine.EventType]string{
	engine.EventSignalReceived:        "signal",
	engine.EventTimerFired:            "timer",
	engine.EventTimerScheduled:        "timer",
	engine.EventTimerCanceled:         "timer",
	engine.EventCancelRequested:       "cancel",
	engine.EventActivityScheduled:     "step",
	engine.EventActivityAttemptFailed: "step",
	engine.EventActivityCompleted:     "step",
	engine.EventActivityFailed:        "step",
	engine.EventChildScheduled:        "step",
	engine.EventChildCompleted:        "step",
	engine.EventChildFailed:           "step",
	engine.EventStepCommitted:         "step",
	engine.EventEffectRecorded:        "step",
	engine.EventMarkerRecorded:        "other",
}

// viewEvent is an event of run job, read with its payload when that is at
// most maxEventPayloadBytes long, for the timeline; firstMS is when the run
// began, names the activities of its steps.
func viewEvent(job engine.JobID, ev engine.Event, firstMS int64, names map[string]string) eventView {
	v := eventView{Event: ev, OffsetMS: ev.AtMS - firstMS, Class: "other",
		Payload: viewEventPayload(&ev, maxEventPayloadBytes, eventLimits, eventPayloadPath(job, ev.Seq))}
	// The view keeps the rendering; the event's own bytes are not needed
	// by the page, which links them.
	v.Event.Payload = nil
	if c, ok := eventClasses[ev.Type]; ok {
		v.Class = c
	} else if engine.IsStatusEvent(ev.Type) {
		v.Class = "status"
		if isFailureEvent(ev.Type) {
			v.Class = "bad"
		}
	}
	if ev.Type == engine.EventTimerFired && ev.Name != "" {
		v.TimerLabel = strings.TrimSuffix(timerLabel(ev.Name, names), ",")
	}
	if isFailureEvent(ev.Type) {
		v.Message = failureMessage(ev.Payload)
		if f := viewFailure(ev.Payload); f != nil && f.HasStack() {
			v.Failure = f
		}
	}
	if ev.Wait != nil {
		v.Waits = describeWait(ev.Wait, ev.Wait.Timers, names)
		if ev.Wait.TimerAtMS != 0 {
			v.Waits = append(v.Waits, timerLabel(ev.Wait.TimerID, names)+" at "+fmtTime(ev.Wait.TimerAtMS))
		}
	}
	return v
}

// isFailureEvent reports whether an event of type t records a failure: a
// try or a step that failed, or a run that failed, timed out or was
// terminated.
func isFailureEvent(t engine.EventType) bool {
	return strings.HasSuffix(string(t), "_failed") || t == engine.EventJobTimedOut || t == engine.EventJobTerminated
}

// failureMessage is the "message" of a failure payload: the SDK writes a
// failed try and a failed run as a JSON object with one, and the engine's
// own failures (engine.Failure) have one too. Anything else has none.
func failureMessage(b []byte) string {
	var f struct {
		Message string `json:"message"`
	}
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &f) != nil {
		return ""
	}
	return cutMessage(f.Message)
}
