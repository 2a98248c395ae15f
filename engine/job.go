package engine

// Clone returns a copy of j that Apply may change without changing j.
func (j *Job) Clone() *Job {
	c := *j
	c.Timers = append([]Timer(nil), j.Timers...)
	c.LiveSteps = append([]string(nil), j.LiveSteps...)
	c.Beats = append([]StepBeat(nil), j.Beats...)
	if j.Wait != nil {
		w := *j.Wait
		c.Wait = &w
	}
	c.Pause = clonePause(j.Pause)
	c.ActivityOptions = j.ActivityOptions.Clone()
	return &c
}

// JobID identifies one job (one workflow run). IDs are assigned by Apply from
// a counter, in creation order.
type JobID uint64

// Job is the stored record of a job: identity, the status projection and the
// bookkeeping the indexes are derived from. The history is the truth; every
// field here is kept equal to what the history implies.
type Job struct {
	ID         JobID  `json:"job_id" msgpack:"id"`
	WorkflowID string `json:"workflow_id" msgpack:"wf"`
	Type       string `json:"type" msgpack:"ty"`
	Queue      string `json:"queue" msgpack:"qu"`
	Status     Status `json:"status" msgpack:"st"`
	// Attempt is the current (latest) attempt; 0 until the first claim.
	Attempt uint64 `json:"attempt,omitempty" msgpack:"at,omitempty"`
	// LeaseOwner and LeaseExpiryMS describe the lease while Running.
	LeaseOwner    string `json:"lease_owner,omitempty" msgpack:"lo,omitempty"`
	LeaseExpiryMS int64  `json:"lease_expiry_ms,omitempty" msgpack:"le,omitempty"`
	// LeaseDigest is the SHA-256 of the current attempt's lease token,
	// which fenced writes must present (never the token itself, so a read
	// of the record gives nothing to write with). The claim sets it; it is
	// kept while the attempt runs and while it waits (Waiting, Parked: an
	// activity task parked for asynchronous completion is completed by its
	// token), and cleared by every other status. Empty for a lease issued
	// without a token, and in records written before tokens existed.
	LeaseDigest []byte `json:"-" msgpack:"ltd,omitempty"`
	// LastSeq is the seq of the newest event.
	LastSeq uint64 `json:"last_seq" msgpack:"ls"`
	// ReadyAtMS orders a Queued job in its ready index.
	ReadyAtMS int64 `json:"ready_at_ms,omitempty" msgpack:"ra,omitempty"`
	// ReleaseAtMS is when a Retrying job's delay ends.
	ReleaseAtMS int64 `json:"release_at_ms,omitempty" msgpack:"rl,omitempty"`
	// Wait is what a Waiting or Parked job waits for.
	Wait *WaitSpec `json:"wait,omitempty" msgpack:"wa,omitempty"`
	// Timers are the job's pending durable timers.
	Timers []Timer `json:"timers,omitempty" msgpack:"tm,omitempty"`
	// Retries counts requeues after a failure or a retry request.
	Retries uint32 `json:"retries,omitempty" msgpack:"rt,omitempty"`
	// StartDigest fingerprints type, queue and input, to recognise an
	// identical start under IDReuseReturnExisting. It is the engine's
	// own, and left out of JSON (where, as a 64-bit number, JavaScript
	// could not even read it exactly).
	StartDigest uint64 `json:"-" msgpack:"sd,omitempty"`
	// ParentID and ParentStep link a child job to the step of its parent
	// whose effect its result becomes.
	ParentID   JobID  `json:"parent_job_id,omitempty" msgpack:"pi,omitempty"`
	ParentStep string `json:"parent_step,omitempty" msgpack:"ps,omitempty"`
	// ParentWorkflowID is the parent's workflow id when the parent lives on
	// another shard (its record is not in this store); "" otherwise.
	ParentWorkflowID string `json:"parent_workflow_id,omitempty" msgpack:"pw,omitempty"`
	// ParentClosePolicy applies while the job is open when its parent ends
	// by Terminate or a timeout.
	ParentClosePolicy ParentClosePolicy `json:"parent_close_policy,omitempty" msgpack:"pcp,omitempty"`
	// DeadlineMS ends the chain of runs (its execution timeout); 0: none.
	DeadlineMS int64 `json:"deadline_ms,omitempty" msgpack:"dl,omitempty"`
	// RunDeadlineMS ends this run (its run timeout); 0: none. RunTimeoutMS
	// is that timeout, which every later run of the chain (ContinueAsNew,
	// a retry) gets afresh from its own start.
	RunDeadlineMS int64 `json:"run_deadline_ms,omitempty" msgpack:"rdl,omitempty"`
	RunTimeoutMS  int64 `json:"run_timeout_ms,omitempty" msgpack:"rto,omitempty"`
	// StartDeadlineMS ends the job unless it is claimed by then (its
	// schedule-to-start timeout); the first claim clears it. 0: none.
	StartDeadlineMS int64 `json:"start_deadline_ms,omitempty" msgpack:"sdl,omitempty"`
	// TimeoutAtMS is when the earliest of the three deadlines above falls
	// due, as placed in the deadline index: the deadline itself, or the
	// time the entry was made when that deadline had already passed. 0 for
	// a job with no deadline, and for a job that ended.
	TimeoutAtMS int64 `json:"timeout_at_ms,omitempty" msgpack:"toa,omitempty"`
	// Deferrals counts the claims in a row that passed the job over
	// because the claimer does not run its type (Claim.Types); a claim of
	// the job resets it. DeferredReason says who passed it over, and
	// DeferredUntilMS, while set, is when the Queued job becomes claimable
	// again (until then it sits in the delayed index, not the ready one).
	Deferrals       uint32 `json:"deferrals,omitempty" msgpack:"dfn,omitempty"`
	DeferredReason  string `json:"deferred_reason,omitempty" msgpack:"dfr,omitempty"`
	DeferredUntilMS int64  `json:"deferred_until_ms,omitempty" msgpack:"dfu,omitempty"`
	// Retry is the workflow retry policy; RunAttempt numbers the runs of a
	// retry chain from 1.
	Retry      *RetryPolicy `json:"retry,omitempty" msgpack:"rp,omitempty"`
	RunAttempt int32        `json:"run_attempt,omitempty" msgpack:"ra2,omitempty"`
	// CancelRequested records a RequestCancel, so heartbeats can tell the
	// worker holding the job to cancel the activities it runs.
	CancelRequested bool `json:"cancel_requested,omitempty" msgpack:"cq,omitempty"`
	// TraceParent is CreateJob's: the W3C traceparent of the run's start.
	TraceParent string `json:"trace_parent,omitempty" msgpack:"tp,omitempty"`
	// TimeoutOnLeaseExpiry ends the job as TimedOut (reason lease_expired,
	// a Heartbeat TimeoutError) when its lease runs out, instead of
	// requeueing it: set from CreateJob.TimeoutOnLeaseExpiry.
	TimeoutOnLeaseExpiry bool `json:"timeout_on_lease_expiry,omitempty" msgpack:"tle,omitempty"`
	// ScheduleID names the schedule that started the run (kept by the
	// runs it continues as), so that its end wakes the schedule.
	ScheduleID string `json:"schedule_id,omitempty" msgpack:"sch,omitempty"`
	// CronSchedule is the chain's cron line (CreateJob.CronSchedule).
	CronSchedule string `json:"cron_schedule,omitempty" msgpack:"cron,omitempty"`
	// ResetNewRunID is the run that a reset (ResetJob) started in this
	// run's place: set on the base run of the reset (the newest such run
	// when it was reset more than once), and on the workflow id's open run
	// that the reset ended when that was another. 0: none.
	ResetNewRunID JobID `json:"reset_new_run_id,omitempty" msgpack:"rsn,omitempty"`
	// ResetBaseRunID and ResetEventID, on a run a reset started, name the
	// run it was reset from and the reset point in that run's numbering.
	ResetBaseRunID JobID  `json:"reset_base_run_id,omitempty" msgpack:"rsb,omitempty"`
	ResetEventID   uint64 `json:"reset_event_id,omitempty" msgpack:"rse,omitempty"`
	// LiveSteps are the steps with a step record that have not ended
	// (see StepRecord): a job's end releases what they hold, and a step's
	// success looks among them for steps waiting on it.
	LiveSteps []string `json:"live_steps,omitempty" msgpack:"lv,omitempty"`
	// Beats are the last heartbeats of the steps running under the job's
	// own lease (without a step record), for describe; a step's commit
	// and every status change clear them.
	Beats []StepBeat `json:"beats,omitempty" msgpack:"bt,omitempty"`
	// Pause is set while an operator holds the run (Pause): it is not
	// claimed, and its worker starts nothing more. HeldByParent: the job
	// is an activity task of a paused run, held the same way until the
	// run is unpaused. Both are the projection of the history's
	// workflow_paused and workflow_unpaused events (DerivePause).
	Pause        *PauseInfo `json:"pause,omitempty" msgpack:"pz,omitempty"`
	HeldByParent bool       `json:"held_by_parent,omitempty" msgpack:"hbp,omitempty"`
	// AttemptBase and ActivityOptions are an activity task's (a job that
	// runs an activity of another queue's workflow): the job attempts made
	// before its activity's last reset (ResetActivity), from which its
	// tries count again, and the options an operator laid over the
	// workflow's (UpdateActivityOptions).
	AttemptBase     uint64           `json:"attempt_base,omitempty" msgpack:"ab,omitempty"`
	ActivityOptions *ActivityOptions `json:"activity_options,omitempty" msgpack:"ao,omitempty"`
	CreatedMS       int64            `json:"created_ms" msgpack:"cr"`
	UpdatedMS       int64            `json:"updated_ms" msgpack:"up"`
	ClosedMS        int64            `json:"closed_ms,omitempty" msgpack:"cl,omitempty"`
	// PrevRunID and NextRunID link the runs of one workflow id that
	// follow one another: the run this one continues, and the run that
	// continued this one after it ended. NextRunReason says how this run
	// led to the next: ReasonContinuedAsNew (the workflow continued as
	// new), ReasonRetried (the workflow's retry policy started it again
	// after a failure), ReasonCronNext (the next run of a cron chain),
	// ReasonReset (a reset started the next run in place of this one, the
	// workflow id's current run then; the next run's ResetBaseRunID names
	// the run whose history it took, which may be an older one). Runs started on their own (a start after the last run
	// ended) are not linked; List with a WorkflowID lists them all.
	PrevRunID     JobID  `json:"prev_run_id,omitempty" msgpack:"prv,omitempty"`
	NextRunID     JobID  `json:"next_run_id,omitempty" msgpack:"nxr,omitempty"`
	NextRunReason string `json:"next_run_reason,omitempty" msgpack:"nxw,omitempty"`
}

