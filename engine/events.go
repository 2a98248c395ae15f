package engine

// The events of histories: a job's (Event, and every EventType the engine
// gives a meaning to, declared here once) and a review task's
// (ReviewEventType). Their strings are stored: never change one.

// Event is one entry of a job's history. Seq numbers start at 1 and have no
// gaps. Fields that do not apply to an event's type are left zero.
type Event struct {
	Seq  uint64    `json:"seq" msgpack:"q"`
	Type EventType `json:"type" msgpack:"t"`
	// AtMS is the command's Now (Unix milliseconds) when the event was appended.
	AtMS int64 `json:"at_ms" msgpack:"at"`
	// Attempt is the attempt that wrote the event, for fenced writes and claims.
	Attempt uint64 `json:"attempt,omitempty" msgpack:"a,omitempty"`
	// Step names the step (activity) an event or effect belongs to.
	Step string `json:"step,omitempty" msgpack:"s,omitempty"`
	// Name is a signal name, timer id, marker name, lease owner, … by type.
	Name string `json:"name,omitempty" msgpack:"n,omitempty"`
	// Payload is opaque to the engine (inputs, results, errors, details).
	Payload []byte `json:"payload,omitempty" msgpack:"p,omitempty"`
	// Reason says why a status event happened (lease_expired, retry, …).
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// DelayMS is the retry delay of a job_requeued event.
	DelayMS int64 `json:"delay_ms,omitempty" msgpack:"d,omitempty"`
	// LeaseExpiryMS is the lease of a job_leased event.
	LeaseExpiryMS int64 `json:"lease_expiry_ms,omitempty" msgpack:"l,omitempty"`
	// Commit marks the event CommitStep appended for Step: the step's one
	// committed result.
	Commit bool `json:"commit,omitempty" msgpack:"c,omitempty"`
	// Wait describes what a job_waiting event waits for.
	Wait *WaitSpec `json:"wait,omitempty" msgpack:"w,omitempty"`
	// StepAttempt numbers the try of Step an activity or step event is
	// about, from 1; 0 on other events (and on events written before
	// steps carried it).
	StepAttempt uint32 `json:"step_attempt,omitempty" msgpack:"sa,omitempty"`
	// Resource is the resource of a step_leased (the unit taken) or a
	// step_resource_failed (the one that failed).
	Resource string `json:"resource,omitempty" msgpack:"rs,omitempty"`
	// Decision is the critic's decision on the try a step event ends
	// (accept, retry, switch_resource, replan, needs_user), recorded so
	// that replay never asks the critic again.
	Decision CriticDecision `json:"decision,omitempty" msgpack:"dc,omitempty"`
	// By names who issued the command that wrote the event (Header.By),
	// for the commands people issue; "" when unknown.
	By string `json:"by,omitempty" msgpack:"by,omitempty"`
	// TokenIssued, on a job_leased, says the claim gave the lease a
	// token (see the lease tokens of package engine/machine); a lease without one, claimed before
	// tokens existed, is fenced by its attempt alone.
	TokenIssued bool `json:"token_issued,omitempty" msgpack:"ti,omitempty"`
	// LastResult, on the job_created of a cron run, is the result of the
	// chain's last run that completed (Temporal's last completion result).
	LastResult []byte `json:"last_result,omitempty" msgpack:"lr,omitempty"`
	// BaseRunID, NewRunID and ResetEventID link the runs of a reset
	// (ResetJob): the new run's workflow_reset names the run it was reset
	// from (BaseRunID) and the point in that run's numbering
	// (ResetEventID); the job_terminated of a run the reset ended names the
	// new run (NewRunID).
	BaseRunID    JobID  `json:"base_run_id,omitempty" msgpack:"brn,omitempty"`
	NewRunID     JobID  `json:"new_run_id,omitempty" msgpack:"nrn,omitempty"`
	ResetEventID uint64 `json:"reset_event_id,omitempty" msgpack:"rse,omitempty"`
	// ElidedPayloadBytes and ElidedLastResultBytes are set only on an event
	// a history read returned without its Payload or LastResult, because it
	// was longer than the read's HistoryQuery.MaxPayloadBytes: they are the
	// length left out, so a view can show a payload's size without reading
	// it. Never stored.
	ElidedPayloadBytes    int `json:"elided_payload_bytes,omitempty" msgpack:"ep,omitempty"`
	ElidedLastResultBytes int `json:"elided_last_result_bytes,omitempty" msgpack:"el,omitempty"`
}

