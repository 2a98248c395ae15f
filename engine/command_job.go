package engine

import (
	"fmt"
	"math"
)

// IDReusePolicy decides what CreateJob does when its workflow id already has a run.
type IDReusePolicy uint8

const (
	// IDReuseAllowAfterTerminal (the default) starts a new run when the
	// current run is terminal, and refuses while it is open.
	IDReuseAllowAfterTerminal IDReusePolicy = 0
	// IDReuseRejectDuplicate refuses whenever any run of the id exists.
	IDReuseRejectDuplicate IDReusePolicy = 1
	// IDReuseReturnExisting returns the open run when the start is identical
	// (same type, queue and input), refuses a different start while it is
	// open, and starts a new run after a terminal one.
	IDReuseReturnExisting IDReusePolicy = 2
)

// ParentClosePolicy says what a parent's end does to a child still open.
type ParentClosePolicy uint8

// Parent-close policies; the numbers are stored and match the SDK's.
const (
	// ParentCloseTerminate (the default) terminates the child.
	ParentCloseTerminate ParentClosePolicy = 0
	// ParentCloseRequestCancel asks the child to cancel itself.
	ParentCloseRequestCancel ParentClosePolicy = 1
	// ParentCloseAbandon leaves the child running.
	ParentCloseAbandon ParentClosePolicy = 2
)

// CreateJob starts a job (a workflow run): job_created, or job_drafted with Draft.
type CreateJob struct {
	Header
	WorkflowID  string        `json:"workflow_id,omitempty" msgpack:"wf,omitempty"` // empty: "job-<id>"
	Type        string        `json:"type" msgpack:"ty"`
	Queue       string        `json:"queue" msgpack:"qu"`
	Input       []byte        `json:"input,omitempty" msgpack:"in,omitempty"`
	ReusePolicy IDReusePolicy `json:"reuse_policy,omitempty" msgpack:"rp,omitempty"`
	Draft       bool          `json:"draft,omitempty" msgpack:"dr,omitempty"`
	// ParentID and ParentStep make the job's result the effect of a step of
	// another job (a child workflow, or an activity on another queue).
	ParentID   JobID  `json:"parent_job_id,omitempty" msgpack:"pi,omitempty"`
	ParentStep string `json:"parent_step,omitempty" msgpack:"ps,omitempty"`
	// ParentLease is required with ParentID: the lease of the parent run
	// the caller holds (its job, current attempt and token). Only the
	// worker driving a run may start its children and remote activities,
	// since their end writes into one of its steps; any other create naming
	// a parent is refused as stale. It is not part of the request digest:
	// a later attempt of the parent retrying the create under the same
	// request id gets the first answer.
	ParentLease *LeaseRef `json:"parent_lease,omitempty" msgpack:"pl,omitempty"`
	// ParentWorkflowID is the parent's workflow id, which the parent's
	// shard gives a create it delivers to another shard (the child's code
	// asks for it, and the child's shard does not hold the parent). Any
	// other create that sets it is refused.
	ParentWorkflowID string `json:"parent_workflow_id,omitempty" msgpack:"pw,omitempty"`
	// ScheduleID names the schedule that starts the run, which the
	// schedule's shard gives a create it delivers to another shard (the
	// run's end goes back to the schedule: ScheduleRunClosed). Any other
	// create that sets it is refused.
	ScheduleID string `json:"schedule_id,omitempty" msgpack:"sch,omitempty"`
	// ParentClosePolicy says what happens to this job, still open, when its
	// parent ends by Terminate or a timeout (when the parent's code ends,
	// its worker applies the policy itself).
	ParentClosePolicy ParentClosePolicy `json:"parent_close_policy,omitempty" msgpack:"pcp,omitempty"`
	// ExecutionTimeoutMS bounds the workflow id's whole chain of runs
	// (retries and continue-as-new included) from this start; 0: no bound.
	// The engine enforces it: when it passes, the current run ends as
	// TimedOut (reason execution_timeout) whatever its status. For an
	// activity-task job it is the activity's schedule-to-close timeout.
	ExecutionTimeoutMS int64 `json:"execution_timeout_ms,omitempty" msgpack:"et,omitempty"`
	// RunTimeoutMS bounds each run on its own (Temporal's workflow run
	// timeout): when it passes the run ends as TimedOut (reason
	// run_timeout). A run started by ContinueAsNew or a retry gets the same
	// timeout from its own start, not the old run's deadline; 0: no bound.
	RunTimeoutMS int64 `json:"run_timeout_ms,omitempty" msgpack:"rto,omitempty"`
	// ScheduleToStartTimeoutMS bounds the wait for the job's first claim:
	// unclaimed by then, it ends as TimedOut (reason schedule_to_start).
	// The first claim clears it; 0: no bound.
	ScheduleToStartTimeoutMS int64 `json:"schedule_to_start_timeout_ms,omitempty" msgpack:"sto,omitempty"`
	// Retry, if set, retries a failed run as a new run (see ContinueAsNew).
	Retry *RetryPolicy `json:"retry,omitempty" msgpack:"rt,omitempty"`
	// TraceParent is the W3C traceparent of the span that started the
	// run, kept on the job (and its continued runs) so that the workers'
	// spans of every turn join the starter's trace. Opaque to the engine.
	TraceParent string `json:"trace_parent,omitempty" msgpack:"tp,omitempty"`
	// CronSchedule makes the workflow id a cron workflow (Temporal's
	// CronSchedule): the run waits (Retrying) for the first time of the
	// cron line after now, and each run that completes or fails is
	// followed, in the same command, by the next run at the next time (see
	// engine/machine's job_cron.go). Empty: none.
	CronSchedule string `json:"cron_schedule,omitempty" msgpack:"cron,omitempty"`
	// CronFirstNow, with CronSchedule, starts the chain's first run at
	// once instead of at the line's first time; the runs after it wait
	// for their times. Temporal's test environment runs a cron child so,
	// and sdk/testsuite asks for it. False: the first run waits.
	CronFirstNow bool `json:"cron_first_now,omitempty" msgpack:"cfn,omitempty"`
	// StartDelayMS holds the run back (Retrying, reason start_delay) for
	// this long before a worker may claim it (Temporal's StartDelay); its
	// RunTimeoutMS counts from the end of the delay. It cannot be combined
	// with CronSchedule, which sets its own first time. 0: none.
	StartDelayMS int64 `json:"start_delay_ms,omitempty" msgpack:"sd,omitempty"`
	// TimeoutOnLeaseExpiry makes a lost lease end the job (TimedOut, reason
	// lease_expired, a Heartbeat TimeoutError for its parent) rather than
	// requeue it for another worker: for work bound to the worker that
	// claimed it, such as a worker session's creation task, whose worker
	// cannot be replaced by another.
	TimeoutOnLeaseExpiry bool `json:"timeout_on_lease_expiry,omitempty" msgpack:"tle,omitempty"`
}

