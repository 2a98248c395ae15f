package engine

import (
	"fmt"
)

// Status is a job's state, the projection of its history (docs/state-machines.md §1 and §4).
type Status uint8

// Job statuses. The numbers are stored on disk (job records and the status
// index) and must never be reused.
const (
	StatusNone       Status = 0 // no history yet
	StatusQueued     Status = 1
	StatusRunning    Status = 2
	StatusWaiting    Status = 3
	StatusParked     Status = 4 // a Waiting job with a long wait: the scheduler skips it
	StatusRetrying   Status = 5 // a Queued job whose next claim waits for a retry delay
	StatusCompleted  Status = 6
	StatusFailed     Status = 7
	StatusCancelled  Status = 8
	StatusDraft      Status = 9  // created, not yet activated: not claimable
	StatusSuspended  Status = 10 // paused by a person or the scheduler: not claimable
	StatusTimedOut   Status = 11 // ended by the engine when a deadline of the job passed
	StatusTerminated Status = 12 // ended at once by an operator (Terminate)
	numStatuses             = 13
)

var statusNames = [numStatuses]string{
	"None", "Queued", "Running", "Waiting", "Parked", "Retrying",
	"Completed", "Failed", "Cancelled", "Draft", "Suspended", "TimedOut", "Terminated",
}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// ParseStatus returns the status with the given name (as String prints it).
func ParseStatus(name string) (Status, error) {
	for i, n := range statusNames {
		if n == name && i != 0 {
			return Status(i), nil
		}
	}
	return StatusNone, fmt.Errorf("%w: unknown status %q", ErrInvalidCommand, name)
}

// Terminal reports whether s ends the job. Of the ends, only Failed may
// still be retried (Requeue); Completed, Cancelled, TimedOut and Terminated
// are final.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusTimedOut, StatusTerminated:
		return true
	}
	return false
}

// Statuses lists every real status, in numeric order.
func Statuses() []Status {
	out := make([]Status, 0, numStatuses-1)
	for s := Status(1); s < numStatuses; s++ {
		out = append(out, s)
	}
	return out
}

// Reasons recorded on job_requeued and wait_completed events.
const (
	ReasonLeaseExpired = "lease_expired"
	ReasonRetryDelay   = "retry_delay_elapsed"
	ReasonRetry        = "retry"
	ReasonReleased     = "released"
	// ReasonContinuedAsNew marks the job_completed of a run that continued
	// as a new run.
	ReasonContinuedAsNew = "continued_as_new"
	// ReasonRetried marks the job_failed of a run retried as a new run.
	ReasonRetried = "retried"
	// ReasonCronNext marks the job_completed or job_failed of a cron run
	// followed by the chain's next run, and the job_requeued that holds a
	// cron run back until its time.
	ReasonCronNext = "cron_next"
	// ReasonStartDelay marks the job_requeued that holds a run started
	// with CreateJob.StartDelayMS back until the delay has passed.
	ReasonStartDelay = "start_delay"
)

// Reasons recorded on job_timed_out: which deadline passed.
const (
	// ReasonExecutionTimeout: the chain's deadline (CreateJob.ExecutionTimeoutMS).
	ReasonExecutionTimeout = "execution_timeout"
	// ReasonRunTimeout: this run's deadline (CreateJob.RunTimeoutMS).
	ReasonRunTimeout = "run_timeout"
	// ReasonScheduleToStart: no first claim within CreateJob.ScheduleToStartTimeoutMS.
	ReasonScheduleToStart = "schedule_to_start"
	// ReasonLeaseExpired (the constant above) on job_timed_out: the lease of
	// a job created with CreateJob.TimeoutOnLeaseExpiry ran out.
)

// statusEvents lists the status events in the column order of the table.
var statusEvents = []EventType{
	EventJobCreated, EventJobQueued, EventJobRequeued, EventJobLeased, EventJobRunning,
	EventJobWaiting, EventWaitCompleted, EventJobCompleted, EventJobFailed, EventJobCancelled,
	EventJobDrafted, EventJobActivated, EventJobSuspended, EventJobResumed,
	EventJobTimedOut, EventJobTerminated,
}

// StatusEvents returns the status events, in the column order of the table.
func StatusEvents() []EventType { return append([]EventType(nil), statusEvents...) }

var statusEventSet = func() map[EventType]bool {
	m := make(map[EventType]bool, len(statusEvents))
	for _, e := range statusEvents {
		m[e] = true
	}
	return m
}()

// IsStatusEvent reports whether t changes the job status.
func IsStatusEvent(t EventType) bool { return statusEventSet[t] }

// IsEngineEvent reports whether only the engine writes events of type t:
// every status event, and the events it appends for signals, fired
// timers, committed steps, cancel requests, recorded effects, resets and
// pauses. A worker may not append one (AppendEvents, Wait.Events) or
// commit a step with one (CommitStep.Type): a forged cancel_requested
// would wake the job's next Wait, a forged signal_received would hand the
// workflow a signal nobody sent.
func IsEngineEvent(t EventType) bool {
	switch t {
	case EventSignalReceived, EventTimerFired, EventStepCommitted, EventCancelRequested, EventEffectRecorded, EventWorkflowReset,
		EventWorkflowPaused, EventWorkflowUnpaused:
		return true
	}
	return IsStatusEvent(t)
}
