package engine

// Result is what a command returns when it succeeds: one of the *Result
// types below (newResult maps each command kind to its type).
type Result interface {
	isResult()
}

// CreateResult answers CreateJob.
type CreateResult struct {
	Job        JobID  `json:"job_id" msgpack:"j"`
	WorkflowID string `json:"workflow_id" msgpack:"wf"`
	// Existing is true when IDReuseReturnExisting returned an open run.
	Existing bool `json:"existing,omitempty" msgpack:"ex,omitempty"`
	// Delivery, on a sharded cluster, names the outbox entry that carries
	// a child's create to its own shard: the machine of the parent's shard
	// answers so, and the engine waits for the entry's acknowledgement and
	// answers the child's job id instead. A caller never sees it set.
	Delivery *DeliveryRef `json:"delivery,omitempty" msgpack:"dl,omitempty"`
}

// ClaimedJob is one job handed out by Claim.
type ClaimedJob struct {
	Job           JobID  `json:"job_id" msgpack:"j"`
	WorkflowID    string `json:"workflow_id" msgpack:"wf"`
	Type          string `json:"type" msgpack:"ty"`
	Attempt       uint64 `json:"attempt" msgpack:"a"`
	LeaseExpiryMS int64  `json:"lease_expiry_ms" msgpack:"le"`
	// LeaseToken proves the lease: every fenced write of this attempt
	// carries it (LeaseRef.Token). It is given only here, to the claimer;
	// the job's record keeps only its digest. "" for a lease issued
	// without a token (see the lease tokens of package engine/machine).
	LeaseToken string `json:"lease_token,omitempty" msgpack:"tk,omitempty"`
	// LastSeq is the seq of the job_leased event the claim appended.
	LastSeq uint64 `json:"last_seq" msgpack:"ls"`
	// DeadlineMS is the run's execution deadline (0: none).
	DeadlineMS int64 `json:"deadline_ms,omitempty" msgpack:"dl,omitempty"`
	// Events are the job's newest events, up to Claim.TailEvents of them,
	// ending with the job_leased at LastSeq (none unless asked for).
	Events []Event `json:"events,omitempty" msgpack:"ev,omitempty"`
	// TraceParent is the job's: the W3C traceparent of the run's start,
	// for the span of the turn.
	TraceParent string `json:"trace_parent,omitempty" msgpack:"tp,omitempty"`
	// ParentID and ParentWorkflowID name the parent run of a child job
	// (the workflow id is "" when the parent's record is gone).
	ParentID         JobID  `json:"parent_job_id,omitempty" msgpack:"pi,omitempty"`
	ParentWorkflowID string `json:"parent_workflow_id,omitempty" msgpack:"pw,omitempty"`
	// RunAttempt numbers the runs of a workflow retry chain from 1.
	RunAttempt int32 `json:"run_attempt,omitempty" msgpack:"ra,omitempty"`
	// CronSchedule is the cron line of a cron chain's run ("" for other
	// jobs), for the run's code (Temporal's Info.CronSchedule).
	CronSchedule string `json:"cron_schedule,omitempty" msgpack:"cr,omitempty"`
	// AttemptBase and ActivityOptions are an activity task's (Job's):
	// the attempts before its activity's last reset, and the operator's
	// options to lay over the workflow's.
	AttemptBase     uint64           `json:"attempt_base,omitempty" msgpack:"ab,omitempty"`
	ActivityOptions *ActivityOptions `json:"activity_options,omitempty" msgpack:"ao,omitempty"`
}

// Lease is the LeaseRef of the claimed attempt, token included: what the
// claimer's fenced writes carry.
func (c ClaimedJob) Lease() LeaseRef {
	return LeaseRef{Job: c.Job, Attempt: c.Attempt, Token: c.LeaseToken}
}

