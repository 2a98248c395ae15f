package engine

import "slices"

// ReviewID identifies one review task; ids are assigned by Apply from a
// counter of their own, in creation order.
type ReviewID uint64

// ReviewConfig is what a DRAFT task may still have changed (config), and what
// the work reads: the seed's objective, details, acceptance criteria and
// inputs.
type ReviewConfig struct {
	Objective  string   `json:"objective,omitempty" msgpack:"ob,omitempty"`
	Details    string   `json:"details,omitempty" msgpack:"de,omitempty"`
	Acceptance []string `json:"acceptance_criteria,omitempty" msgpack:"ac,omitempty"`
	Input      []byte   `json:"input,omitempty" msgpack:"in,omitempty"`
}

// merge returns c with every field set in d replacing it.
func (c ReviewConfig) merge(d ReviewConfig) ReviewConfig {
	if d.Objective != "" {
		c.Objective = d.Objective
	}
	if d.Details != "" {
		c.Details = d.Details
	}
	if d.Acceptance != nil {
		c.Acceptance = slices.Clone(d.Acceptance)
	}
	if d.Input != nil {
		c.Input = slices.Clone(d.Input)
	}
	return c
}

// Verdict is the reviewer's judgement of a task's output.
type Verdict uint8

// Verdicts. Stored; never reuse a number.
const (
	// VerdictApprove sends the task to APPROVAL_REQUIRED (or straight to
	// SUCCESS when the task approves automatically).
	VerdictApprove Verdict = 1
	// VerdictIntervene sends it to INTERVENTION_REQUIRED: a person must
	// resubmit, fix or terminate it.
	VerdictIntervene Verdict = 2
)

func (v Verdict) String() string {
	switch v {
	case VerdictApprove:
		return "approve"
	case VerdictIntervene:
		return "intervene"
	}
	return "none"
}

// Assessment is what a reviewer recorded: the verdict, its recommendations and
// a summary (the manifest's history shows the summary).
type Assessment struct {
	Verdict         Verdict  `json:"verdict" msgpack:"v"`
	Recommendations []string `json:"recommendations,omitempty" msgpack:"rc,omitempty"`
	Summary         string   `json:"summary,omitempty" msgpack:"sm,omitempty"`
}

