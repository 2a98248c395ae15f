package engine

import (
	"fmt"
	"math"
	"slices"
)

// ReviewTarget names a task by id, or by job and phase when ID is 0.
type ReviewTarget struct {
	ID    ReviewID `json:"task_id,omitempty" msgpack:"id,omitempty"`
	Job   string   `json:"job_id,omitempty" msgpack:"jb,omitempty"`
	Phase string   `json:"phase,omitempty" msgpack:"ph,omitempty"`
}

func (t ReviewTarget) String() string {
	if t.ID != 0 {
		return fmt.Sprintf("task %d", t.ID)
	}
	return fmt.Sprintf("task %s/%s", t.Job, t.Phase)
}

// ReviewLeaseRef names one lease of one task: the attempt the worker or the
// reviewer was given. Every write from the holder carries it.
type ReviewLeaseRef struct {
	Review  ReviewID `json:"task_id" msgpack:"t"`
	Attempt uint64   `json:"attempt" msgpack:"a"`
	// Token is the lease token the claim returned (ClaimedReview.LeaseToken),
	// as for a job's LeaseRef.Token.
	Token string `json:"lease_token,omitempty" msgpack:"tk,omitempty"`
}

// CreateReview creates a review task in Job, named Phase: PENDING
// (task_created), or DRAFT (task_drafted) with Draft. A PENDING task is
// claimable once every task of Deps (phases of the same job, created
// before it) has reached SUCCESS.
type CreateReview struct {
	Header
	Job            string       `json:"job_id" msgpack:"jb"`
	Phase          string       `json:"phase" msgpack:"ph"`
	Description    string       `json:"description,omitempty" msgpack:"ds,omitempty"`
	JobDescription string       `json:"job_description,omitempty" msgpack:"jd,omitempty"`
	Queue          string       `json:"queue" msgpack:"qu"`
	ReviewQueue    string       `json:"review_queue,omitempty" msgpack:"rvq,omitempty"`
	Type           string       `json:"type" msgpack:"ty"`
	ReviewType     string       `json:"review_type,omitempty" msgpack:"rt,omitempty"`
	Deps           []string     `json:"deps,omitempty" msgpack:"dp,omitempty"`
	Draft          bool         `json:"draft,omitempty" msgpack:"dr,omitempty"`
	AutoReview     bool         `json:"auto_review,omitempty" msgpack:"ar,omitempty"`
	AutoApprove    bool         `json:"auto_approve,omitempty" msgpack:"aa,omitempty"`
	Config         ReviewConfig `json:"config" msgpack:"cf"`
	// ParentJob and ParentStep make the task's end the effect of that
	// workflow step: its output at SUCCESS, a failure at CANCELED.
	ParentJob  JobID  `json:"parent_job_id,omitempty" msgpack:"pj,omitempty"`
	ParentStep string `json:"parent_step,omitempty" msgpack:"ps,omitempty"`
	// ParentLease is required with ParentJob: the lease of the parent run
	// the caller holds, as for CreateJob.ParentLease. Only the worker
	// driving a workflow may create its tasks, since their end writes into
	// one of its steps.
	ParentLease *LeaseRef `json:"parent_lease,omitempty" msgpack:"pl,omitempty"`
	// By is who created it.
	By string `json:"by,omitempty" msgpack:"tby,omitempty"`
}

// ReviewCommand is a human command on a task (activate, config, suspend,
// resume, cancel, step, approve, reject, resubmit, fix, terminate). It is
// legal only in the states the task table allows; otherwise it is refused
// with a *ReviewStateError naming the state and the legal commands.
type ReviewCommand struct {
	Header
	ReviewTarget
	Op ReviewOp `json:"op" msgpack:"op"`
	// By is who decided: required for approve, reject, resubmit, fix and
	// terminate, recorded for every command.
	By string `json:"by,omitempty" msgpack:"tby,omitempty"`
	// Reason is a person's words: the feedback of reject, resubmit or fix
	// (the next run reads it), or why a task was suspended or canceled.
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// Config changes a DRAFT task's configuration (config only); its set
	// fields replace the task's.
	Config *ReviewConfig `json:"config,omitempty" msgpack:"cf,omitempty"`
	// Expect, when set, makes the command apply only while the task is in
	// that state: a person approving what they saw is not surprised by a
	// change made meanwhile.
	Expect ReviewState `json:"expect,omitempty" msgpack:"ex,omitempty"`
}

// ReviewRole says which side of a task a claim takes.
type ReviewRole uint8