// ContinuedAsNew reports whether j ended by continuing as a new run
// (Temporal's ContinuedAsNew status; heddle records it as Completed).
func (j *Job) ContinuedAsNew() bool {
	return j.Status == StatusCompleted && j.NextRunID != 0 && j.NextRunReason == ReasonContinuedAsNew
}

// NextRunText says in words how a run led to the next one of its chain
// (Job.NextRunReason), for people: "Continued as new", "Retried", "Next
// cron run"; any other reason as it is recorded.
func NextRunText(reason string) string {
	switch reason {
	case ReasonContinuedAsNew:
		return "Continued as new"
	case ReasonRetried:
		return "Retried"
	case ReasonCronNext:
		return "Next cron run"
	case ReasonReset:
		return "Reset"
	}
	return reason
}

// ExecutionStatus names j's status as Temporal's ExecutionStatus does:
// Running for every open status, ContinuedAsNew for a run that continued
// as new, Canceled for Cancelled, and the other ends by their names.
func (j *Job) ExecutionStatus() string {
	switch {
	case !j.Status.Terminal():
		return "Running"
	case j.ContinuedAsNew():
		return "ContinuedAsNew"
	case j.Status == StatusCancelled:
		return "Canceled"
	}
	return j.Status.String()
}

// StepBeat is the last heartbeat of one try of a step the job's lease covers.
type StepBeat struct {
	Step        string `json:"step" msgpack:"s"`
	StepAttempt uint32 `json:"step_attempt" msgpack:"a"`
	AtMS        int64  `json:"at_ms" msgpack:"at"`
}

// Timer is one pending durable timer of a job.
type Timer struct {
	ID     string `json:"id" msgpack:"i"`
	FireMS int64  `json:"fire_ms" msgpack:"f"`
}

// Effect is a step's recorded result (phase 1 of the two-phase commit).
// CommittedSeq is the seq of the history event that committed it (phase 2),
// or 0 while the effect still waits to be caught up into the history.
type Effect struct {
	Step         string `json:"step" msgpack:"s"`
	Payload      []byte `json:"payload,omitempty" msgpack:"p,omitempty"`
	Failed       bool   `json:"failed,omitempty" msgpack:"f,omitempty"`
	Attempt      uint64 `json:"attempt,omitempty" msgpack:"a,omitempty"`
	CommittedSeq uint64 `json:"committed_seq,omitempty" msgpack:"c,omitempty"`
	AtMS         int64  `json:"at_ms" msgpack:"at"`
}
