package engine

import "fmt"

// A schedule is durable engine state that starts workflow runs at the
// times of its spec (cron expressions and intervals), shaped like Temporal's
// schedules. Every change to one is a command applied by Apply, so in a
// cluster schedules are linearized through the Raft log like jobs. Apply
// acts on a schedule when its entry in the schedule-due index falls due
// (the scheduler proposes FireSchedules), when it is triggered, and when a
// run it started closes (so that a buffered start can go).

// OverlapPolicy says what a schedule does when an action falls due while a
// run it started is still open. The numbers match Temporal's
// ScheduleOverlapPolicy enum.
type OverlapPolicy uint8

// Overlap policies.
const (
	// OverlapUnspecified takes the schedule's policy (for a trigger) or
	// OverlapSkip (for a schedule).
	OverlapUnspecified OverlapPolicy = 0
	// OverlapSkip (the default) drops the action while a run is open.
	OverlapSkip OverlapPolicy = 1
	// OverlapBufferOne keeps one action to start once the open run closes;
	// more are dropped.
	OverlapBufferOne OverlapPolicy = 2
	// OverlapBufferAll keeps every action (up to MaxScheduleBuffer) and
	// starts them one after the other, each when the one before closes.
	OverlapBufferAll OverlapPolicy = 3
	// OverlapCancelOther asks the open runs to cancel and starts the new one
	// once they have closed.
	OverlapCancelOther OverlapPolicy = 4
	// OverlapTerminateOther terminates the open runs and starts the new one
	// at once.
	OverlapTerminateOther OverlapPolicy = 5
	// OverlapAllowAll starts every action, whatever is open.
	OverlapAllowAll OverlapPolicy = 6
)

var overlapNames = [...]string{"Unspecified", "Skip", "BufferOne", "BufferAll", "CancelOther", "TerminateOther", "AllowAll"}

func (p OverlapPolicy) String() string {
	if int(p) < len(overlapNames) {
		return overlapNames[p]
	}
	return fmt.Sprintf("OverlapPolicy(%d)", uint8(p))
}

