package engine

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error Apply, a log and the Engine return matches one of
// these with errors.Is; the typed errors below wrap them and add detail. A
// command that fails writes nothing.
var (
	// ErrStaleAttempt: a fenced write came from an attempt that is not the
	// job's current, running one. The worker must stop the job at once.
	ErrStaleAttempt = errors.New("engine: stale attempt")
	// ErrUnknownJob: no job has the given id or workflow id.
	ErrUnknownJob = errors.New("engine: unknown job")
	// ErrIllegalTransition: the command's status event is illegal in the job's status.
	ErrIllegalTransition = errors.New("engine: illegal transition")
	// ErrUnknownCommand: a command kind this version does not know.
	ErrUnknownCommand = errors.New("engine: unknown command")
	// ErrInvalidCommand: a missing or malformed field.
	ErrInvalidCommand = errors.New("engine: invalid command")
	// ErrPayloadTooLarge: a payload, name or batch over its configured limit.
	ErrPayloadTooLarge = errors.New("engine: payload too large")
	// ErrWorkflowExists: a start refused by the workflow-id reuse policy.
	ErrWorkflowExists = errors.New("engine: workflow already exists")
	// ErrUnknownReview: no review task has the given id, or job and phase.
	ErrUnknownReview = errors.New("engine: unknown task")
	// ErrReviewExists: the job already has a task of that phase.
	ErrReviewExists = errors.New("engine: task already exists")
	// ErrIllegalReviewCommand: the command is not legal in the task's state
	// (see ReviewStateError for the state and the commands legal in it).
	ErrIllegalReviewCommand = errors.New("engine: illegal task command")
	// ErrStaleReviewAttempt: a write from a task lease that is not the
	// task's current one (see StaleReviewError). The holder must stop.
	ErrStaleReviewAttempt = errors.New("engine: stale task attempt")
	// ErrJobClosed: the job is terminal and takes no more signals or writes.
	ErrJobClosed = errors.New("engine: job closed")
	// ErrStepCommitted: the step already has a committed result.
	ErrStepCommitted = errors.New("engine: step already committed")
	// ErrStepState: the step is not in a state the command may act on (an
	// answer to a step that asks nobody, a commit of a step waiting for a
	// person); see StepStateError.
	ErrStepState = errors.New("engine: step not in a state for this")
	// ErrNoResource: no resource could ever serve the step — none offers
	// what it needs, or those that do are drained or on its avoid-list
	// (see NoResourceError).
	ErrNoResource = errors.New("engine: no resource for the step")
	// ErrDependencyFailed: a step the step depends on failed.
	ErrDependencyFailed = errors.New("engine: a dependency failed")
	// ErrUnknownResource: no resource has the given id.
	ErrUnknownResource = errors.New("engine: unknown resource")
	// ErrResourceExists: a resource of that id is registered already.
	ErrResourceExists = errors.New("engine: resource exists")
	// ErrResourceBusy: the resource still holds step leases.
	ErrResourceBusy = errors.New("engine: resource busy")
	// ErrInvariant: a stored history breaks the state machine (see InvariantError).
	ErrInvariant = errors.New("engine: invariant violated")
	// ErrClosed: the log or engine was closed.
	ErrClosed = errors.New("engine: closed")
	// ErrCorrupt: stored bytes did not decode. The storage's error is
	// marked to match it (see MarkError), and errors.As still finds the
	// storage's *CorruptError with the key and record kind.
	ErrCorrupt = errors.New("engine: corrupt record")
	// ErrStorageRead: the database failed to read what it holds (a storage
	// read error marked to match it); the command was not judged and wrote
	// nothing.
	ErrStorageRead = errors.New("engine: storage read failed")
	// ErrNoSpace: the disk holding the database has less free space than
	// the reserve (a storage *NoSpaceError marked to match it, code
	// HDL-STORE-0003), so the write was refused and nothing of it was
	// stored. Reads go on; writes are accepted again once space is freed.
	ErrNoSpace = errors.New("engine: not enough free space")
	// ErrDeliveriesHeld: a shard of a sharded cluster refused a delivery
	// between shards (Deliver, AckDelivery) while a backup holds its
	// deliveries; nothing was applied, and the delivery is tried again
	// once the hold ends.
	ErrDeliveriesHeld = errors.New("engine: deliveries held")
	// ErrNotLeader: a cluster node that is not the Raft leader was asked to
	// write or to read linearizably (see NotLeaderError for the leader).
	ErrNotLeader = errors.New("engine: not the leader")
	// ErrUnknownSchedule: no schedule has the given id.
	ErrUnknownSchedule = errors.New("engine: unknown schedule")
	// ErrScheduleExists: a schedule of that id already exists.
	ErrScheduleExists = errors.New("engine: schedule already exists")
	// ErrUnknownBatch: no batch operation has the given id.
	ErrUnknownBatch = errors.New("engine: unknown batch")
	// ErrBatchExists: a batch operation of that id already exists.
	ErrBatchExists = errors.New("engine: batch already exists")
	// ErrUnknownOutcome: a proposal may or may not have been applied (the
	// leader lost its leadership or the node died before answering).
	// Retrying with the same request id is safe.
	ErrUnknownOutcome = errors.New("engine: outcome unknown")
	// ErrRequestConflict: a request id already used by another command
	// (another kind, or the same kind with another body) was sent again
	// (see RequestConflictError). It also matches ErrInvalidCommand.
	ErrRequestConflict = errors.New("engine: request id conflict")
	// ErrUnknownQuery: the workflow has no handler for the query type
	// (QueryServer.Query; workflow.ErrUnknownQuery is this error). Its text
	// is the SDK's, where it was first declared: the HTTP API carries it.
	ErrUnknownQuery = errors.New("workflow: unknown query type")
	// ErrUnknownActivity: an activity command (PauseActivity, …) found no
	// pending activity of the run that its selector names: none has that
	// id or type, or its result is recorded already.
	ErrUnknownActivity = errors.New("engine: unknown activity")
)

