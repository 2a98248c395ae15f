package engine

import "fmt"

// This file is the contract of cross-shard delivery (docs/sharding.md,
// "Cross-shard work"): what one shard of a sharded cluster asks of another
// is written in the asking shard's transaction as an outbox entry, and the
// asking shard's leader delivers it (Deliver, applied on the target shard)
// and then acknowledges it (AckDelivery, applied on the source shard). The
// target keeps a delivered record for each entry, keyed by the source shard
// and the entry's sequence, so a repeated delivery answers the first
// outcome and applies nothing, however late it comes.

// DeliveryRef names one outbox entry: the shard that wrote it, the shard it
// goes to, and its sequence among the entries from Source to Target (from
// 1, in the order written).
type DeliveryRef struct {
	Source int    `json:"source" msgpack:"s"`
	Target int    `json:"target" msgpack:"t"`
	Seq    uint64 `json:"seq" msgpack:"q"`
}

func (r DeliveryRef) String() string {
	return fmt.Sprintf("delivery %d→%d #%d", r.Source, r.Target, r.Seq)
}

// Deliver applies, on shard Target, the command an outbox entry of shard
// Source carries. It is idempotent by (Source, Seq): the target records the
// first outcome, and a repeated Deliver answers it without applying the
// command again. Only a cluster's nodes (and admins) send it.
type Deliver struct {
	Header
	DeliveryRef
	// Command is the log form of the command to apply (the machine's
	// EncodeCommand): a CreateJob of a child, a ChildClosed, a CloseChild,
	// or a Signal or RequestCancel a run sent on behalf of a step (without
	// its Sender).
	Command []byte `json:"command" msgpack:"c"`
	// AckedBelow says that every entry of Source for Target with a
	// sequence below it is acknowledged, so none will be delivered again
	// by a leader that knows it: the target drops their delivered records
	// and answers a late repeat of one (from a deposed leader) as a
	// duplicate without applying it. 0: nothing said.
	AckedBelow uint64 `json:"acked_below,omitempty" msgpack:"ab,omitempty"`
	// Refusal, when set, is the target's refusal of Command met by an
	// earlier Deliver of the entry, which wrote nothing: this one records
	// it as the entry's outcome, applying nothing, unless an outcome is
	// recorded already (then it answers that). So a refusal is as final as
	// a success: a deposed leader's late repeat cannot apply the command
	// after its refusal was acknowledged.
	Refusal *DeliverResult `json:"refusal,omitempty" msgpack:"rf,omitempty"`
}

// DeliverResult is the outcome of a delivered command on its target: the
// stored form of its result (the machine's EncodeResult), or the refusal's
// text and outcome name when the target refused it. Duplicate says that an
// earlier Deliver of the same entry applied it and this one applied
// nothing.
type DeliverResult struct {
	Kind      CommandKind `json:"kind" msgpack:"k"`
	Result    []byte      `json:"result,omitempty" msgpack:"r,omitempty"`
	Error     string      `json:"error,omitempty" msgpack:"e,omitempty"`
	Outcome   string      `json:"outcome,omitempty" msgpack:"o,omitempty"`
	Duplicate bool        `json:"duplicate,omitempty" msgpack:"d,omitempty"`
}

// AckDelivery tells shard Source that its entry reached Target with the
// answer Answer: it deletes the entry and writes what the answer means for
// the source (a child's job id on its parent's link) in one transaction. An
// entry acknowledged already is left alone: the first acknowledgement wins.
type AckDelivery struct {
	Header
	DeliveryRef
	Answer DeliverResult `json:"answer" msgpack:"a"`
}

// AckResult answers AckDelivery: whether this acknowledgement removed the
// entry (false: an earlier one had).
type AckResult struct {
	Acked bool `json:"acked" msgpack:"ok"`
}

// ChildClosed records, on the parent's shard, the end of a child that runs
// on another shard: the effect of the parent's step, and the parent woken,
// as a child's end does within a shard. It is applied only as a delivered
// command (Deliver).
type ChildClosed struct {
	Header
	Parent JobID  `json:"parent_id" msgpack:"p"`
	Step   string `json:"step" msgpack:"st"`
	Child  JobID  `json:"child_id" msgpack:"c"`
	// Payload is the child's result (or failure), as its end event's.
	Payload []byte `json:"payload,omitempty" msgpack:"pl,omitempty"`
	Failed  bool   `json:"failed,omitempty" msgpack:"f,omitempty"`
}

