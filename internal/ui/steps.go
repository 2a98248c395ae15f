package ui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// stepView is one step of a run (an activity, a timer or a child
// workflow) as its history events tell it.
type stepView struct {
	Step string
	// Kind is "activity", "timer" or "child workflow".
	Kind string
	// Name is the activity's or the child's type; "" for a timer.
	Name string
	// State is the step's last known state: scheduled, retrying or
	// waiting while it is pending; completed, failed, fired or canceled
	// once resolved.
	State   string
	Pending bool
	// Remote: the step runs as a job of its own (an activity on another
	// queue, a child workflow), which Job is once found.
	Remote bool
	Job    *engine.Job
	// Attempts counts the failed tries of an activity so far, the last
	// one's message in Detail and its next try at RetryAtMS (0: at once).
	Attempts  int
	Detail    string
	RetryAtMS int64
	// FireMS is when a pending timer fires.
	FireMS int64
	// AtMS is when the step's newest event was written.
	AtMS int64
	// Question is what the step asks a person, from Engine, on one line.
	Question *payloadView
	// Engine is the step's state as the engine keeps it (GET
	// /v1/jobs/{job}/steps): its state of the 13, its try, the worker
	// holding its lease and its last heartbeat. Nil for a step the engine
	// does not list (timers, children) or an API without that read.
	Engine *engine.StepInfo
}

// The states a step is shown in.
const (
	stepScheduled = "scheduled"
	stepRetrying  = "retrying"
	stepWaiting   = "waiting"
	stepCompleted = "completed"
	stepFailed    = "failed"
	stepFired     = "fired"
	stepCanceled  = "canceled"
)

// stepEvent says what a step event of the SDK's means for its step: the
// kind of the step, whether the step runs as its own job, and the state it
// leaves the step in (resolved or not).
type stepEvent struct {
	kind     string
	remote   bool
	state    string
	resolved bool
}

// stepEvents is the table of the SDK's step events (engine/events_workflow.go).
var stepEvents = map[engine.EventType]stepEvent{
	engine.EventActivityScheduled:     {"activity", true, stepScheduled, false},
	engine.EventActivityAttemptFailed: {"activity", false, stepRetrying, false},
	engine.EventActivityCompleted:     {"activity", false, stepCompleted, true},
	engine.EventActivityFailed:        {"activity", false, stepFailed, true},
	engine.EventTimerScheduled:        {"timer", false, stepWaiting, false},
	engine.EventTimerFired:            {"timer", false, stepFired, true},
	engine.EventTimerCanceled:         {"timer", false, stepCanceled, true},
	engine.EventChildScheduled:        {"child workflow", true, stepScheduled, false},
	engine.EventChildCompleted:        {"child workflow", true, stepCompleted, true},
	engine.EventChildFailed:           {"child workflow", true, stepFailed, true},
}

// deriveSteps reads a run's steps from its history, in the order they were
// first recorded. A step that is recorded but not resolved is pending.
// Activities that run in the worker holding the run write nothing until
// they end (or a try fails), so they appear only then.
func deriveSteps(history []engine.Event, j *engine.Job) []*stepView {
	d := newStepDeriver()
	for i := range history {
		d.add(&history[i])
	}
	return d.steps(j)
}

// stepDeriver reads a run's steps from its events, given one at a time so
// that a page need not hold the history to know them.
type stepDeriver struct {
	order  []*stepView
	byStep map[string]*stepView
}

func newStepDeriver() *stepDeriver { return &stepDeriver{byStep: map[string]*stepView{}} }

// add reads the next event of the history.
func (d *stepDeriver) add(ev *engine.Event) {
	se, ok := stepEvents[ev.Type]
	if !ok {
		return
	}
	step := ev.Step
	if ev.Type == engine.EventTimerFired {
		// The engine names a fired timer by its id; the SDK's workflow
		// timers are named by their step, a number. Other timers (a
		// retry delay, "retry:...") belong to no step.
		step = ev.Name
		if step == "" || strings.TrimLeft(step, "0123456789") != "" {
			return
		}
	}
	if step == "" {
		return
	}
	s := d.byStep[step]
	if s == nil {
		s = &stepView{Step: step, Kind: se.kind}
		d.byStep[step] = s
		d.order = append(d.order, s)
	}
	if ev.Name != "" && ev.Type != engine.EventTimerFired {
		s.Name = ev.Name
	}
	s.Remote = s.Remote || se.remote
	s.State, s.Pending, s.AtMS = se.state, !se.resolved, ev.AtMS
	if ev.Type == engine.EventActivityAttemptFailed {
		s.Attempts++
		s.Detail, s.RetryAtMS = attemptDetail(ev)
	}
}

// steps returns the steps read so far, with when the pending timers of
// run j fire.
func (d *stepDeriver) steps(j *engine.Job) []*stepView {
	for _, s := range d.order {
		if s.Kind == "timer" && s.Pending {
			for _, t := range j.Timers {
				if t.ID == s.Step {
					s.FireMS = t.FireMS
				}
			}
		}
	}
	return d.order
}

// attemptDetail reads the record of a failed try (the SDK's JSON: attempt,
// message, retryAtMS), unless the API left it out for its length.
func attemptDetail(ev *engine.Event) (string, int64) {
	if ev.ElidedPayloadBytes > 0 {
		return fmt.Sprintf("a try failed; its record of %d bytes is too long to read here", ev.ElidedPayloadBytes), 0
	}
	var rec struct {
		Attempt   int    `json:"attempt"`
		Message   string `json:"message"`
		RetryAtMS int64  `json:"retryAtMS"`
	}
	if json.Unmarshal(ev.Payload, &rec) != nil {
		return "a try failed", 0
	}
	return fmt.Sprintf("try %d failed: %s", rec.Attempt, cutMessage(rec.Message)), rec.RetryAtMS
}

// pendingSteps returns the steps not yet resolved.
func pendingSteps(steps []*stepView) []*stepView {
	var out []*stepView
	for _, s := range steps {
		if s.Pending {
			out = append(out, s)
		}
	}
	return out
}

// remoteSteps returns the steps that ran or run as jobs of their own.
func remoteSteps(steps []*stepView) []*stepView {
	var out []*stepView
	for _, s := range steps {
		if s.Remote {
			out = append(out, s)
		}
	}
	return out
}

// NeedsAnswer reports whether the step waits for a person's answer
// (NEEDS_USER): the run page offers its answer form.
func (s *stepView) NeedsAnswer() bool {
	return s.Engine != nil && s.Engine.State == engine.StepNeedsUser
}