// WaitSpec is what a waiting job waits for; the first of these to happen
// completes the wait.
type WaitSpec struct {
	// TimerID and TimerAtMS name a durable timer (TimerAtMS 0: no timer).
	TimerID   string `json:"timer_id,omitempty" msgpack:"ti,omitempty"`
	TimerAtMS int64  `json:"timer_at_ms,omitempty" msgpack:"ta,omitempty"`
	// Signals are signal names; any one of them arriving ends the wait.
	Signals []string `json:"signals,omitempty" msgpack:"sg,omitempty"`
	// Steps are step ids whose effect (a remote activity's or a child job's
	// result) ends the wait when it is recorded.
	Steps []string `json:"steps,omitempty" msgpack:"st,omitempty"`
	// Park marks a long wait: the job is Parked rather than Waiting.
	Park bool `json:"park,omitempty" msgpack:"pk,omitempty"`
	// Timers are more durable timers to set and wait on (the SDK's timers;
	// TimerID/TimerAtMS is the one-timer shorthand). Any of them firing ends
	// the wait.
	Timers []Timer `json:"timers,omitempty" msgpack:"tt,omitempty"`
	// AnySignal: any signal ends the wait (workflow code selecting over
	// channels decides itself whether the signal was the one it needs).
	AnySignal bool `json:"any_signal,omitempty" msgpack:"as,omitempty"`
}

// EventType names a history event. The status events below are written only
// by the commands that own them; every other name is free for the SDK
// (activity, timer, signal, marker events) and never changes the status.
type EventType string

// Status events: each one moves the job along the transition table.
const (
	EventJobCreated    EventType = "job_created"
	EventJobQueued     EventType = "job_queued"
	EventJobRequeued   EventType = "job_requeued"
	EventJobLeased     EventType = "job_leased"
	EventJobRunning    EventType = "job_running"
	EventJobWaiting    EventType = "job_waiting"
	EventWaitCompleted EventType = "wait_completed"
	EventJobCompleted  EventType = "job_completed"
	EventJobFailed     EventType = "job_failed"
	EventJobCancelled  EventType = "job_cancelled"
	// The §4 job-level additions.
	EventJobDrafted   EventType = "job_drafted"
	EventJobActivated EventType = "job_activated"
	EventJobSuspended EventType = "job_suspended"
	EventJobResumed   EventType = "job_resumed"
	// The engine-owned ends: a deadline passed (ExpireDeadlines), or an
	// operator ended the run at once (Terminate). Both carry a failure
	// payload (see failure.go) and are final.
	EventJobTimedOut   EventType = "job_timed_out"
	EventJobTerminated EventType = "job_terminated"
)

// Events the engine itself writes that do not change the status.
const (
	EventSignalReceived EventType = "signal_received"
	EventTimerFired     EventType = "timer_fired"
	EventStepCommitted  EventType = "step_committed"
	// EventCancelRequested asks the workflow to cancel itself (RequestCancel);
	// unlike job_cancelled it does not change the status.
	EventCancelRequested EventType = "cancel_requested"
	// EventEffectRecorded tells a parent that is not blocked (so gets no
	// wait_completed) that a child's or a remote activity's result was
	// just recorded as the effect of Step: a worker driving the parent
	// learns of it from the history. It carries no payload; the effect
	// record has it.
	EventEffectRecorded EventType = "effect_recorded"
)

// The events of pause (docs/state-machines.md §6). None changes a status:
// a pause is a flag beside the status, and the history is its truth.
const (
	// EventWorkflowPaused: an operator paused the run (Pause; Temporal's
	// WorkflowExecutionPaused), with Reason and By. Name "parent" marks the
	// hold of an activity task whose run was paused instead.
	EventWorkflowPaused EventType = "workflow_paused"
	// EventWorkflowUnpaused: the pause ended (Unpause), with Reason and By;
	// Name "parent" ends an activity task's hold.
	EventWorkflowUnpaused EventType = "workflow_unpaused"

	// EventActivityPaused: an operator paused the activity of Step
	// (PauseActivity): no new try starts until it is unpaused.
	EventActivityPaused EventType = "activity_paused"
	// EventActivityUnpaused: the activity's pause ended (UnpauseActivity).
	EventActivityUnpaused EventType = "activity_unpaused"
	// EventActivityReset: the activity's attempts start again from 1 and
	// its next try is due at once (ResetActivity); StepAttempt is the
	// number of tries made before it.
	EventActivityReset EventType = "activity_reset"
	// EventActivityOptionsUpdated: the activity's options changed
	// (UpdateActivityOptions); the payload is the JSON of the operator's
	// options now in force (ActivityOptions), empty when the workflow's own
	// options are restored.
	EventActivityOptionsUpdated EventType = "activity_options_updated"
)