// Review roles.
const (
	// ReviewRoleWork claims PENDING tasks whose dependencies are met: PENDING → RUNNING.
	ReviewRoleWork ReviewRole = 0
	// ReviewRoleReview claims REVIEWING tasks no reviewer holds.
	ReviewRoleReview ReviewRole = 1
)

func (r ReviewRole) String() string {
	if r == ReviewRoleReview {
		return "review"
	}
	return "work"
}

// ClaimReviews takes up to Max claimable tasks of Queue for Owner, oldest
// first, each with a new attempt and a lease of LeaseMS. Types, when not
// empty, lists the work (or reviewer) types the claimer runs; other tasks
// are passed over and stay claimable.
type ClaimReviews struct {
	Header
	Role    ReviewRole `json:"role" msgpack:"ro"`
	Queue   string     `json:"queue" msgpack:"qu"`
	Owner   string     `json:"owner" msgpack:"ow"`
	Max     int        `json:"max" msgpack:"mx"`
	LeaseMS int64      `json:"lease_ms" msgpack:"ls"`
	Types   []string   `json:"types,omitempty" msgpack:"tys,omitempty"`
}

// ReviewReportOp is what the holder of a task's lease reports.
type ReviewReportOp uint8

// Report ops.
const (
	// ReviewReportOutput records the work's output, cost and summary:
	// RUNNING → REVIEW_REQUIRED (then REVIEWING at once with AutoReview).
	ReviewReportOutput ReviewReportOp = 1
	// ReviewReportPause: the work is rate limited (RUNNING → PAUSED); it keeps
	// its lease and must go on renewing it.
	ReviewReportPause ReviewReportOp = 2
	// ReviewReportUnpause: PAUSED → RUNNING.
	ReviewReportUnpause ReviewReportOp = 3
	// ReviewReportVerdict records the reviewer's verdict: REVIEWING →
	// APPROVAL_REQUIRED or INTERVENTION_REQUIRED (then SUCCESS at once for
	// an approval with AutoApprove).
	ReviewReportVerdict ReviewReportOp = 4
)

// ReviewReport is a fenced write by the holder of a task's lease.
type ReviewReport struct {
	Header
	ReviewLeaseRef
	Op         ReviewReportOp `json:"op" msgpack:"op"`
	Output     []byte         `json:"output,omitempty" msgpack:"ou,omitempty"`
	Cost       float64        `json:"cost,omitempty" msgpack:"co,omitempty"`
	Summary    string         `json:"summary,omitempty" msgpack:"su,omitempty"`
	Assessment *Assessment    `json:"review,omitempty" msgpack:"rv,omitempty"`
}

// ReviewHeartbeat renews task leases to Now+LeaseMS; each stale one is
// refused on its own.
type ReviewHeartbeat struct {
	Header
	Leases  []ReviewLeaseRef `json:"leases" msgpack:"ls"`
	LeaseMS int64            `json:"lease_ms" msgpack:"ms"`
}

// ReclaimReviews recovers up to Max tasks whose lease expired by Now:
// RUNNING or PAUSED → PENDING, REVIEWING → REVIEW_REQUIRED. It is judged
// only from the lease index and the records, never from a worker's clock.
type ReclaimReviews struct {
	Header
	Max int `json:"max" msgpack:"mx"`
}

func (*CreateReview) Kind() CommandKind    { return KindCreateReview }
func (*ReviewCommand) Kind() CommandKind   { return KindReviewCommand }
func (*ClaimReviews) Kind() CommandKind    { return KindClaimReviews }
func (*ReviewReport) Kind() CommandKind    { return KindReviewReport }
func (*ReviewHeartbeat) Kind() CommandKind { return KindReviewHeartbeat }
func (*ReclaimReviews) Kind() CommandKind  { return KindReclaimReviews }

func (c *checker) config(cf *ReviewConfig) {
	if cf == nil {
		return
	}
	c.text("Config.Objective", cf.Objective)
	c.text("Config.Details", cf.Details)
	if c.err == nil && len(cf.Acceptance) > c.lim.MaxBatch {
		c.err = tooLarge(c.cmd, "Config.Acceptance", len(cf.Acceptance), c.lim.MaxBatch)
	}
	for i, a := range cf.Acceptance {
		c.text(fmt.Sprintf("Config.Acceptance[%d]", i), a)
	}
	c.payload("Config.Input", cf.Input)
}

// text checks free text: within the payload limit.
func (c *checker) text(field, s string) {
	if c.err == nil && len(s) > c.lim.MaxPayloadBytes {
		c.err = tooLarge(c.cmd, field, len(s), c.lim.MaxPayloadBytes)
	}
}