// ClaimResult answers Claim; Jobs is empty when nothing was ready.
// Deferred lists the ready jobs the claim passed over because the claimer
// does not run their type (Claim.Types).
type ClaimResult struct {
	Jobs     []ClaimedJob `json:"jobs" msgpack:"js,omitempty"`
	Deferred []JobID      `json:"deferred,omitempty" msgpack:"df,omitempty"`
}

// Refusal is one lease a Heartbeat did not renew.
type Refusal struct {
	LeaseRef
	// Code is the stable code of the reason: StaleAttemptCode, or
	// "unknown_job" when the job does not exist.
	Code string `json:"code" msgpack:"c"`
}

// HeartbeatResult answers Heartbeat: the new expiry of the renewed leases,
// and those refused.
type HeartbeatResult struct {
	LeaseExpiryMS int64     `json:"lease_expiry_ms" msgpack:"le"`
	Refused       []Refusal `json:"refused,omitempty" msgpack:"rf,omitempty"`
	// CancelRequested lists the renewed jobs whose workflow was asked to
	// cancel: the worker cancels the activities it runs for them.
	CancelRequested []JobID `json:"cancel_requested,omitempty" msgpack:"cq,omitempty"`
	// Paused lists the renewed jobs that are paused (Job.Paused): the
	// worker starts no new try for them and ends the turn.
	Paused []JobID `json:"paused,omitempty" msgpack:"pz,omitempty"`
}

// AppendResult answers AppendEvents and CommitStep: the seqs written.
type AppendResult struct {
	FirstSeq uint64 `json:"first_seq" msgpack:"f"`
	LastSeq  uint64 `json:"last_seq" msgpack:"l"`
	// AtMS is the events' AtMS, so a writer that knows it wrote every
	// event from FirstSeq to LastSeq can rebuild them without reading the
	// history back. 0 in results recorded by older versions.
	AtMS int64 `json:"at_ms,omitempty" msgpack:"at,omitempty"`
}

// WaitResult answers Wait.
type WaitResult struct {
	// Woken: the wait was already satisfied; nothing was written and the
	// job is still Running under the same attempt and lease.
	Woken  bool   `json:"woken,omitempty" msgpack:"wk,omitempty"`
	Status Status `json:"status" msgpack:"st"`
	Seq    uint64 `json:"seq" msgpack:"sq"`
}

// SignalResult answers Signal.
type SignalResult struct {
	Job JobID  `json:"job_id" msgpack:"j"`
	Seq uint64 `json:"seq" msgpack:"sq"`
	// Woke is true when the signal ended the job's wait.
	Woke bool `json:"woke,omitempty" msgpack:"wk,omitempty"`
}

// SweepResult answers FireTimers, Reclaim, ReleaseDelayed and
// ExpireDeadlines: the jobs touched, those made claimable, and whether more
// were due than Max allowed.
type SweepResult struct {
	Jobs  []JobID `json:"jobs,omitempty" msgpack:"js,omitempty"`
	Ready []JobID `json:"ready,omitempty" msgpack:"rd,omitempty"`
	More  bool    `json:"more,omitempty" msgpack:"mo,omitempty"`
}

// StatusResult answers the lifecycle commands: the job, its new status and
// the seq of the status event.
type StatusResult struct {
	Job    JobID  `json:"job_id" msgpack:"j"`
	Status Status `json:"status" msgpack:"st"`
	Seq    uint64 `json:"seq" msgpack:"sq"`
}