// CloseChild applies a parent-close policy to a child that runs on
// another shard than its parent: the child's own policy, after its parent
// was ended by the engine; or, with Terminate, a terminate the parent's
// worker asked for (Terminate.ByParent) as its parent ended, for Reason.
// ParentWorkflow is the parent's workflow id (named in the child's
// history). It is applied only as a delivered command (Deliver).
type CloseChild struct {
	Header
	Child          JobID  `json:"child_id" msgpack:"c"`
	Parent         JobID  `json:"parent_id" msgpack:"p"`
	ParentWorkflow string `json:"parent_workflow_id" msgpack:"pw"`
	Terminate      bool   `json:"terminate,omitempty" msgpack:"t,omitempty"`
	Reason         string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// ScheduleRunClosed records, on a schedule's shard, the end of a run the
// schedule started on another shard (the last run of its chain: a run
// continued as new, retried or cron's next is not the end): the schedule
// forgets it, pauses when it failed and its policy says so, and is due at
// once, so that a start its overlap policy held back goes. It is applied
// only as a delivered command (Deliver).
type ScheduleRunClosed struct {
	Header
	Schedule   string `json:"schedule_id" msgpack:"sc"`
	WorkflowID string `json:"workflow_id" msgpack:"wf"`
	Job        JobID  `json:"job_id" msgpack:"j"`
	Status     Status `json:"status" msgpack:"s"`
}

// Kind implementations.
func (*Deliver) Kind() CommandKind     { return KindDeliver }
func (*AckDelivery) Kind() CommandKind { return KindAckDelivery }
func (*ChildClosed) Kind() CommandKind { return KindChildClosed }
func (*CloseChild) Kind() CommandKind  { return KindCloseChild }

func (*ScheduleRunClosed) Kind() CommandKind { return KindScheduleRunClosed }

// maxRefusalBytes bounds the text of a refusal a delivery records.
const maxRefusalBytes = 4 << 10

// maxDeliveredCommandBytes is how much larger than a payload a delivered
// command may be: the command's other fields around its payload.
const maxDeliveredCommandBytes = 64 << 10

func (ch *checker) delivery(r DeliveryRef) {
	switch {
	case r.Source < 0 || r.Source >= MaxShards:
		ch.fail("Source", fmt.Sprintf("is %d, not a shard in [0, %d)", r.Source, MaxShards))
	case r.Target < 0 || r.Target >= MaxShards:
		ch.fail("Target", fmt.Sprintf("is %d, not a shard in [0, %d)", r.Target, MaxShards))
	case r.Source == r.Target:
		ch.fail("Target", fmt.Sprintf("is the source shard %d: an entry goes to another shard", r.Source))
	case r.Seq == 0:
		ch.fail("Seq", "is required (entries count from 1)")
	}
}

func (c *Deliver) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.delivery(c.DeliveryRef)
	switch {
	case ch.err != nil:
	case c.AckedBelow > c.Seq:
		ch.fail("AckedBelow", fmt.Sprintf("is %d, after the entry's own sequence %d, which is not acknowledged", c.AckedBelow, c.Seq))
	case len(c.Command) == 0:
		ch.fail("Command", "is required")
	case len(c.Command) > l.MaxPayloadBytes+maxDeliveredCommandBytes:
		ch.err = tooLarge(ch.cmd, "Command", len(c.Command), l.MaxPayloadBytes+maxDeliveredCommandBytes)
	case c.Refusal != nil && (c.Refusal.Error == "" || len(c.Refusal.Result) > 0):
		ch.fail("Refusal", "needs the refusal's error, and no result")
	case c.Refusal != nil && len(c.Refusal.Error) > maxRefusalBytes:
		ch.err = tooLarge(ch.cmd, "Refusal.Error", len(c.Refusal.Error), maxRefusalBytes)
	}
	if c.Refusal != nil {
		ch.name("Refusal.Outcome", c.Refusal.Outcome, false)
	}
	return ch.err
}

func (c *AckDelivery) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.delivery(c.DeliveryRef)
	if ch.err == nil && len(c.Answer.Result) > l.MaxPayloadBytes+maxDeliveredCommandBytes {
		ch.err = tooLarge(ch.cmd, "Answer.Result", len(c.Answer.Result), l.MaxPayloadBytes+maxDeliveredCommandBytes)
	}
	ch.name("Answer.Outcome", c.Answer.Outcome, false)
	return ch.err
}

