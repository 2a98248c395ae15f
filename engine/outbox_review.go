package engine

// A review task of a workflow step whose review job lives on another shard
// than the step's run (docs/sharding.md, "Cross-shard work"). The task's
// CreateReview routes to the run's shard (ShardOfCommand), which checks
// the run's lease and writes the create, without the lease, into its
// outbox for the review job's shard, with a RemoteReview link on the
// step. The review job's shard creates the task naming the remote run as
// its parent; the acknowledgement fills the link with the task's id. The
// task's end comes back as ReviewClosed, recorded as the step's effect.

// ReviewClosed records, on the parent run's shard, the end of a review task
// of one of its steps that lives on another shard: its output at SUCCESS,
// a failure at CANCELED (Failed), as the step's effect, waking the run as a
// task's end does within a shard. It is applied only as a delivered command
// (Deliver).
type ReviewClosed struct {
	Header
	Parent JobID    `json:"parent_id" msgpack:"p"`
	Step   string   `json:"step" msgpack:"st"`
	Review ReviewID `json:"task_id" msgpack:"t"`
	// Payload is the task's output, or the failure (Failed) its end
	// records.
	Payload []byte `json:"payload,omitempty" msgpack:"pl,omitempty"`
	Failed  bool   `json:"failed,omitempty" msgpack:"f,omitempty"`
}

// Kind implements Command.
func (*ReviewClosed) Kind() CommandKind { return KindReviewClosed }

func (c *ReviewClosed) Check(l *Limits) error {
	ch := newChecker(c, l)
	if c.Parent == 0 || c.Review == 0 {
		ch.fail("Parent", "and Review are required")
	}
	ch.name("Step", c.Step, true)
	ch.payload("Payload", c.Payload)
	return ch.err
}

// RemoteReview links a run's step to the review task it created on another
// shard (Delivery.Target, where review job Job routes): written with the
// entry that carries the create, completed by its acknowledgement (Review,
// or the target's refusal in Error and Outcome), and marked Closed when
// the task's end reaches the step (which may come before the
// acknowledgement). It stays with the run, so that a second create of the
// step answers from it.
type RemoteReview struct {
	Parent   JobID       `json:"parent_id" msgpack:"p"`
	Step     string      `json:"step" msgpack:"st"`
	Job      string      `json:"job_id" msgpack:"jb"`
	Phase    string      `json:"phase" msgpack:"ph"`
	Delivery DeliveryRef `json:"delivery" msgpack:"d"`
	Review   ReviewID    `json:"task_id,omitempty" msgpack:"t,omitempty"`
	Error    string      `json:"error,omitempty" msgpack:"e,omitempty"`
	Outcome  string      `json:"outcome,omitempty" msgpack:"o,omitempty"`
	// Closed says that the task's end reached the step.
	Closed    bool  `json:"closed,omitempty" msgpack:"cl,omitempty"`
	CreatedMS int64 `json:"created_ms" msgpack:"at"`
}

// Pending reports whether the link waits for its entry's acknowledgement.
func (r *RemoteReview) Pending() bool { return r.Review == 0 && r.Error == "" }
