package engine

import "fmt"

// CreateSchedule creates a schedule. TriggerImmediately also takes one
// action at once, as Temporal's ScheduleOptions.TriggerImmediately.
type CreateSchedule struct {
	Header
	ID                 string         `json:"id" msgpack:"id"`
	Spec               ScheduleSpec   `json:"spec" msgpack:"sp"`
	Action             ScheduleAction `json:"action" msgpack:"ac"`
	Policy             SchedulePolicy `json:"policy,omitempty" msgpack:"po,omitempty"`
	State              ScheduleState  `json:"state,omitempty" msgpack:"st,omitempty"`
	TriggerImmediately bool           `json:"trigger_immediately,omitempty" msgpack:"ti,omitempty"`
}

// UpdateSchedule replaces a schedule's spec, action, policy and state,
// keeping its counters, open runs and buffered starts; its next time is
// computed afresh from now.
type UpdateSchedule struct {
	Header
	ID     string         `json:"id" msgpack:"id"`
	Spec   ScheduleSpec   `json:"spec" msgpack:"sp"`
	Action ScheduleAction `json:"action" msgpack:"ac"`
	Policy SchedulePolicy `json:"policy,omitempty" msgpack:"po,omitempty"`
	State  ScheduleState  `json:"state,omitempty" msgpack:"st,omitempty"`
}

// PauseSchedule pauses (Paused) or unpauses a schedule and sets its note.
// A paused schedule takes no spec action; unpaused, it goes on from the
// first spec time after now (times passed while paused are not caught up).
type PauseSchedule struct {
	Header
	ID     string `json:"id" msgpack:"id"`
	Paused bool   `json:"paused" msgpack:"pa"`
	Note   string `json:"note,omitempty" msgpack:"no,omitempty"`
}

// TriggerSchedule takes one action now (paused or not) under Overlap, or
// the schedule's policy when Unspecified.
type TriggerSchedule struct {
	Header
	ID      string        `json:"id" msgpack:"id"`
	Overlap OverlapPolicy `json:"overlap,omitempty" msgpack:"ov,omitempty"`
}

// DeleteSchedule deletes a schedule; the runs it started go on.
type DeleteSchedule struct {
	Header
	ID string `json:"id" msgpack:"id"`
}

// FireSchedules acts on up to Max schedules whose due time has come (the
// scheduler proposes it).
type FireSchedules struct {
	Header
	Max int `json:"max" msgpack:"mx"`
}

// ScheduleResult answers the schedule commands but FireSchedules: the
// schedule as written (nil after DeleteSchedule) and the runs the command
// started.
type ScheduleResult struct {
	Schedule *Schedule      `json:"schedule,omitempty" msgpack:"s,omitempty"`
	Started  []CreateResult `json:"started,omitempty" msgpack:"sr,omitempty"`
}

func (*ScheduleResult) isResult() {}

func (*CreateSchedule) Kind() CommandKind  { return KindCreateSchedule }
func (*UpdateSchedule) Kind() CommandKind  { return KindUpdateSchedule }
func (*PauseSchedule) Kind() CommandKind   { return KindPauseSchedule }
func (*TriggerSchedule) Kind() CommandKind { return KindTriggerSchedule }
func (*DeleteSchedule) Kind() CommandKind  { return KindDeleteSchedule }
func (*FireSchedules) Kind() CommandKind   { return KindFireSchedules }

// BackfillSchedule takes the actions of a schedule's spec times in
// [StartMS, EndMS] now, as if those times were passing (Temporal's
// backfill): each under Overlap (Unspecified: the schedule's policy), named
// after its time, whether the schedule is paused or not, and regardless of
// the catch-up window and of RemainingActions. A range with more than
// MaxBackfillTimes times is refused: split it.
type BackfillSchedule struct {
	Header
	ID      string        `json:"id" msgpack:"id"`
	StartMS int64         `json:"start_ms" msgpack:"s"`
	EndMS   int64         `json:"end_ms" msgpack:"e"`
	Overlap OverlapPolicy `json:"overlap,omitempty" msgpack:"ov,omitempty"`
}

// MaxBackfillTimes bounds the spec times of one BackfillSchedule: the runs
// one command may start.
const MaxBackfillTimes = 100

func (*BackfillSchedule) Kind() CommandKind { return KindBackfillSchedule }

func (c *BackfillSchedule) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	switch {
	case c.StartMS <= 0 || c.StartMS > maxScheduleTimeMS:
		ch.fail("StartMS", fmt.Sprintf("is %d, not a time up to the year 9999", c.StartMS))
	case c.EndMS < c.StartMS || c.EndMS > maxScheduleTimeMS:
		ch.fail("EndMS", fmt.Sprintf("is %d, before StartMS %d or after the year 9999", c.EndMS, c.StartMS))
	}
	if c.Overlap > OverlapAllowAll {
		ch.fail("Overlap", fmt.Sprintf("%d is not a policy (0 the schedule's, 1 Skip .. 6 AllowAll)", c.Overlap))
	}
	return ch.err
}