// StepResult answers LeaseStep, StepHeartbeat, EndStepAttempt and
// AnswerStep: the step's state after the command and what the worker
// needs to go on.
type StepResult struct {
	Job   JobID     `json:"job_id" msgpack:"j"`
	Step  string    `json:"step" msgpack:"s"`
	State StepState `json:"state" msgpack:"st"`
	// StepAttempt is the step's newest try: the one leased, or running.
	StepAttempt uint32 `json:"step_attempt,omitempty" msgpack:"sa,omitempty"`
	// Granted: the step holds a step lease for StepAttempt (LeaseStep).
	Granted bool `json:"granted,omitempty" msgpack:"g,omitempty"`
	// Queued: the step waits for a resource unit; WaitingDeps: for the
	// steps it depends on. Either way the job is told by a step_leased
	// when it is leased.
	Queued      bool `json:"queued,omitempty" msgpack:"q,omitempty"`
	WaitingDeps bool `json:"waiting_deps,omitempty" msgpack:"wd,omitempty"`
	// Resource and Labels name the resource unit held, if any.
	Resource string            `json:"resource,omitempty" msgpack:"r,omitempty"`
	Labels   map[string]string `json:"labels,omitempty" msgpack:"lb,omitempty"`
	// StepLeaseExpiryMS is when the step lease ends (0: the job's lease
	// covers the step); LeaseExpiryMS the job's lease, after a heartbeat.
	StepLeaseExpiryMS int64 `json:"step_lease_expiry_ms,omitempty" msgpack:"sle,omitempty"`
	LeaseExpiryMS     int64 `json:"lease_expiry_ms,omitempty" msgpack:"le,omitempty"`
	// StepLeaseRemainingMS is how long the step lease had left when the
	// command was applied. A worker measures it from when it sent the
	// command, on its own clock: an answer that took longer than that to
	// arrive may hold a lease that is over (the engine expired it while
	// the answer was on its way, across a leader's failover), and a try
	// started on it could run beside the next try on the same resource.
	StepLeaseRemainingMS int64 `json:"step_lease_remaining_ms,omitempty" msgpack:"slr,omitempty"`
	// CancelRequested: the workflow was asked to cancel (a heartbeat's
	// answer, as Heartbeat gives it).
	CancelRequested bool `json:"cancel_requested,omitempty" msgpack:"cq,omitempty"`
	// FirstSeq and LastSeq are the events the command appended to the
	// job's history (0 when none), and AtMS their time.
	FirstSeq uint64 `json:"first_seq,omitempty" msgpack:"f,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty" msgpack:"l,omitempty"`
	AtMS     int64  `json:"at_ms,omitempty" msgpack:"at,omitempty"`
	// JobSeq is the job's last seq after the command, whether or not it
	// appended anything: a worker that parks a step (queued, waiting for
	// its dependencies or a person) knows that any later event of the step
	// is someone else's news.
	JobSeq uint64 `json:"job_seq,omitempty" msgpack:"js,omitempty"`
	// Paused: the step (PauseActivity) or its run (Pause) is paused, so
	// LeaseStep granted nothing; the worker parks the step until news of it
	// (an unpause) wakes the job. On a heartbeat's answer it tells a running
	// try that no try follows it until then.
	Paused bool `json:"paused,omitempty" msgpack:"pz,omitempty"`
	// AttemptBase is the tries made before the step's last reset: the
	// retry policy counts StepAttempt-AttemptBase. Options are the
	// options an operator laid over the workflow's.
	AttemptBase uint32           `json:"attempt_base,omitempty" msgpack:"ab,omitempty"`
	Options     *ActivityOptions `json:"options,omitempty" msgpack:"op,omitempty"`
}

// ResourceResult answers AddResource, DrainResource and RemoveResource:
// the resource as it is now (nil once removed), and the waiting steps its
// change leased a unit to.
type ResourceResult struct {
	Resource *Resource `json:"resource" msgpack:"r"`
	Granted  int       `json:"granted,omitempty" msgpack:"g,omitempty"`
}

func (*StepResult) isResult()      {}
func (*ResourceResult) isResult()  {}
func (*CreateResult) isResult()    {}
func (*DeliverResult) isResult()   {}
func (*AckResult) isResult()       {}
func (*ClaimResult) isResult()     {}
func (*HeartbeatResult) isResult() {}
func (*WaitResult) isResult()      {}
func (*SignalResult) isResult()    {}
func (*AppendResult) isResult()    {}
func (*SweepResult) isResult()     {}
func (*StatusResult) isResult()    {}