// ParseOverlapPolicy reads a policy by its name (case-sensitive, as String
// writes it).
func ParseOverlapPolicy(s string) (OverlapPolicy, error) {
	for i, n := range overlapNames {
		if n == s {
			return OverlapPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: overlap policy %q is not one of %v", ErrInvalidCommand, s, overlapNames[1:])
}

// Schedule bounds.
const (
	// MaxScheduleSpecs bounds the cron expressions, and the intervals, of a spec.
	MaxScheduleSpecs = 32
	// MaxScheduleBuffer bounds the buffered starts of a schedule; an action
	// beyond it counts as skipped.
	MaxScheduleBuffer = 1000
	// MaxScheduleRecent is how many recent actions a schedule keeps.
	MaxScheduleRecent = 10
	// MinScheduleIntervalMS is the shortest interval a spec may have.
	MinScheduleIntervalMS = 1000
	// DefaultCatchupWindowMS is the catch-up window of a policy that sets
	// none: one year, as Temporal's.
	DefaultCatchupWindowMS = 365 * 24 * 3600 * 1000
	// MinCatchupWindowMS is the shortest catch-up window, as Temporal's.
	MinCatchupWindowMS = 10 * 1000
	// MaxScheduleRunning bounds the open runs a schedule tracks (only
	// AllowAll can have more: the oldest are dropped from the list).
	MaxScheduleRunning = 100
)

// ScheduleSpec is the set of times a schedule acts at: the union of its
// cron expressions' and its intervals' times, within [StartAtMS, EndAtMS].
// An empty spec has no times: such a schedule acts only when triggered.
// Times are UTC: a spec carries no time zone, since Apply must compute the
// same times on every node whatever its zone database.
type ScheduleSpec struct {
	// CronExpressions are standard cron lines: 5 fields (minute hour
	// day-of-month month day-of-week), or 6 with seconds first, or a
	// descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every 90s).
	CronExpressions []string `json:"cron_expressions,omitempty" msgpack:"cr,omitempty"`
	// Intervals are times every EveryMS counted from the Unix epoch, moved
	// by OffsetMS.
	Intervals []ScheduleInterval `json:"intervals,omitempty" msgpack:"iv,omitempty"`
	// StartAtMS and EndAtMS bound the times (inclusive); 0: unbounded.
	StartAtMS int64 `json:"start_at_ms,omitempty" msgpack:"sa,omitempty"`
	EndAtMS   int64 `json:"end_at_ms,omitempty" msgpack:"ea,omitempty"`
	// JitterMS delays each action by up to this much after its time, by an
	// amount derived from the schedule id and the time (so every node, and
	// every replay, computes the same). 0: none.
	JitterMS int64 `json:"jitter_ms,omitempty" msgpack:"ji,omitempty"`
}

// ScheduleInterval is one interval of a spec.
type ScheduleInterval struct {
	EveryMS  int64 `json:"every_ms" msgpack:"e"`
	OffsetMS int64 `json:"offset_ms,omitempty" msgpack:"o,omitempty"`
}

// ScheduleAction is the workflow run a schedule starts. The run's workflow
// id is WorkflowID (or the schedule id when empty) followed by "-" and the
// action's nominal time in RFC 3339 (UTC, seconds), as Temporal names them.
type ScheduleAction struct {
	WorkflowID         string       `json:"workflow_id,omitempty" msgpack:"wf,omitempty"`
	Type               string       `json:"type" msgpack:"ty"`
	Queue              string       `json:"queue" msgpack:"qu"`
	Input              []byte       `json:"input,omitempty" msgpack:"in,omitempty"`
	ExecutionTimeoutMS int64        `json:"execution_timeout_ms,omitempty" msgpack:"et,omitempty"`
	RunTimeoutMS       int64        `json:"run_timeout_ms,omitempty" msgpack:"rto,omitempty"`
	Retry              *RetryPolicy `json:"retry,omitempty" msgpack:"rt,omitempty"`
}

// SchedulePolicy is how a schedule treats overlaps, missed times and failures.
type SchedulePolicy struct {
	// Overlap applies when an action falls due while a run is open;
	// Unspecified means Skip.
	Overlap OverlapPolicy `json:"overlap,omitempty" msgpack:"ov,omitempty"`
	// CatchupWindowMS: a time missed by more than this (the engine was
	// down) is skipped rather than acted on late. 0: DefaultCatchupWindowMS.
	CatchupWindowMS int64 `json:"catchup_window_ms,omitempty" msgpack:"cw,omitempty"`
	// PauseOnFailure pauses the schedule when a run it started ends
	// Failed or TimedOut.
	PauseOnFailure bool `json:"pause_on_failure,omitempty" msgpack:"pf,omitempty"`
}

// ScheduleState is the part of a schedule an operator changes.
type ScheduleState struct {
	Paused bool   `json:"paused,omitempty" msgpack:"pa,omitempty"`
	Note   string `json:"note,omitempty" msgpack:"no,omitempty"`
	// LimitedActions makes RemainingActions count down with each action the
	// spec takes (triggers do not count); at 0 the spec takes no more.
	LimitedActions   bool  `json:"limited_actions,omitempty" msgpack:"la,omitempty"`
	RemainingActions int64 `json:"remaining_actions,omitempty" msgpack:"ra,omitempty"`
}

// ScheduleRun is a run a schedule started.
type ScheduleRun struct {
	WorkflowID string `json:"workflow_id" msgpack:"wf"`
	Job        JobID  `json:"job_id" msgpack:"j"`
	// Delivery, on a sharded cluster, is the create of a run whose
	// workflow id routes to another shard, on its way there through the
	// schedule's shard's outbox: Job is 0 until it is acknowledged.
	Delivery *DeliveryRef `json:"delivery,omitempty" msgpack:"dv,omitempty"`
	// NominalMS is the spec time (or the trigger's time) the run is for,
	// ActualMS when it started (the nominal time plus jitter, or later).
	NominalMS int64 `json:"nominal_ms" msgpack:"nm"`
	ActualMS  int64 `json:"actual_ms" msgpack:"am"`
}

// BufferedStart is an action held back by the overlap policy.
type BufferedStart struct {
	NominalMS int64         `json:"nominal_ms" msgpack:"nm"`
	Overlap   OverlapPolicy `json:"overlap" msgpack:"ov"`
}

// Schedule is a schedule's stored record.
type Schedule struct {
	ID     string         `json:"id" msgpack:"id"`
	Spec   ScheduleSpec   `json:"spec" msgpack:"sp"`
	Action ScheduleAction `json:"action" msgpack:"ac"`
	Policy SchedulePolicy `json:"policy" msgpack:"po"`
	State  ScheduleState  `json:"state" msgpack:"st"`

	// NextNominalMS is the next spec time not yet acted on; 0 when the spec
	// has no more times.
	NextNominalMS int64 `json:"next_nominal_ms,omitempty" msgpack:"nn,omitempty"`
	// DueMS is the time of the schedule's live entry in the schedule-due
	// index; 0 when it has none (paused, or no more times).
	DueMS    int64           `json:"due_ms,omitempty" msgpack:"du,omitempty"`
	Buffered []BufferedStart `json:"buffered,omitempty" msgpack:"bu,omitempty"`
	// Running are the runs started and not known to have closed.
	Running []ScheduleRun `json:"running,omitempty" msgpack:"ru,omitempty"`
	// Recent are the last MaxScheduleRecent runs started, oldest first.
	Recent []ScheduleRun `json:"recent,omitempty" msgpack:"re,omitempty"`

	NumActions        int64 `json:"num_actions,omitempty" msgpack:"na,omitempty"`
	NumMissedCatchup  int64 `json:"num_missed_catchup,omitempty" msgpack:"nmc,omitempty"`
	NumSkippedOverlap int64 `json:"num_skipped_overlap,omitempty" msgpack:"nso,omitempty"`
	CreatedMS         int64 `json:"created_ms" msgpack:"cr"`
	UpdatedMS         int64 `json:"updated_ms" msgpack:"up"`
}

// MarshalJSON writes p by name ("BufferOne"), as the HTTP API's JSON
// writes enums; a number this version does not know is written as the number.
func (p OverlapPolicy) MarshalJSON() ([]byte, error) {
	if int(p) < len(overlapNames) {
		return enumJSON(p, overlapNames[p], true)
	}
	return enumJSON(p, "", false)
}

// UnmarshalJSON reads a policy by name or by number.
func (p *OverlapPolicy) UnmarshalJSON(b []byte) error {
	return readEnumJSON(b, p, ParseOverlapPolicy, `an overlap policy is a name such as "Skip"`)
}