func (c *checker) reviewTarget(t ReviewTarget) {
	if c.err == nil && t.ID == 0 && (t.Job == "" || t.Phase == "") {
		c.fail("Target", "needs a task id, or a job and a phase")
	}
	c.name("Job", t.Job, false)
	c.name("Phase", t.Phase, false)
}

func (c *CreateReview) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("Job", c.Job, true)
	ch.name("Phase", c.Phase, true)
	ch.name("Queue", c.Queue, true)
	ch.name("ReviewQueue", c.ReviewQueue, false)
	ch.name("Type", c.Type, true)
	ch.name("ReviewType", c.ReviewType, false)
	ch.name("ParentStep", c.ParentStep, c.ParentJob != 0)
	ch.parentLease(&c.Header, c.ParentJob, c.ParentLease)
	ch.name("By", c.By, false)
	ch.text("Description", c.Description)
	ch.text("JobDescription", c.JobDescription)
	if ch.err == nil && len(c.Deps) > l.MaxBatch {
		ch.err = tooLarge(ch.cmd, "Deps", len(c.Deps), l.MaxBatch)
	}
	ch.names("Deps", c.Deps)
	if ch.err == nil && slices.Contains(c.Deps, c.Phase) {
		ch.fail("Deps", fmt.Sprintf("names the task itself (%q)", c.Phase))
	}
	ch.config(&c.Config)
	return ch.err
}

func (c *ReviewCommand) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.reviewTarget(c.ReviewTarget)
	if _, ok := reviewOpEvents[c.Op]; !ok && ch.err == nil {
		ch.fail("Op", fmt.Sprintf("%q is not a task command (one of %v)", c.Op, ReviewOps()))
	}
	ch.name("By", c.By, false)
	switch c.Op {
	case ReviewOpApprove, ReviewOpReject, ReviewOpResubmit, ReviewOpFix, ReviewOpTerminate:
		if ch.err == nil && c.By == "" {
			ch.fail("By", fmt.Sprintf("is required for %s: a human decision records who made it", c.Op))
		}
	case ReviewOpConfig:
		if ch.err == nil && c.Config == nil {
			ch.fail("Config", "is required for config")
		}
	}
	if c.Op != ReviewOpConfig && c.Config != nil && ch.err == nil {
		ch.fail("Config", fmt.Sprintf("is only for config, not %s", c.Op))
	}
	if c.Expect >= numReviewStates && ch.err == nil {
		ch.fail("Expect", fmt.Sprintf("%d is not a task state", c.Expect))
	}
	ch.text("Reason", c.Reason)
	ch.config(c.Config)
	return ch.err
}

func (c *ClaimReviews) Check(l *Limits) error {
	ch := newChecker(c, l)
	if c.Role > ReviewRoleReview {
		ch.fail("Role", fmt.Sprintf("%d is not a task role (0 work, 1 review)", c.Role))
	}
	ch.name("Queue", c.Queue, true)
	ch.name("Owner", c.Owner, true)
	ch.batch("Max", c.Max)
	ch.lease("LeaseMS", c.LeaseMS)
	if len(c.Types) > l.MaxBatch && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "Types", len(c.Types), l.MaxBatch)
	}
	ch.names("Types", c.Types)
	return ch.err
}

// reviewRef checks a review lease. The errors name the fields as they were
// named before the Go types were renamed from Task to Review ("Task",
// "Review.Summary"), as the JSON keys still are: the texts are on the wire.
func (c *checker) reviewRef(r ReviewLeaseRef) {
	if c.err == nil && r.Review == 0 {
		c.fail("Task", "is required")
	}
	if c.err == nil && r.Attempt == 0 {
		c.fail("Attempt", "is required for a fenced write")
	}
	c.leaseToken("Token", r.Token)
}

func (c *ReviewReport) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.reviewRef(c.ReviewLeaseRef)
	if ch.err == nil && (c.Op < ReviewReportOutput || c.Op > ReviewReportVerdict) {
		ch.fail("Op", fmt.Sprintf("%d is not a report (1 output, 2 pause, 3 unpause, 4 verdict)", c.Op))
	}
	ch.payload("Output", c.Output)
	ch.text("Summary", c.Summary)
	if ch.err == nil && (c.Cost < 0 || math.IsNaN(c.Cost) || math.IsInf(c.Cost, 0)) {
		ch.fail("Cost", fmt.Sprintf("is %v: a cost is a finite number, 0 or more", c.Cost))
	}
	switch {
	case ch.err != nil:
	case c.Op == ReviewReportVerdict && (c.Assessment == nil || (c.Assessment.Verdict != VerdictApprove && c.Assessment.Verdict != VerdictIntervene)):
		ch.fail("Review", "a verdict needs a review whose verdict is 1 (approve) or 2 (intervene)")
	case c.Op != ReviewReportVerdict && c.Assessment != nil:
		ch.fail("Review", "is only for a verdict")
	case c.Op != ReviewReportOutput && (c.Output != nil || c.Cost != 0):
		ch.fail("Output", "output and cost are only for an output report")
	}
	if c.Assessment != nil && ch.err == nil {
		ch.text("Review.Summary", c.Assessment.Summary)
		if len(c.Assessment.Recommendations) > l.MaxBatch {
			ch.err = tooLarge(ch.cmd, "Review.Recommendations", len(c.Assessment.Recommendations), l.MaxBatch)
		}
		for i, r := range c.Assessment.Recommendations {
			ch.text(fmt.Sprintf("Review.Recommendations[%d]", i), r)
		}
	}
	return ch.err
}

