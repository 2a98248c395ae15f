package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// ResetType names a reset point by what it is rather than by its event id,
// with the names of Temporal's reset types (a workflow task is a turn).
type ResetType uint8

const (
	// ResetToEvent (the zero value): ResetJob.Seq names the point.
	ResetToEvent ResetType = 0
	// ResetFirstWorkflowTask is the run's first turn: the new run keeps
	// only the run's start (its job_created, or for a run started as a
	// draft its job_activated) and runs the workflow code from its
	// beginning.
	ResetFirstWorkflowTask ResetType = 1
	// ResetLastWorkflowTask is the last turn the run completed: the new
	// run keeps the history up to the run's last job_waiting (its start
	// when it never waited) and takes the turn after it again.
	ResetLastWorkflowTask ResetType = 2
)

var resetTypeNames = [...]string{ResetToEvent: "", ResetFirstWorkflowTask: "FirstWorkflowTask", ResetLastWorkflowTask: "LastWorkflowTask"}

func (t ResetType) String() string {
	if int(t) < len(resetTypeNames) {
		if t == ResetToEvent {
			return "EventId"
		}
		return resetTypeNames[t]
	}
	return "ResetType(" + strconv.Itoa(int(t)) + ")"
}

// ParseResetType returns the reset type named as Temporal's CLI names it
// ("FirstWorkflowTask", "LastWorkflowTask"); "" is ResetToEvent.
func ParseResetType(name string) (ResetType, error) {
	for i, n := range resetTypeNames {
		if strings.EqualFold(n, name) {
			return ResetType(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown reset type %q (want FirstWorkflowTask or LastWorkflowTask, or an event id)", ErrInvalidCommand, name)
}

// MarshalJSON writes t by name ("LastWorkflowTask"); an unknown number is
// written as the number.
func (t ResetType) MarshalJSON() ([]byte, error) {
	ok := int(t) < len(resetTypeNames)
	name := ""
	if ok {
		name = resetTypeNames[t]
	}
	return enumJSON(t, name, ok)
}

// UnmarshalJSON reads a reset type by name or by number.
func (t *ResetType) UnmarshalJSON(b []byte) error {
	return readEnumJSON(b, t, ParseResetType, `a reset type is a name such as "LastWorkflowTask"`)
}

// ResetJob is Temporal's ResetWorkflowExecution: it starts a new run of the
// workflow id of the base run Target names, whose history is the base
// run's up to a reset point, followed by the signals (and updates) the
// base run received after that point, and ends the runs it replaces, in
// one command. The new run's workflow code replays the copied history and
// goes on from there; the activities it scheduled after the point run
// again.
//
// A reset point is a turn boundary: an event after which the workflow
// code's commands for a turn were all recorded. It is the base run's
// job_created (or, for a run started as a draft, its job_activated): the
// first turn; or one of its job_waiting events: the end of a turn at which
// the code blocked. Seq names one (ResetToEvent), or Type picks one
// (ResetFirstWorkflowTask, ResetLastWorkflowTask); a Seq that is no turn
// boundary is refused with a *ResetPointError naming the valid ones.
//
// The base run, when still open, ends as Terminated (reason "reset"); a
// closed one stays as it ended. So does the workflow id's current run when
// it is another, open one (Temporal's reset terminates the current run).
// Both records link to the new run (Job.ResetNewRunID), and the new run
// back to the base run and the point (Job.ResetBaseRunID, ResetEventID).
// What the new run carries of the base run's state (timers, steps,
// children, review tasks, updates, cron and continue-as-new fields,
// request ids) is in docs/state-machines.md §1 "Reset". With a request id
// the command is idempotent: a retry answers the first result.
type ResetJob struct {
	Header
	// Target is the base run: a job id, or a workflow id for its latest
	// run. With both, the job must be a run of that workflow id.
	Target
	Type ResetType `json:"reset_type,omitempty" msgpack:"rt,omitempty"`
	// Seq is the event id of the reset point, with Type ResetToEvent.
	Seq    uint64 `json:"event_id,omitempty" msgpack:"sq,omitempty"`
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// ExcludeSignals and ExcludeUpdates leave out of the new run the
	// signals, or the updates, that the base run received after the point
	// (Temporal's ResetReapplyExcludeType). By default both are reapplied.
	ExcludeSignals bool `json:"exclude_signals,omitempty" msgpack:"xs,omitempty"`
	ExcludeUpdates bool `json:"exclude_updates,omitempty" msgpack:"xu,omitempty"`
}

func (*ResetJob) Kind() CommandKind { return KindResetJob }

func (c *ResetJob) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Reason", c.Reason, false)
	switch {
	case ch.err != nil:
	case c.Type > ResetLastWorkflowTask:
		ch.fail("Type", fmt.Sprintf("%d is not a reset type (0 an event id, 1 FirstWorkflowTask, 2 LastWorkflowTask)", c.Type))
	case c.Type == ResetToEvent && c.Seq == 0:
		ch.fail("Seq", "is required: give the event id of a turn boundary, or a reset type (FirstWorkflowTask, LastWorkflowTask)")
	case c.Type != ResetToEvent && c.Seq != 0:
		ch.fail("Seq", fmt.Sprintf("is %d with reset type %s: give an event id or a reset type, not both", c.Seq, c.Type))
	}
	return ch.err
}

// IsResetPoint reports whether an event of type t ends a turn's decisions,
// so that a run may be reset to it (ResetJob): the run's start (job_created,
// or a draft's job_activated), after which the first turn begins, or a
// job_waiting, with which a turn ended blocked.
func IsResetPoint(t EventType) bool {
	return t == EventJobCreated || t == EventJobActivated || t == EventJobWaiting
}

// UpdateSignalName is the signal that carries a workflow update's request
// (sdk/workflow.UpdateSignalName is this name): a reset tells updates from
// other signals by it (ResetJob.ExcludeUpdates).
const UpdateSignalName = "heddle.update"

// ReasonReset marks the events a reset writes: the job_terminated of a run
// it replaced, and in the new run the wait_completed or job_requeued that
// makes it ready for its next turn.
const ReasonReset = "reset"

// EventWorkflowReset is the event a reset writes in the new run right after
// the copied history: Reason is the operator's reason, BaseRunID the run
// reset and ResetEventID the point, in that run's numbering (Temporal
// writes a WorkflowTaskFailed with cause ResetWorkflow there). It changes
// no status, and only the engine writes it.
const EventWorkflowReset EventType = "workflow_reset"

// ResetResult answers ResetJob: the new run (Temporal's RunId), the base run
// and the point.
type ResetResult struct {
	Job        JobID  `json:"job_id" msgpack:"j"`
	WorkflowID string `json:"workflow_id" msgpack:"wf"`
	BaseJob    JobID  `json:"base_job_id" msgpack:"b"`
	// Seq is the reset point, in the base run's numbering, and
	// CopiedEvents how many of its events the new run holds (fewer than
	// Seq when steps that had not ended by the point were left out to run
	// again).
	Seq          uint64 `json:"event_id" msgpack:"sq"`
	CopiedEvents uint64 `json:"copied_events" msgpack:"ce"`
	// Terminated are the open runs the reset ended (the base run, or the
	// workflow id's current run); none when they were closed.
	Terminated []JobID `json:"terminated_job_ids,omitempty" msgpack:"tm,omitempty"`
	// Reapplied counts the signals and updates copied into the new run
	// after the point.
	Reapplied int `json:"reapplied,omitempty" msgpack:"ra,omitempty"`
}

func (*ResetResult) isResult() {}

// ResetPointCode is the stable code of a ResetPointError.
const ResetPointCode = "HDL-ENGINE-0030"

// ResetPointError refuses a reset point that is no turn boundary (or a run
// that has none), naming the valid ones. It matches ErrInvalidCommand.
type ResetPointError struct {
	Job JobID
	// Seq is the point asked for (0 with a reset type), and Event the type
	// of its event ("" when the history has no such event).
	Seq   uint64
	Event EventType
	// Valid are the run's turn boundaries, oldest first, and ValidCount how
	// many there are (Valid keeps the first and the last few of a long
	// list).
	Valid      []uint64
	ValidCount int
	// Why says what is wrong when it is not the point itself (a draft never
	// activated has no turn).
	Why string
}

// maxResetPointsListed bounds ResetPointError.Valid.
const maxResetPointsListed = 10

// NewResetPointError returns the error for a refused point, keeping the
// first and last of valid when there are more than it lists.
func NewResetPointError(job JobID, seq uint64, ev EventType, valid []uint64, why string) *ResetPointError {
	e := &ResetPointError{Job: job, Seq: seq, Event: ev, ValidCount: len(valid), Why: why}
	if len(valid) > maxResetPointsListed {
		half := maxResetPointsListed / 2
		e.Valid = append(append([]uint64(nil), valid[:half]...), valid[len(valid)-half:]...)
	} else {
		e.Valid = append([]uint64(nil), valid...)
	}
	return e
}

func (e *ResetPointError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: ", ErrInvalidCommand)
	switch {
	case e.Why != "":
		fmt.Fprintf(&b, "job %d cannot be reset: %s", e.Job, e.Why)
	case e.Event == "":
		fmt.Fprintf(&b, "job %d has no event %d to reset to", e.Job, e.Seq)
	default:
		fmt.Fprintf(&b, "event %d of job %d (%s) is not a turn boundary; a reset point is the run's job_created (or a draft's job_activated) or a job_waiting", e.Seq, e.Job, e.Event)
	}
	if e.ValidCount > 0 {
		ids := make([]string, 0, len(e.Valid)+1)
		for i, s := range e.Valid {
			if e.ValidCount > len(e.Valid) && i == len(e.Valid)/2 {
				ids = append(ids, "…")
			}
			ids = append(ids, strconv.FormatUint(s, 10))
		}
		fmt.Fprintf(&b, "; valid event ids (%d): %s", e.ValidCount, strings.Join(ids, ", "))
	}
	fmt.Fprintf(&b, " [%s]", ResetPointCode)
	return b.String()
}

func (e *ResetPointError) Unwrap() error { return ErrInvalidCommand }

func (e *ResetPointError) Code() string { return ResetPointCode }