// MarkError returns err marked to match sentinel as well: errors.Is(m,
// sentinel) holds, as does everything errors.Is held of err; errors.As and
// errors.Unwrap reach err; and the text is err's. It is how an error of a
// lower layer (storage's corrupt record, failed read, full disk) comes to
// match this package's sentinel without this package importing that layer
// (as pebble marks its corruption errors). nil, and an err that matches
// sentinel already, are returned as they are.
func MarkError(err, sentinel error) error {
	if err == nil || errors.Is(err, sentinel) {
		return err
	}
	return &markedError{err: err, mark: sentinel}
}

// markedError is err matching mark too (MarkError).
type markedError struct {
	err  error
	mark error
}

func (e *markedError) Error() string        { return e.err.Error() }
func (e *markedError) Unwrap() error        { return e.err }
func (e *markedError) Is(target error) bool { return target == e.mark }

// Stable codes, one per typed error, for logs, APIs and tests.
const (
	StaleAttemptCode = "HDL-ENGINE-0001"
	TransitionCode   = "HDL-ENGINE-0003"
	FieldCode        = "HDL-ENGINE-0004"
	ConflictCode     = "HDL-ENGINE-0005"
)

// NotLeaderError details ErrNotLeader with the leader this node knows of,
// if any, so callers can go there.
type NotLeaderError struct {
	LeaderID   string // Raft server id; empty when no leader is known
	LeaderHTTP string // the leader's HTTP API address (host:port); may be empty
	// Others are the HTTP addresses of the other nodes that hold the
	// shard, where a node forwarding the request goes when LeaderHTTP
	// cannot be reached. A sharded node that holds no replica of the shard
	// sets it: it knows only the placement's desired leader, which keeps
	// its place while its node is down. It is not sent to clients.
	Others []string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "engine: not the leader (no leader known)"
	}
	return fmt.Sprintf("engine: not the leader (leader %s at %q)", e.LeaderID, e.LeaderHTTP)
}

func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// StaleAttemptError details ErrStaleAttempt.
type StaleAttemptError struct {
	Job     JobID
	Attempt uint64 // the writer's attempt
	Current uint64 // the job's current attempt
	Status  Status // the job's status (fenced writes need Running)
	Command string
	// WrongToken: the attempt is the current one, but the write did not
	// carry its lease token, so it does not come from the lease's holder.
	WrongToken bool
	// NotParked: a completion by id (CompleteAsync.ByID) of an activity
	// task whose attempt still runs, which only its task token may end.
	NotParked bool
}

func (e *StaleAttemptError) Error() string {
	if e.NotParked {
		return fmt.Sprintf("engine: stale attempt: %s by id on job %d: the activity task is %s at attempt %d, not parked for asynchronous completion; only its task token completes it while it runs [%s]",
			e.Command, e.Job, e.Status, e.Current, StaleAttemptCode)
	}
	if e.WrongToken {
		return fmt.Sprintf("engine: stale attempt: %s on job %d by attempt %d without the lease token of that attempt: the writer does not hold the lease (job is %s) [%s]",
			e.Command, e.Job, e.Attempt, e.Status, StaleAttemptCode)
	}
	return fmt.Sprintf("engine: stale attempt: %s on job %d by attempt %d, job is %s at attempt %d [%s]",
		e.Command, e.Job, e.Attempt, e.Status, e.Current, StaleAttemptCode)
}

func (e *StaleAttemptError) Unwrap() error { return ErrStaleAttempt }

func (e *StaleAttemptError) Code() string { return StaleAttemptCode }

// TransitionError details ErrIllegalTransition.
type TransitionError struct {
	Job   JobID
	From  Status
	Event EventType
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("engine: illegal transition: %s on job %d in status %s [%s]", e.Event, e.Job, e.From, TransitionCode)
}

func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

func (e *TransitionError) Code() string { return TransitionCode }

// FieldError names the command field that was wrong. It wraps
// ErrInvalidCommand, or ErrPayloadTooLarge for a limit.
type FieldError struct {
	Command string
	Field   string
	Reason  string
	err     error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s.%s %s [%s]", e.err, e.Command, e.Field, e.Reason, FieldCode)
}

