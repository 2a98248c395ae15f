package engine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Pause and the activity operations (docs/state-machines.md §6).
//
// A pause is a flag beside a job's status, not a status of its own: a
// paused run keeps its status (Queued, Running, Waiting, …), its timers,
// its steps and its lease, and only stops taking new turns and starting
// activities. A status would have to remember which status to go back to
// and could not let a running turn finish, while the flag leaves the
// transition table as it is. Its truth is the history's workflow_paused
// and workflow_unpaused events; Job.Pause is their projection, which
// Verify checks.
//
// An activity's pause, reset and options live on its step record (the
// explicit path of §3): an operator's command on an activity that ran
// under the job's lease gives it a record, so that every later try takes a
// step lease, which the engine refuses while the activity (or its run) is
// paused. An activity sent to another task queue runs as a job of its own
// (an activity task): the same commands act on that job.

// PauseInfo says who paused a run or an activity, when and why (Temporal's
// WorkflowExecutionPauseInfo and PendingActivityInfo.PauseInfo).
type PauseInfo struct {
	AtMS int64 `json:"paused_at_ms" msgpack:"at"`
	// By is who issued the pause (Header.By: the token's name), "" when
	// unknown.
	By     string `json:"by,omitempty" msgpack:"by,omitempty"`
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// clonePause returns a copy of p.
func clonePause(p *PauseInfo) *PauseInfo {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Paused reports whether the job takes no new turn: an operator paused it
// (Pause), or it is an activity task whose run is paused (HeldByParent).
func (j *Job) Paused() bool { return j.Pause != nil || j.HeldByParent }

// ActivityOptions are the options of an activity an operator may change
// while it is pending (UpdateActivityOptions; Temporal's ActivityOptions):
// its timeouts and its retry policy. A zero field keeps the value the
// workflow gave (or an earlier update set); a RetryPolicy's zero fields
// likewise. The worker that runs the activity lays them over the
// workflow's options before each try.
type ActivityOptions struct {
	ScheduleToCloseTimeoutMS int64 `json:"schedule_to_close_timeout_ms,omitempty" msgpack:"sc,omitempty"`
	ScheduleToStartTimeoutMS int64 `json:"schedule_to_start_timeout_ms,omitempty" msgpack:"ss,omitempty"`
	StartToCloseTimeoutMS    int64 `json:"start_to_close_timeout_ms,omitempty" msgpack:"st,omitempty"`
	HeartbeatTimeoutMS       int64 `json:"heartbeat_timeout_ms,omitempty" msgpack:"hb,omitempty"`
	// RetryPolicy's InitialIntervalMS, BackoffCoefficient,
	// MaximumIntervalMS and MaximumAttempts apply; its other fields are
	// the workflow's to set.
	RetryPolicy *RetryPolicy `json:"retry_policy,omitempty" msgpack:"rp,omitempty"`
}

// IsZero reports whether o changes nothing.
func (o *ActivityOptions) IsZero() bool {
	return o == nil || o.ScheduleToCloseTimeoutMS == 0 && o.ScheduleToStartTimeoutMS == 0 && o.StartToCloseTimeoutMS == 0 &&
		o.HeartbeatTimeoutMS == 0 && retryZero(o.RetryPolicy)
}

// retryZero reports whether p sets none of the fields an operator's
// options may set.
func retryZero(p *RetryPolicy) bool {
	return p == nil || p.InitialIntervalMS == 0 && p.BackoffCoefficient == 0 && p.MaximumIntervalMS == 0 && p.MaximumAttempts == 0
}

// Clone returns a copy of o that shares nothing with it.
func (o *ActivityOptions) Clone() *ActivityOptions {
	if o == nil {
		return nil
	}
	c := *o
	if o.RetryPolicy != nil {
		p := *o.RetryPolicy
		p.NonRetryableErrorTypes = slices.Clone(p.NonRetryableErrorTypes)
		c.RetryPolicy = &p
	}
	return &c
}

// Merge returns base with every non-zero field of update laid over it (nil
// when the result changes nothing).
func (o *ActivityOptions) Merge(update *ActivityOptions) *ActivityOptions {
	m := o.Clone()
	if m == nil {
		m = &ActivityOptions{}
	}
	if update != nil {
		setNonZero(&m.ScheduleToCloseTimeoutMS, update.ScheduleToCloseTimeoutMS)
		setNonZero(&m.ScheduleToStartTimeoutMS, update.ScheduleToStartTimeoutMS)
		setNonZero(&m.StartToCloseTimeoutMS, update.StartToCloseTimeoutMS)
		setNonZero(&m.HeartbeatTimeoutMS, update.HeartbeatTimeoutMS)
		if u := update.RetryPolicy; u != nil {
			if m.RetryPolicy == nil {
				m.RetryPolicy = &RetryPolicy{}
			}
			p := m.RetryPolicy
			setNonZero(&p.InitialIntervalMS, u.InitialIntervalMS)
			setNonZero(&p.BackoffCoefficient, u.BackoffCoefficient)
			setNonZero(&p.MaximumIntervalMS, u.MaximumIntervalMS)
			setNonZero(&p.MaximumAttempts, u.MaximumAttempts)
		}
	}
	return m.normal()
}

// normal returns o without an empty retry policy, or nil when o changes
// nothing, so that equal options compare equal.
func (o *ActivityOptions) normal() *ActivityOptions {
	if o.IsZero() {
		return nil
	}
	if retryZero(o.RetryPolicy) {
		o.RetryPolicy = nil
	}
	return o
}

func setNonZero[T int64 | int32 | float64](dst *T, v T) {
	if v != 0 {
		*dst = v
	}
}

// check validates the options an update carries.
func (o *ActivityOptions) check(ch *checker) {
	ch.duration("Options.ScheduleToCloseTimeoutMS", o.ScheduleToCloseTimeoutMS)
	ch.duration("Options.ScheduleToStartTimeoutMS", o.ScheduleToStartTimeoutMS)
	ch.duration("Options.StartToCloseTimeoutMS", o.StartToCloseTimeoutMS)
	ch.duration("Options.HeartbeatTimeoutMS", o.HeartbeatTimeoutMS)
	if p := o.RetryPolicy; p != nil && ch.err == nil {
		if err := p.Validate(); err != nil {
			ch.err = err
			return
		}
		ch.duration("Options.RetryPolicy.InitialIntervalMS", p.InitialIntervalMS)
		ch.duration("Options.RetryPolicy.MaximumIntervalMS", p.MaximumIntervalMS)
		if p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1 {
			ch.fail("Options.RetryPolicy.BackoffCoefficient", fmt.Sprintf("is %v: a backoff coefficient is at least 1", p.BackoffCoefficient))
		}
		if len(p.NonRetryableErrorTypes) > 0 || p.Backoff != 0 {
			ch.fail("Options.RetryPolicy", "sets NonRetryableErrorTypes or Backoff, which only the workflow sets")
		}
	}
}

// EncodeActivityOptions is the payload of an activity_options_updated
// event: the JSON of o, empty for nil.
func EncodeActivityOptions(o *ActivityOptions) []byte {
	if o.IsZero() {
		return nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err) // plain numbers only
	}
	return b
}

// DecodeActivityOptions reads the payload of an activity_options_updated
// event (nil for an empty one).
func DecodeActivityOptions(b []byte) (*ActivityOptions, error) {
	if len(b) == 0 {
		return nil, nil
	}
	o := new(ActivityOptions)
	if err := json.Unmarshal(b, o); err != nil {
		return nil, fmt.Errorf("engine: activity options %q: %w", b, err)
	}
	return o.normal(), nil
}

// PauseProjection is what a job's history says of its pause and, for an
// activity task, of its activity: the projection Verify holds the record to.
type PauseProjection struct {
	Pause        *PauseInfo
	HeldByParent bool
	// AttemptBase and Options: an activity task's last reset and the
	// options in force (the activity_* events without a step).
	AttemptBase uint64
	Options     *ActivityOptions
}

// DerivePause projects a job's history to its pause state.
func DerivePause(events []Event) PauseProjection {
	var p PauseProjection
	for i := range events {
		ev := &events[i]
		switch {
		case ev.Type == EventWorkflowPaused && ev.Name == PauseParent:
			p.HeldByParent = true
		case ev.Type == EventWorkflowUnpaused && ev.Name == PauseParent:
			p.HeldByParent = false
		case ev.Type == EventWorkflowPaused:
			p.Pause = &PauseInfo{AtMS: ev.AtMS, By: ev.By, Reason: ev.Reason}
		case ev.Type == EventWorkflowUnpaused:
			p.Pause = nil
		case ev.Type == EventActivityReset && ev.Step == "":
			p.AttemptBase = ev.Attempt
		case ev.Type == EventActivityOptionsUpdated && ev.Step == "":
			p.Options, _ = DecodeActivityOptions(ev.Payload)
		}
	}
	return p
}

// IsActivityControlEvent reports the events an operator's activity command
// writes (activity_paused, activity_unpaused, activity_reset,
// activity_options_updated): they change no step state.
func IsActivityControlEvent(t EventType) bool {
	switch t {
	case EventActivityPaused, EventActivityUnpaused, EventActivityReset, EventActivityOptionsUpdated:
		return true
	}
	return false
}

// activityControl applies an activity control event to a step's
// projection: its pause, its attempt base and its options.
func (p *StepProjection) activityControl(ev *Event) {
	switch ev.Type {
	case EventActivityPaused:
		p.Pause = &PauseInfo{AtMS: ev.AtMS, By: ev.By, Reason: ev.Reason}
	case EventActivityUnpaused:
		p.Pause = nil
	case EventActivityReset:
		p.AttemptBase = ev.StepAttempt
	case EventActivityOptionsUpdated:
		p.Options, _ = DecodeActivityOptions(ev.Payload)
	}
}