// PauseParent is the Name of the workflow_paused and workflow_unpaused
// events that hold an activity task while its run is paused, and release
// it (Job.HeldByParent).
const PauseParent = "parent"

// EventJobConfigured records a Draft job's new input (ConfigureJob). It is
// not a status event: the job stays Draft. The SDK's replay runs the
// workflow with the input of the last one written before the activation.
const EventJobConfigured EventType = "job_configured"

// The history events of a step (an activity). The activity_* events are the
// SDK's and existed before step states; the step_* events are the engine's
// own: only Apply writes them, and a worker may not append them.
const (
	EventActivityScheduled     EventType = "activity_scheduled"
	EventActivityAttemptFailed EventType = "activity_attempt_failed"
	EventActivityCompleted     EventType = "activity_completed"
	EventActivityFailed        EventType = "activity_failed"

	// EventStepWaitingDeps: the step waits for the steps it depends on
	// (LeaseStep.DependsOn) to succeed.
	EventStepWaitingDeps EventType = "step_waiting_deps"
	// EventStepLeased: the step took a step lease, with a resource unit
	// when it needs one (Event.Resource), for try Event.StepAttempt.
	EventStepLeased EventType = "step_leased"
	// EventStepStarted: the first heartbeat of a leased try: it runs.
	EventStepStarted EventType = "step_started"
	// EventStepLeaseTimeout: the step lease expired (the scheduler's
	// ExpireSteps), or a newer attempt of the job took the step over.
	EventStepLeaseTimeout EventType = "step_lease_timeout"
	// EventStepResourceFailed: the try's resource failed (Event.Resource
	// joins the step's avoid-list); another one is leased next.
	EventStepResourceFailed EventType = "step_resource_failed"
	// EventStepNeedsUser: the try needs a person; the payload is the question.
	EventStepNeedsUser EventType = "step_needs_user"
	// EventStepAnswered: a person answered (the payload), or the answer's
	// timeout passed (Reason ReasonAnswerTimeout, no payload).
	EventStepAnswered EventType = "step_answered"
)

// ReviewEventType names an event of a task's history. Every task event moves
// the task along one edge of reviewEdges (some edges lead back to the same
// state).
type ReviewEventType string

// Review events.
const (
	ReviewEventCreated        ReviewEventType = "task_created"         // → PENDING
	ReviewEventDrafted        ReviewEventType = "task_drafted"         // → DRAFT
	ReviewEventConfigured     ReviewEventType = "task_configured"      // DRAFT → DRAFT
	ReviewEventActivated      ReviewEventType = "task_activated"       // DRAFT → PENDING
	ReviewEventSuspended      ReviewEventType = "task_suspended"       // → SUSPENDED
	ReviewEventResumed        ReviewEventType = "task_resumed"         // SUSPENDED → PENDING, PAUSED → RUNNING
	ReviewEventCanceled       ReviewEventType = "task_canceled"        // → CANCELED
	ReviewEventStarted        ReviewEventType = "task_started"         // PENDING → RUNNING: a worker's lease
	ReviewEventPaused         ReviewEventType = "task_paused"          // RUNNING → PAUSED: the worker is rate limited
	ReviewEventOutput         ReviewEventType = "task_output"          // RUNNING → REVIEW_REQUIRED, with the output
	ReviewEventReviewStarted  ReviewEventType = "task_review_started"  // REVIEW_REQUIRED → REVIEWING (step)
	ReviewEventReviewerLeased ReviewEventType = "task_reviewer_leased" // REVIEWING → REVIEWING: a reviewer's lease
	ReviewEventReviewed       ReviewEventType = "task_reviewed"        // REVIEWING → APPROVAL_REQUIRED or INTERVENTION_REQUIRED
	ReviewEventApproved       ReviewEventType = "task_approved"        // APPROVAL_REQUIRED → SUCCESS
	ReviewEventRejected       ReviewEventType = "task_rejected"        // APPROVAL_REQUIRED → PENDING, with feedback
	ReviewEventResubmitted    ReviewEventType = "task_resubmitted"     // INTERVENTION_REQUIRED → PENDING
	ReviewEventFixed          ReviewEventType = "task_fixed"           // INTERVENTION_REQUIRED → REVIEW_REQUIRED
	ReviewEventTerminated     ReviewEventType = "task_terminated"      // INTERVENTION_REQUIRED → CANCELED
	ReviewEventLeaseExpired   ReviewEventType = "task_lease_expired"   // RUNNING/PAUSED → PENDING, REVIEWING → REVIEW_REQUIRED
)