// RetryPolicy says how a failed workflow run is retried. The engine stores
// it; the worker applies it.
type RetryPolicy struct {
	InitialIntervalMS  int64   `json:"initial_interval_ms" msgpack:"ii"`
	BackoffCoefficient float64 `json:"backoff_coefficient,omitempty" msgpack:"bc,omitempty"`
	MaximumIntervalMS  int64   `json:"maximum_interval_ms,omitempty" msgpack:"mi,omitempty"`
	// MaximumAttempts bounds the runs, the first included; 0: no bound.
	MaximumAttempts int32 `json:"maximum_attempts,omitempty" msgpack:"ma,omitempty"`
	// NonRetryableErrorTypes are failure types that are never retried, and
	// Backoff the SDK's backoff kind (0 exponential, 1 linear, 2 fixed):
	// the engine keeps them for the worker, which applies the policy.
	NonRetryableErrorTypes []string `json:"non_retryable_error_types,omitempty" msgpack:"nr,omitempty"`
	Backoff                uint8    `json:"backoff,omitempty" msgpack:"bk,omitempty"`
}

// Validate reports the first field of p that no retry can use: a negative
// number, or a coefficient that is not a finite number (NaN or an
// infinity, which msgpack can carry but JSON cannot).
// Errors are *FieldError wrapping ErrInvalidCommand.
func (p *RetryPolicy) Validate() error {
	bad := func(field, reason string) error { return InvalidField("RetryPolicy", field, reason) }
	switch {
	case p.InitialIntervalMS < 0:
		return bad("InitialIntervalMS", "is negative")
	case p.MaximumIntervalMS < 0:
		return bad("MaximumIntervalMS", "is negative")
	case p.MaximumAttempts < 0:
		return bad("MaximumAttempts", "is negative")
	case math.IsNaN(p.BackoffCoefficient) || math.IsInf(p.BackoffCoefficient, 0):
		return bad("BackoffCoefficient", fmt.Sprintf("is %v, not a finite number", p.BackoffCoefficient))
	case p.BackoffCoefficient < 0:
		return bad("BackoffCoefficient", "is negative")
	}
	return nil
}

