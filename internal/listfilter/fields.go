package listfilter

import (
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// Field is a property of a run that a predicate tests. Its value is the
// field's name in Temporal's list filter, which String writes.
type Field string

// The fields of the language.
const (
	FieldWorkflowID      Field = "WorkflowId"
	FieldRunID           Field = "RunId"
	FieldWorkflowType    Field = "WorkflowType"
	FieldTaskQueue       Field = "TaskQueue"
	FieldExecutionStatus Field = "ExecutionStatus"
	FieldHeddleStatus    Field = "HeddleStatus"
	FieldStartTime       Field = "StartTime"
	FieldCloseTime       Field = "CloseTime"
	// FieldPaused is heddle's: true of a run that has not ended and is
	// paused (an operator's pause, or an activity task its run's pause
	// holds). Pause is a flag beside the status, not a status: a paused
	// run keeps its status and stays in the open group. Temporal writes
	// the same test ExecutionStatus = "Paused".
	FieldPaused Field = "Paused"
)

// kind groups the fields that take the same operators and values.
type kind uint8

const (
	kindText   kind = iota // = != IN, NOT IN, STARTS_WITH; heddle's x* prefixes and a,b lists
	kindStatus             // = != IN, NOT IN over status names and groups
	kindTime               // = != > >= < <= BETWEEN, NOT BETWEEN over one time
	kindRunID              // = != IN, NOT IN over run (job) ids
	kindBool               // = != over true or false
)

// fields is the language's table: every field in the order the
// documentation gives them, its kind, and the other names it is written
// by (heddle's own first; any case is accepted for all of them).
var fields = []struct {
	f       Field
	k       kind
	aliases []string
}{
	{FieldExecutionStatus, kindStatus, []string{"status", "execution_status"}},
	{FieldWorkflowType, kindText, []string{"type", "workflow_type"}},
	{FieldTaskQueue, kindText, []string{"queue", "task_queue"}},
	{FieldWorkflowID, kindText, []string{"id", "workflow_id"}},
	{FieldRunID, kindRunID, []string{"run", "run_id", "job"}},
	{FieldStartTime, kindTime, []string{"created", "start_time"}},
	{FieldCloseTime, kindTime, []string{"closed", "close_time"}},
	{FieldHeddleStatus, kindStatus, []string{"heddle_status"}},
	{FieldPaused, kindBool, []string{"paused", "is_paused"}},
}

func kindOf(f Field) kind {
	for _, e := range fields {
		if e.f == f {
			return e.k
		}
	}
	return kindText
}

// lookupField returns the field a name (any case) stands for.
func lookupField(name string) (Field, bool) {
	for _, e := range fields {
		if strings.EqualFold(name, string(e.f)) {
			return e.f, true
		}
		for _, a := range e.aliases {
			if strings.EqualFold(name, a) {
				return e.f, true
			}
		}
	}
	return "", false
}

func fieldNames() string {
	var names []string
	for _, e := range fields {
		names = append(names, string(e.f))
	}
	return strings.Join(names, ", ") + " (or heddle's status, type, queue, id, created, closed, paused)"
}

// Op is a predicate's comparison.
type Op string

// The operators of the language.
const (
	OpEq         Op = "="
	OpNe         Op = "!="
	OpGt         Op = ">"
	OpGe         Op = ">="
	OpLt         Op = "<"
	OpLe         Op = "<="
	OpIn         Op = "IN"
	OpNotIn      Op = "NOT IN"
	OpBetween    Op = "BETWEEN"
	OpNotBetween Op = "NOT BETWEEN"
	OpStartsWith Op = "STARTS_WITH"
	// OpNotStartsWith is heddle's own: what "id!=order-*" means.
	OpNotStartsWith Op = "NOT STARTS_WITH"
)

// kindOps is which operators each kind of field takes.
var kindOps = map[kind][]Op{
	kindText:   {OpEq, OpNe, OpIn, OpNotIn, OpStartsWith, OpNotStartsWith},
	kindStatus: {OpEq, OpNe, OpIn, OpNotIn},
	kindTime:   {OpEq, OpNe, OpGt, OpGe, OpLt, OpLe, OpBetween, OpNotBetween},
	kindRunID:  {OpEq, OpNe, OpIn, OpNotIn},
	kindBool:   {OpEq, OpNe},
}

func (k kind) takes(op Op) bool {
	for _, o := range kindOps[k] {
		if o == op {
			return true
		}
	}
	return false
}

func (k kind) opNames() string {
	var names []string
	for _, o := range kindOps[k] {
		names = append(names, string(o))
	}
	return strings.Join(names, ", ")
}

// The statuses of the language. A run's place among them is one bit: its
// heddle status, except that a Completed run that continued as new has a
// bit of its own (Temporal's ContinuedAsNew), so that Temporal's Completed
// leaves it out and heddle's Completed takes it in. An open run that is
// paused has one more bit beside its status's (Temporal's Paused): it is
// still Running (open) as well, since pause is a flag, not a status.
type statusSet uint32

const (
	continuedBit = 31
	pausedBit    = 30
	pausedSet    = statusSet(1) << pausedBit
)

func bitOf(s engine.Status) statusSet { return 1 << uint(s) }

var (
	openSet = bitOf(engine.StatusQueued) | bitOf(engine.StatusRunning) | bitOf(engine.StatusWaiting) |
		bitOf(engine.StatusParked) | bitOf(engine.StatusRetrying) | bitOf(engine.StatusDraft) | bitOf(engine.StatusSuspended)
	closedSet = bitOf(engine.StatusCompleted) | bitOf(engine.StatusFailed) | bitOf(engine.StatusCancelled) |
		bitOf(engine.StatusTimedOut) | bitOf(engine.StatusTerminated) | 1<<continuedBit
	allStatuses = openSet | closedSet
)

// statusBit is where j stands among the statuses: one bit, and the paused
// bit beside it when j is an open run that is paused.
func statusBit(j *engine.Job) statusSet {
	if j.ContinuedAsNew() {
		return 1 << continuedBit
	}
	if isPaused(j) {
		return bitOf(j.Status) | pausedSet
	}
	return bitOf(j.Status)
}

// isPaused reports whether j is paused: a pause of a run that ended holds
// nothing, and so counts as none.
func isPaused(j *engine.Job) bool { return j.Paused() && !j.Status.Terminal() }

// executionStatuses are the names ExecutionStatus (and heddle's status)
// takes: Temporal's, where Running is every open status, and heddle's own
// open statuses, which Temporal does not have and which name no other.
var executionStatuses = []struct {
	name string
	set  statusSet
}{
	{"Running", openSet},
	{"Completed", bitOf(engine.StatusCompleted)},
	{"ContinuedAsNew", 1 << continuedBit},
	{"Failed", bitOf(engine.StatusFailed)},
	{"Canceled", bitOf(engine.StatusCancelled)},
	{"Cancelled", bitOf(engine.StatusCancelled)},
	{"Terminated", bitOf(engine.StatusTerminated)},
	{"TimedOut", bitOf(engine.StatusTimedOut)},
	{"Paused", pausedSet},
	{"Open", openSet},
	{"Closed", closedSet},
	{"Queued", bitOf(engine.StatusQueued)},
	{"Waiting", bitOf(engine.StatusWaiting)},
	{"Parked", bitOf(engine.StatusParked)},
	{"Retrying", bitOf(engine.StatusRetrying)},
	{"Draft", bitOf(engine.StatusDraft)},
	{"Suspended", bitOf(engine.StatusSuspended)},
}

// statusNamed reads a status name of field f, any case.
func statusNamed(f Field, name string) (statusSet, bool) {
	if f == FieldHeddleStatus {
		switch {
		case strings.EqualFold(name, "open"):
			return openSet, true
		case strings.EqualFold(name, "closed"):
			return closedSet, true
		case strings.EqualFold(name, engine.StatusCompleted.String()):
			return bitOf(engine.StatusCompleted) | 1<<continuedBit, true
		}
		for _, s := range engine.Statuses() {
			if strings.EqualFold(name, s.String()) {
				return bitOf(s), true
			}
		}
		return 0, false
	}
	for _, e := range executionStatuses {
		if strings.EqualFold(name, e.name) {
			return e.set, true
		}
	}
	return 0, false
}

func statusNames(f Field) string {
	var names []string
	if f == FieldHeddleStatus {
		for _, s := range engine.Statuses() {
			names = append(names, s.String())
		}
		names = append(names, "Open", "Closed")
	} else {
		for _, e := range executionStatuses {
			if e.name != "Cancelled" {
				names = append(names, e.name)
			}
		}
	}
	return strings.Join(names, ", ")
}

// ExecutionStatusNames lists the names ExecutionStatus and heddle's
// status field take, for help texts and completions.
func ExecutionStatusNames() []string {
	var names []string
	for _, e := range executionStatuses {
		if e.name != "Cancelled" {
			names = append(names, e.name)
		}
	}
	return names
}

// ValidExecutionStatus reports whether name is one of the names
// ExecutionStatus takes (any case).
func ValidExecutionStatus(name string) bool {
	_, ok := statusNamed(FieldExecutionStatus, name)
	return ok
}