func (e *FieldError) Unwrap() error { return e.err }

func (e *FieldError) Code() string { return FieldCode }

// InvalidField returns the *FieldError, matching ErrInvalidCommand, that
// refuses field of command cmd for reason.
func InvalidField(cmd, field, reason string) error {
	return &FieldError{Command: cmd, Field: field, Reason: reason, err: ErrInvalidCommand}
}

func tooLarge(cmd, field string, n, limit int) error {
	return &FieldError{Command: cmd, Field: field, Reason: fmt.Sprintf("is %d, over the limit of %d", n, limit), err: ErrPayloadTooLarge}
}

func unknownJob(id JobID) error { return fmt.Errorf("%w: %d", ErrUnknownJob, id) }

// Stable codes of the step errors.
const (
	StaleStepCode  = "HDL-ENGINE-0010"
	StepStateCode  = "HDL-ENGINE-0011"
	NoResourceCode = "HDL-ENGINE-0012"
	// DependencyCycleCode is the code of a DependencyCycleError.
	DependencyCycleCode = "HDL-ENGINE-0013"
)

// StaleStepError details ErrStaleAttempt for one step: a write of try
// Attempt of Step came while the step's newest try is Current (or the step
// is not running at all), even though the job's own attempt is live.
type StaleStepError struct {
	Job     JobID
	Step    string
	Attempt uint32 // the writer's try
	Current uint32 // the step's newest try
	State   StepState
	Command string
}

func (e *StaleStepError) Error() string {
	return fmt.Sprintf("engine: stale attempt: %s of step %q of job %d by try %d, the step is %s at try %d [%s]",
		e.Command, e.Step, e.Job, e.Attempt, e.State, e.Current, StaleStepCode)
}

func (e *StaleStepError) Unwrap() error { return ErrStaleAttempt }

func (e *StaleStepError) Code() string { return StaleStepCode }

// DependencyCycleError details ErrDependencyFailed for a LeaseStep whose
// DependsOn would close a cycle among the job's steps (Cycle: the step,
// the steps between, the step again). Such steps would wait for each
// other for ever, so the lease is refused when the cycle is made, and
// nothing is written.
type DependencyCycleError struct {
	Job   JobID
	Step  string
	Cycle []string
}

func (e *DependencyCycleError) Error() string {
	return fmt.Sprintf("engine: a dependency failed: step %q of job %d cannot depend on its own result: the dependencies %s form a cycle that never resolves [%s]",
		e.Step, e.Job, strings.Join(e.Cycle, " → "), DependencyCycleCode)
}

func (e *DependencyCycleError) Unwrap() error { return ErrDependencyFailed }

func (e *DependencyCycleError) Code() string { return DependencyCycleCode }

// StepStateError details ErrStepState.
type StepStateError struct {
	Job     JobID
	Step    string
	State   StepState
	Command string
}

func (e *StepStateError) Error() string {
	return fmt.Sprintf("engine: step not in a state for this: %s of step %q of job %d in state %s [%s]",
		e.Command, e.Step, e.Job, e.State, StepStateCode)
}

func (e *StepStateError) Unwrap() error { return ErrStepState }

func (e *StepStateError) Code() string { return StepStateCode }

// NoResourceError details ErrNoResource: what the step needs and the
// resources it avoids, so an operator sees why nothing fits.
type NoResourceError struct {
	Job          JobID
	Step         string
	Capabilities []string
	Selector     map[string]string
	Avoid        []string
}

func (e *NoResourceError) Error() string {
	sel := make([]string, 0, len(e.Selector))
	for _, k := range sortedKeys(e.Selector) {
		sel = append(sel, k+"="+e.Selector[k])
	}
	return fmt.Sprintf("engine: no resource for step %q of job %d: none offers capabilities %v with labels %v, is not drained and is not avoided %v [%s]",
		e.Step, e.Job, e.Capabilities, sel, e.Avoid, NoResourceCode)
}

func (e *NoResourceError) Unwrap() error { return ErrNoResource }

func (e *NoResourceError) Code() string { return NoResourceCode }

// RequestConflictError details ErrRequestConflict: the request id was
// recorded for a command of kind First whose body differs from this one's.
// The command was refused and wrote nothing; the first command's result
// stands.
type RequestConflictError struct {
	RequestID string
	Command   CommandKind // the kind of the command refused
	First     CommandKind // the kind of the command the id was used for
}

func (e *RequestConflictError) Error() string {
	if e.Command != e.First {
		return fmt.Sprintf("engine: request id conflict: %s request id %q was already used by a %s command [%s]",
			e.Command, e.RequestID, e.First, ConflictCode)
	}
	return fmt.Sprintf("engine: request id conflict: %s request id %q was already used by a %s command with another body [%s]",
		e.Command, e.RequestID, e.First, ConflictCode)
}

// Unwrap matches ErrRequestConflict and, since a conflicting request is a
// caller's mistake, ErrInvalidCommand.
func (e *RequestConflictError) Unwrap() []error {
	return []error{ErrRequestConflict, ErrInvalidCommand}
}

func (e *RequestConflictError) Code() string { return ConflictCode }