func (c *ChildClosed) Check(l *Limits) error {
	ch := newChecker(c, l)
	if c.Parent == 0 || c.Child == 0 {
		ch.fail("Parent", "and Child are required")
	}
	ch.name("Step", c.Step, true)
	ch.payload("Payload", c.Payload)
	return ch.err
}

func (c *ScheduleRunClosed) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("Schedule", c.Schedule, true)
	ch.name("WorkflowID", c.WorkflowID, true)
	if ch.err == nil && (c.Job == 0 || !c.Status.Terminal()) {
		ch.fail("Job", fmt.Sprintf("and Status are required, a closed run (job %d, %s)", c.Job, c.Status))
	}
	return ch.err
}

func (c *CloseChild) Check(l *Limits) error {
	ch := newChecker(c, l)
	if c.Parent == 0 || c.Child == 0 {
		ch.fail("Parent", "and Child are required")
	}
	ch.name("ParentWorkflow", c.ParentWorkflow, false)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

// OutboxEntry is a pending outbox entry of the source shard: a command for
// shard Target, written in the transaction of what caused it, deleted by
// its acknowledgement. Parent and Step name the parent's step whose
// remote child link the acknowledgement fills (a child's create), else
// are empty.
type OutboxEntry struct {
	DeliveryRef
	// Kind is the kind of Command, the command the target applies.
	Kind    CommandKind `json:"kind" msgpack:"k"`
	Command []byte      `json:"command" msgpack:"c"`
	Parent  JobID       `json:"parent_id,omitempty" msgpack:"p,omitempty"`
	Step    string      `json:"step,omitempty" msgpack:"st,omitempty"`
	// Schedule names the schedule whose run the entry creates on another
	// shard: its acknowledgement gives the schedule the run's job id.
	Schedule  string `json:"schedule_id,omitempty" msgpack:"sc,omitempty"`
	CreatedMS int64  `json:"created_ms" msgpack:"at"`
}

// DeliveredRecord is kept by a target shard for each entry it applied: the
// first outcome, which a repeated delivery of the entry answers.
type DeliveredRecord struct {
	DeliveryRef
	Answer DeliverResult `json:"answer" msgpack:"a"`
	AtMS   int64         `json:"at_ms" msgpack:"at"`
}

// RemoteChild links a parent's step to a child that runs on another shard
// (Delivery.Target): written with the entry that creates the child,
// completed by its acknowledgement (Child, or the target's refusal in
// Error and Outcome), and marked Closed when the child's end reaches the
// parent (which may come before the acknowledgement: the two travel
// independently). It stays with its parent, so that a retried create of
// the step always finds its child.
type RemoteChild struct {
	Parent     JobID       `json:"parent_id" msgpack:"p"`
	Step       string      `json:"step" msgpack:"st"`
	WorkflowID string      `json:"workflow_id" msgpack:"wf"`
	Delivery   DeliveryRef `json:"delivery" msgpack:"d"`
	Child      JobID       `json:"child_id,omitempty" msgpack:"c,omitempty"`
	Error      string      `json:"error,omitempty" msgpack:"e,omitempty"`
	Outcome    string      `json:"outcome,omitempty" msgpack:"o,omitempty"`
	// ClosePolicy is the child's parent-close policy, for the parent's
	// end.
	ClosePolicy ParentClosePolicy `json:"parent_close_policy,omitempty" msgpack:"pc,omitempty"`
	// Closed says that the child's end reached the parent.
	Closed    bool  `json:"closed,omitempty" msgpack:"cl,omitempty"`
	CreatedMS int64 `json:"created_ms" msgpack:"at"`
}

// Pending reports whether the link waits for its entry's acknowledgement.
func (c *RemoteChild) Pending() bool { return c.Child == 0 && c.Error == "" }

// DeliveryBacklog is what one shard's outbox holds for one target shard, as
// a replica of the source shard sees it: how many entries are pending, the
// first of them, and when it was written.
type DeliveryBacklog struct {
	Source    int    `json:"source" msgpack:"source"`
	Target    int    `json:"target" msgpack:"target"`
	Pending   uint64 `json:"pending" msgpack:"pending"`
	FirstSeq  uint64 `json:"first_seq" msgpack:"first_seq"`
	OldestMS  int64  `json:"oldest_created_ms" msgpack:"oldest_created_ms"`
	LastSeq   uint64 `json:"last_seq" msgpack:"last_seq"`
	Stale     bool   `json:"stale,omitempty" msgpack:"stale,omitempty"`
	ReplicaOf string `json:"replica_of,omitempty" msgpack:"replica_of,omitempty"`
}