// Claim takes up to Max ready jobs of Queue, in the order they became ready,
// each with a new attempt and a lease of LeaseMS for Owner.
//
// Types, when not empty, lists the job types the claimer can run. A ready
// job of another type met on the way is not claimed but deferred: it stays
// Queued, leaves the ready index for the delayed one until a backoff has
// passed (1 s, doubling with each deferral in a row up to 30 s; a claim
// resets the count), and its record says why (Job.DeferredReason). No
// history event is written. One claim defers at most
// MaxDeferralsPerClaim jobs, so its cost stays bounded. Empty Types claims any
// type.
type Claim struct {
	Header
	Queue   string   `json:"queue" msgpack:"qu"`
	Owner   string   `json:"owner" msgpack:"ow"`
	Max     int      `json:"max" msgpack:"mx"`
	LeaseMS int64    `json:"lease_ms" msgpack:"ls"`
	Types   []string `json:"types,omitempty" msgpack:"tys,omitempty"`
	// TailEvents asks for up to this many of each claimed job's newest
	// events, ending with the job_leased the claim appended
	// (ClaimedJob.Events), so a worker holding the job's earlier history
	// (a cached workflow woken by a timer, a signal, a child) needs no
	// history read before it goes on. 0: none; at most MaxTailEvents. Apply
	// ignores it: Engine.Claim reads them from the applied state once the
	// claim is applied, and the recorded result of a request id holds none.
	TailEvents int `json:"tail_events,omitempty" msgpack:"te,omitempty"`
	// BuildID names the claimer's build (worker.Options.BuildID), for the
	// task queue view (TaskQueuePoller.BuildID). Like TailEvents it is
	// the serving node's and never replicated: Engine.Claim records it and
	// proposes the claim without it.
	BuildID string `json:"build_id,omitempty" msgpack:"bid,omitempty"`
}

// MaxTailEvents bounds Claim.TailEvents.
const MaxTailEvents = 64

// MaxDeferralsPerClaim bounds how many ready jobs of types the claimer does
// not run (Claim.Types) one Claim defers, so a queue full of such jobs
// costs each claim a bounded amount of work; the next claim goes on.
const MaxDeferralsPerClaim = 64

// Heartbeat renews the leases of running attempts to Now+LeaseMS. Each
// attempt that is not current is refused on its own; the others are renewed.
type Heartbeat struct {
	Header
	Leases  []LeaseRef `json:"leases" msgpack:"ls"`
	LeaseMS int64      `json:"lease_ms" msgpack:"ms"`
}

// NewEvent is an event a worker asks to append; the engine numbers and stamps it.
type NewEvent struct {
	Type    EventType `json:"type" msgpack:"t"`
	Step    string    `json:"step,omitempty" msgpack:"s,omitempty"`
	Name    string    `json:"name,omitempty" msgpack:"n,omitempty"`
	Payload []byte    `json:"payload,omitempty" msgpack:"p,omitempty"`
	// StepAttempt numbers the try an activity event is about (an
	// activity_attempt_failed's failed try).
	StepAttempt uint32 `json:"step_attempt,omitempty" msgpack:"sa,omitempty"`
}

// AppendEvents appends non-status events to a running job (fenced), and
// sets or cancels its durable timers. A worker that keeps the job while its
// activities run sets the workflow's timers here, so that the scheduler
// fires them (timer_fired) while the job is Running, as it does for a
// waiting job; a Wait later naming the same timer id takes it over.
type AppendEvents struct {
	Header
	LeaseRef
	Events []NewEvent `json:"events,omitempty" msgpack:"ev,omitempty"`
	// Timers are set (a timer of the same id is replaced).
	Timers []Timer `json:"timers,omitempty" msgpack:"tm,omitempty"`
	// CancelTimers are timer ids removed from the job's pending timers, so
	// they never fire; an id that is not pending is ignored.
	CancelTimers []string `json:"cancel_timers,omitempty" msgpack:"ct,omitempty"`
}

