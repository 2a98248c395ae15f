package engine

// transitions is the job transition table of docs/state-machines.md §1, with the
// rows and columns of §4 (Draft, Suspended) and the two extensions the project
// adds: a cancel from Queued or Retrying, and the two engine-owned ends
// (job_timed_out, job_terminated) from every status that is not an end. A
// missing cell is an illegal transition. The table gives the base state;
// Next refines it with the event's attributes (a parked wait, a delayed
// requeue).
var transitions = map[Status]map[EventType]Status{
	StatusNone: {
		EventJobCreated:  StatusQueued,
		EventJobQueued:   StatusQueued,
		EventJobRequeued: StatusQueued,
		EventJobDrafted:  StatusDraft,
	},
	StatusQueued: {
		EventJobRequeued:   StatusQueued,
		EventJobLeased:     StatusRunning,
		EventJobRunning:    StatusRunning,
		EventWaitCompleted: StatusQueued,
		EventJobCancelled:  StatusCancelled,
		EventJobSuspended:  StatusSuspended,
		EventJobTimedOut:   StatusTimedOut,
		EventJobTerminated: StatusTerminated,
	},
	StatusRunning: {
		EventJobRequeued:   StatusQueued,
		EventJobWaiting:    StatusWaiting,
		EventWaitCompleted: StatusQueued,
		EventJobCompleted:  StatusCompleted,
		EventJobFailed:     StatusFailed,
		EventJobCancelled:  StatusCancelled,
		EventJobSuspended:  StatusSuspended,
		EventJobTimedOut:   StatusTimedOut,
		EventJobTerminated: StatusTerminated,
	},
	StatusWaiting: {
		EventWaitCompleted: StatusQueued,
		EventJobCancelled:  StatusCancelled,
		EventJobSuspended:  StatusSuspended,
		EventJobTimedOut:   StatusTimedOut,
		EventJobTerminated: StatusTerminated,
	},
	StatusParked: {
		EventWaitCompleted: StatusQueued,
		EventJobCancelled:  StatusCancelled,
		EventJobSuspended:  StatusSuspended,
		EventJobTimedOut:   StatusTimedOut,
		EventJobTerminated: StatusTerminated,
	},
	StatusRetrying: {
		EventJobRequeued:   StatusQueued,
		EventJobLeased:     StatusRunning,
		EventJobRunning:    StatusRunning,
		EventWaitCompleted: StatusQueued,
		EventJobCancelled:  StatusCancelled,
		EventJobSuspended:  StatusSuspended,
		EventJobTimedOut:   StatusTimedOut,
		EventJobTerminated: StatusTerminated,
	},
	StatusCompleted: {},
	StatusFailed: {
		EventJobRequeued: StatusQueued,
	},
	StatusCancelled:  {},
	StatusTimedOut:   {},
	StatusTerminated: {},
	StatusDraft: {
		EventJobActivated:  StatusQueued,
		EventJobSuspended:  StatusSuspended,
		EventJobCancelled:  StatusCancelled,
		EventJobTimedOut:   StatusTimedOut,
		EventJobTerminated: StatusTerminated,
	},
	StatusSuspended: {
		EventJobResumed:    StatusQueued,
		EventJobCancelled:  StatusCancelled,
		EventJobTimedOut:   StatusTimedOut,
		EventJobTerminated: StatusTerminated,
	},
}

// BaseTransition returns the table cell for (from, ev) and whether it is legal.
func BaseTransition(from Status, ev EventType) (Status, bool) {
	to, ok := transitions[from][ev]
	return to, ok
}

// Next returns the status a job in from moves to when ev is appended, and
// whether that is legal. A non-status event leaves the status unchanged. A
// job_waiting marked Park leads to Parked instead of Waiting, and a
// job_requeued with a retry delay leads to Retrying instead of Queued.
func Next(from Status, ev *Event) (Status, bool) {
	if !IsStatusEvent(ev.Type) {
		return from, true
	}
	to, ok := BaseTransition(from, ev.Type)
	if !ok {
		return from, false
	}
	switch {
	case to == StatusWaiting && ev.Wait != nil && ev.Wait.Park:
		to = StatusParked
	case to == StatusQueued && ev.Type == EventJobRequeued && ev.DelayMS > 0:
		to = StatusRetrying
	}
	return to, true
}