// Review is the stored record of a review task: its identity, its configuration and
// the projection of its history (state, lease, metrics, the latest output
// and review). The history is the truth; ProjectReview rebuilds this record
// from it, and Verify checks that they agree.
type Review struct {
	ID ReviewID `json:"task_id" msgpack:"id"`
	// Job groups the tasks of one DAG (the manifest's job_id); Phase names
	// the task within it, uniquely.
	Job            string `json:"job_id" msgpack:"jb"`
	Phase          string `json:"phase" msgpack:"ph"`
	Description    string `json:"description,omitempty" msgpack:"ds,omitempty"`
	JobDescription string `json:"job_description,omitempty" msgpack:"jd,omitempty"`
	// Queue is where workers claim the work; ReviewQueue where reviewers
	// claim the review (empty: Queue).
	Queue       string `json:"queue" msgpack:"qu"`
	ReviewQueue string `json:"review_queue,omitempty" msgpack:"rq,omitempty"`
	// Type names the work function; ReviewType the reviewer (empty: any).
	Type       string `json:"type" msgpack:"ty"`
	ReviewType string `json:"review_type,omitempty" msgpack:"rt,omitempty"`
	// Deps are the tasks (of the same job) that must reach SUCCESS before
	// this one may run.
	Deps []ReviewID `json:"deps,omitempty" msgpack:"dp,omitempty"`
	// AutoReview starts the review (step) as soon as the output is
	// recorded; AutoApprove approves a review whose verdict is approve.
	AutoReview  bool `json:"auto_review,omitempty" msgpack:"ar,omitempty"`
	AutoApprove bool `json:"auto_approve,omitempty" msgpack:"aa,omitempty"`
	// ParentJob and ParentStep, when set, make the task's end the effect of
	// a workflow's step, as a child workflow's end is.
	ParentJob  JobID  `json:"parent_job_id,omitempty" msgpack:"pj,omitempty"`
	ParentStep string `json:"parent_step,omitempty" msgpack:"ps,omitempty"`

	Config ReviewConfig `json:"config" msgpack:"cf"`
	State  ReviewState  `json:"status" msgpack:"st"`
	// Attempt counts the leases handed out (to workers and reviewers); the
	// current lease's writes must carry it.
	Attempt       uint64 `json:"attempt,omitempty" msgpack:"at,omitempty"`
	LeaseOwner    string `json:"lease_owner,omitempty" msgpack:"lo,omitempty"`
	LeaseExpiryMS int64  `json:"lease_expiry_ms,omitempty" msgpack:"le,omitempty"`
	// LeaseDigest is the SHA-256 of the held lease's token (see
	// Job.LeaseDigest), set by the claim and cleared with the lease. Empty
	// for a lease issued without a token.
	LeaseDigest []byte `json:"-" msgpack:"ltd,omitempty"`
	// ReadyAtMS orders a claimable task (PENDING with its deps met, or
	// REVIEWING with no reviewer) in its queue's index; 0 otherwise.
	ReadyAtMS int64  `json:"ready_at_ms,omitempty" msgpack:"ra,omitempty"`
	LastSeq   uint64 `json:"last_seq" msgpack:"ls"`
	// Output is the latest output the work recorded; Feedback the latest
	// rejection's or intervention's words, for the next run.
	Output     []byte     `json:"output,omitempty" msgpack:"ou,omitempty"`
	Feedback   string     `json:"feedback,omitempty" msgpack:"fb,omitempty"`
	Assessment Assessment `json:"review" msgpack:"rv"`
	// Summary is the latest summary of the task (a review's, an output's,
	// or a person's reason), as the manifest shows it.
	Summary string `json:"summary,omitempty" msgpack:"su,omitempty"`
	// CostTotal sums the costs the work reported; ActiveMS the time spent
	// RUNNING, PAUSED and REVIEWING, measured from event times.
	CostTotal float64 `json:"cost_total" msgpack:"co"`
	ActiveMS  int64   `json:"active_ms" msgpack:"am"`
	// ActiveSinceMS is when the current active span began (0: not active).
	ActiveSinceMS int64 `json:"active_since_ms,omitempty" msgpack:"as,omitempty"`
	// Runs counts the work's leases; Reviews the reviewers'.
	Runs    uint32 `json:"runs,omitempty" msgpack:"rn,omitempty"`
	Reviews uint32 `json:"reviews,omitempty" msgpack:"rw,omitempty"`
	// DecidedBy is who made the latest human decision.
	DecidedBy string `json:"decided_by,omitempty" msgpack:"by,omitempty"`
}

// ReviewEvent is one entry of a task's history. Seqs start at 1 without gaps.
type ReviewEvent struct {
	Seq  uint64          `json:"seq" msgpack:"q"`
	Type ReviewEventType `json:"type" msgpack:"t"`
	AtMS int64           `json:"at_ms" msgpack:"at"`
	// From and To are the states the event moved the task between.
	From ReviewState `json:"from" msgpack:"f"`
	To   ReviewState `json:"to" msgpack:"o"`
	// By names who decided (a human command, or "auto" for an automatic
	// step or approval); Owner the worker or reviewer of a lease.
	By            string `json:"by,omitempty" msgpack:"by,omitempty"`
	Attempt       uint64 `json:"attempt,omitempty" msgpack:"a,omitempty"`
	Owner         string `json:"owner,omitempty" msgpack:"ow,omitempty"`
	LeaseExpiryMS int64  `json:"lease_expiry_ms,omitempty" msgpack:"le,omitempty"`
	// TokenIssued, on a lease event, says the claim gave the lease a token.
	TokenIssued bool `json:"token_issued,omitempty" msgpack:"ti,omitempty"`
	// Reason is a person's words: a reason, or the feedback of a reject,
	// resubmit or fix.
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// Output, Cost and Summary come with task_output; Assessment with
	// task_reviewed; Config with task_created, task_drafted and
	// task_configured.
	Output     []byte        `json:"output,omitempty" msgpack:"ou,omitempty"`
	Cost       float64       `json:"cost,omitempty" msgpack:"co,omitempty"`
	Summary    string        `json:"summary,omitempty" msgpack:"su,omitempty"`
	Assessment *Assessment   `json:"review,omitempty" msgpack:"rv,omitempty"`
	Config     *ReviewConfig `json:"config,omitempty" msgpack:"cf,omitempty"`
}

// Clone returns a copy of t that Apply may change without changing t.
func (t *Review) Clone() *Review {
	c := *t
	c.Deps = slices.Clone(t.Deps)
	c.Config.Acceptance = slices.Clone(t.Config.Acceptance)
	c.Assessment.Recommendations = slices.Clone(t.Assessment.Recommendations)
	return &c
}