// CommitStep records a step's result (the effect) and its completion event in
// one fenced command. With CatchUp, the effect must already be recorded (by a
// remote worker or a child job) and only the event is appended, carrying the
// effect's payload (the effect's Failed flag stands; the command's is
// ignored). A step commits once.
type CommitStep struct {
	Header
	LeaseRef
	Step    string    `json:"step" msgpack:"st"`
	Type    EventType `json:"type" msgpack:"ty"`                    // the completion event, e.g. "activity_completed"
	Name    string    `json:"name,omitempty" msgpack:"n,omitempty"` // the event's name (activity type, …)
	Payload []byte    `json:"payload,omitempty" msgpack:"p,omitempty"`
	Failed  bool      `json:"failed,omitempty" msgpack:"f,omitempty"`
	CatchUp bool      `json:"catch_up,omitempty" msgpack:"cu,omitempty"`
	// StepAttempt is the try whose result this is (0 for a catch-up, whose
	// try ran elsewhere). A step with a step record commits only from its
	// newest try: an older one is refused with ErrStaleAttempt.
	StepAttempt uint32 `json:"step_attempt,omitempty" msgpack:"sa,omitempty"`
	// Decision is the critic's, when one judged the try.
	Decision CriticDecision `json:"decision,omitempty" msgpack:"dc,omitempty"`
	// Reason is recorded on the event: ReasonNotStarted for a step that
	// fails where it waited, without running again.
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// Wait blocks a running job (fenced) on a timer, signals or step effects and
// releases its lease. If something it waits for already happened after
// SeenSeq (the last event the worker has seen), the wait is over before it
// starts: nothing is written and the result says Woken.
type Wait struct {
	Header
	LeaseRef
	Spec    WaitSpec `json:"spec" msgpack:"sp"`
	SeenSeq uint64   `json:"seen_seq" msgpack:"ss"`
	// Events are appended just before job_waiting (markers and scheduled
	// timers the worker recorded), saving a separate AppendEvents. They are
	// not written when the wait is already over.
	Events []NewEvent `json:"events,omitempty" msgpack:"ev,omitempty"`
}

// ContinueAsNew ends a running job (fenced) as Completed and, in the same
// command, starts the next run of its workflow id with a fresh history: the
// same queue, parent and parent step, and Type (empty: the same type) with
// Input. A crash can never leave the workflow id with neither run.
type ContinueAsNew struct {
	Header
	LeaseRef
	Type  string `json:"type,omitempty" msgpack:"ty,omitempty"`
	Input []byte `json:"input,omitempty" msgpack:"in,omitempty"`
	// Failure, when set, ends the run as Failed (reason "retried") instead
	// of Completed: a retry of a failed run under its RetryPolicy.
	Failure []byte `json:"failure,omitempty" msgpack:"fl,omitempty"`
	// DelayMS holds the new run back (Retrying) for a retry's backoff.
	DelayMS int64 `json:"delay_ms,omitempty" msgpack:"d,omitempty"`
}

// RequestCancel asks a workflow to cancel itself: it appends
// cancel_requested (the workflow code sees its context cancelled) and wakes
// a waiting job. Cancel, by contrast, ends the job at once.
type RequestCancel struct {
	Header
	Target
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// Sender, when set, names the workflow command on whose behalf a
	// run's worker asks (workflow.RequestCancelExternalWorkflow): see
	// SenderStep.
	Sender *SenderStep `json:"sender,omitempty" msgpack:"sd,omitempty"`
}

// Signal delivers a named signal to a job; it wakes the job if it waits for that name.
type Signal struct {
	Header
	Target
	Name    string `json:"name" msgpack:"n"`
	Payload []byte `json:"payload,omitempty" msgpack:"p,omitempty"`
	// Sender, when set, names the workflow command on whose behalf a
	// run's worker signals (workflow.SignalExternalWorkflow): see
	// SenderStep.
	Sender *SenderStep `json:"sender,omitempty" msgpack:"sd,omitempty"`
}

// SenderStep names the step of a running workflow whose command signals
// another run or asks it to cancel. A Signal or RequestCancel that carries
// one is applied on the sender's shard, under the sender's lease, and its
// outcome becomes the step's effect, which the sender's worker catches up
// (CommitStep.CatchUp) as signal_external_sent or cancel_external_requested,
// or as their failed events when the target is unknown or closed
// (FailureUnknownExternal) or refuses the command (FailureInvalidExternal).
// So the command lands once, and its outcome with it, without relying on
// request ids, which expire. A target on the sender's shard is signalled in
// the same transaction; one on another shard through the sender's outbox
// (docs/sharding.md, "Cross-shard work"), and the effect is recorded when
// the target's answer is acknowledged. Sending again for a step that has
// its effect, or whose delivery is on its way, sends nothing.
type SenderStep struct {
	LeaseRef
	Step string `json:"step" msgpack:"st"`
}

// FireTimers fires up to Max timers due at Now.
type FireTimers struct {
	Header
	Max int `json:"max" msgpack:"mx"`
}

// Reclaim requeues up to Max running jobs whose lease expired by Now. It
// never touches a Waiting or Parked job (they hold no lease).
type Reclaim struct {
	Header
	Max int `json:"max" msgpack:"mx"`
}

// ReleaseDelayed requeues up to Max Retrying jobs whose retry delay has passed.
type ReleaseDelayed struct {
	Header
	Max int `json:"max" msgpack:"mx"`
}

// Terminate ends a job at once as Terminated from any non-terminal status
// (an operator's "terminate"): job_terminated, carrying a TerminatedError
// failure payload (see Failure), which also becomes the failed effect of a
// child's parent step. A running attempt loses its lease and is fenced out.
type Terminate struct {
	Header
	Target
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// ByParent, when set, is the lease of the parent run on whose behalf
	// a worker terminates a child (its parent-close policy): the command
	// is refused unless that lease is the parent's current one and the
	// target is that parent's child. The HTTP API lets a worker terminate
	// only so; anything else needs an admin.
	ByParent *LeaseRef `json:"by_parent,omitempty" msgpack:"bp,omitempty"`
}

// ExpireDeadlines ends as TimedOut up to Max jobs whose execution, run or
// schedule-to-start deadline passed by Now (the scheduler proposes it).
type ExpireDeadlines struct {
	Header
	Max int `json:"max" msgpack:"mx"`
}

// Cancel ends a job as Cancelled from any non-terminal status.
type Cancel struct {
	Header
	Target
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// Activate moves a Draft job to Queued.
type Activate struct {
	Header
	Target
}

// Suspend pauses a job; a running attempt loses its lease and is fenced out.
type Suspend struct {
	Header
	Target
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// Resume moves a Suspended job to Queued.
type Resume struct {
	Header
	Target
}

// Complete ends a running job successfully (fenced).
type Complete struct {
	Header
	LeaseRef
	Result []byte `json:"result,omitempty" msgpack:"r,omitempty"`
}

// Fail ends a running job with a failure (fenced).
type Fail struct {
	Header
	LeaseRef
	Error []byte `json:"error,omitempty" msgpack:"e,omitempty"`
}

// Requeue puts a job back in its queue, after DelayMS (then it is Retrying
// until the scheduler releases it). A running job is requeued by its own
// attempt (fenced); a Failed job is retried with Attempt 0.
type Requeue struct {
	Header
	LeaseRef
	DelayMS int64  `json:"delay_ms,omitempty" msgpack:"d,omitempty"`
	Reason  string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

func (*CreateJob) Kind() CommandKind { return KindCreateJob }

func (*Claim) Kind() CommandKind { return KindClaim }

func (*Heartbeat) Kind() CommandKind { return KindHeartbeat }

func (*AppendEvents) Kind() CommandKind { return KindAppendEvents }

func (*CommitStep) Kind() CommandKind { return KindCommitStep }

func (*Wait) Kind() CommandKind { return KindWait }

func (*Signal) Kind() CommandKind { return KindSignal }

func (*FireTimers) Kind() CommandKind { return KindFireTimers }

func (*Reclaim) Kind() CommandKind { return KindReclaim }

func (*ReleaseDelayed) Kind() CommandKind { return KindReleaseDelayed }

func (*Cancel) Kind() CommandKind { return KindCancel }

func (*Activate) Kind() CommandKind { return KindActivate }

func (*Suspend) Kind() CommandKind { return KindSuspend }

func (*Resume) Kind() CommandKind { return KindResume }

func (*Complete) Kind() CommandKind { return KindComplete }

func (*Fail) Kind() CommandKind { return KindFail }

func (*Requeue) Kind() CommandKind { return KindRequeue }

func (*RequestCancel) Kind() CommandKind { return KindRequestCancel }

func (*ContinueAsNew) Kind() CommandKind { return KindContinueAsNew }

func (*Terminate) Kind() CommandKind { return KindTerminate }

func (*ExpireDeadlines) Kind() CommandKind { return KindExpireDeadlines }

// ConfigureJob changes the input of a Draft job before it is activated
// (docs/state-machines.md §4); it is refused once the job left Draft.
type ConfigureJob struct {
	Header
	Target
	Input []byte `json:"input,omitempty" msgpack:"in,omitempty"`
}

func (*ConfigureJob) Kind() CommandKind { return KindConfigureJob }

func (c *ConfigureJob) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.payload("Input", c.Input)
	return ch.err
}