func (c *ReviewHeartbeat) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Leases", len(c.Leases))
	for _, r := range c.Leases {
		ch.reviewRef(r)
	}
	ch.lease("LeaseMS", c.LeaseMS)
	return ch.err
}

func (c *ReclaimReviews) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Max", c.Max)
	return ch.err
}

// ReviewResult answers CreateReview, ReviewCommand and ReviewReport: the task, its
// state after the command and the seq of the last event it appended.
type ReviewResult struct {
	Review ReviewID    `json:"task_id" msgpack:"t"`
	State  ReviewState `json:"status" msgpack:"st"`
	Seq    uint64      `json:"seq" msgpack:"sq"`
	// Delivery, on a sharded cluster, names the outbox entry that carries
	// a workflow step's task to the shard of its review job: the machine
	// of the run's shard answers so, and the engine waits for the entry's
	// acknowledgement and answers the task's id instead. A caller never
	// sees it set.
	Delivery *DeliveryRef `json:"delivery,omitempty" msgpack:"dl,omitempty"`
}

// ClaimedReview is one task handed out by ClaimReviews, with what its worker
// or reviewer needs.
type ClaimedReview struct {
	Review        ReviewID   `json:"task_id" msgpack:"t"`
	Job           string     `json:"job_id" msgpack:"jb"`
	Phase         string     `json:"phase" msgpack:"ph"`
	Type          string     `json:"type" msgpack:"ty"`
	Role          ReviewRole `json:"role" msgpack:"ro"`
	Attempt       uint64     `json:"attempt" msgpack:"a"`
	LeaseExpiryMS int64      `json:"lease_expiry_ms" msgpack:"le"`
	// LeaseToken proves the lease: the reports and heartbeats of this
	// attempt carry it (ReviewLeaseRef.Token). "" for a lease issued without
	// a token.
	LeaseToken string       `json:"lease_token,omitempty" msgpack:"tk,omitempty"`
	Config     ReviewConfig `json:"config" msgpack:"cf"`
	// Output is the latest output (what a reviewer judges, or what a
	// rework starts from); Feedback and Assessment the latest rejection's or
	// review's words, for a rework.
	Output     []byte     `json:"output,omitempty" msgpack:"ou,omitempty"`
	Feedback   string     `json:"feedback,omitempty" msgpack:"fb,omitempty"`
	Assessment Assessment `json:"review" msgpack:"rv"`
	Runs       uint32     `json:"runs,omitempty" msgpack:"rn,omitempty"`
}

// Lease is the ReviewLeaseRef of the claimed attempt, token included.
func (c ClaimedReview) Lease() ReviewLeaseRef {
	return ReviewLeaseRef{Review: c.Review, Attempt: c.Attempt, Token: c.LeaseToken}
}

// ClaimReviewsResult answers ClaimReviews; Reviews is empty when none was claimable.
type ClaimReviewsResult struct {
	Reviews []ClaimedReview `json:"tasks" msgpack:"ts,omitempty"`
}

// ReviewHeartbeatResult answers ReviewHeartbeat.
type ReviewHeartbeatResult struct {
	LeaseExpiryMS int64            `json:"lease_expiry_ms" msgpack:"le"`
	Refused       []ReviewLeaseRef `json:"refused,omitempty" msgpack:"rf,omitempty"`
}

// ReviewSweepResult answers ReclaimReviews: the tasks recovered, and whether
// more were due than Max allowed.
type ReviewSweepResult struct {
	Reviews []ReviewID `json:"tasks,omitempty" msgpack:"ts,omitempty"`
	More    bool       `json:"more,omitempty" msgpack:"mo,omitempty"`
}

func (*ReviewResult) isResult()          {}
func (*ClaimReviewsResult) isResult()    {}
func (*ReviewHeartbeatResult) isResult() {}
func (*ReviewSweepResult) isResult()     {}
