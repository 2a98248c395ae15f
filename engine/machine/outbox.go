package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The outbox (docs/sharding.md, "Cross-shard work"). What a shard of a
// sharded cluster must make happen on another shard is written, in the
// transaction of what caused it, as an outbox entry for that shard; the
// source's leader delivers it (Deliver, on the target) and acknowledges it
// (AckDelivery, here). The target keeps a delivered record per entry, so a
// second delivery of an entry answers the first outcome and applies
// nothing, whenever it comes: the effect lands once. Five things travel so
// today: a child's create (from its parent's shard), a child's end (to its
// parent's shard), a parent-close policy (to a child's shard), and a
// signal or cancel request a run sends on behalf of a step (external.go).

// The versions of the outbox's records.
const (
	outboxEntryVersion = 1
	deliveredVersion   = 1
	remoteChildVersion = 1
)

// EncodeOutboxEntry returns the stored form of an outbox entry.
func EncodeOutboxEntry(e *engine.OutboxEntry) []byte {
	return storage.MustEncode(storage.KindOutboxEntry, outboxEntryVersion, e)
}

// DecodeOutboxEntry decodes a stored outbox entry (bounded: storage.Decode
// walks the bytes before it decodes them).
func DecodeOutboxEntry(b []byte) (_ *engine.OutboxEntry, err error) {
	defer markStorage(&err)
	e := new(engine.OutboxEntry)
	if _, err := storage.Decode(b, storage.KindOutboxEntry, outboxEntryVersion, e); err != nil {
		return nil, err
	}
	return e, nil
}

// EncodeDelivered returns the stored form of a delivered record.
func EncodeDelivered(d *engine.DeliveredRecord) []byte {
	return storage.MustEncode(storage.KindDelivered, deliveredVersion, d)
}

// DecodeDelivered decodes a stored delivered record.
func DecodeDelivered(b []byte) (_ *engine.DeliveredRecord, err error) {
	defer markStorage(&err)
	d := new(engine.DeliveredRecord)
	if _, err := storage.Decode(b, storage.KindDelivered, deliveredVersion, d); err != nil {
		return nil, err
	}
	return d, nil
}

// EncodeRemoteChild returns the stored form of a remote child link.
func EncodeRemoteChild(c *engine.RemoteChild) []byte {
	return storage.MustEncode(storage.KindRemoteChild, remoteChildVersion, c)
}

// DecodeRemoteChild decodes a stored remote child link.
func DecodeRemoteChild(b []byte) (_ *engine.RemoteChild, err error) {
	defer markStorage(&err)
	c := new(engine.RemoteChild)
	if _, err := storage.Decode(b, storage.KindRemoteChild, remoteChildVersion, c); err != nil {
		return nil, err
	}
	return c, nil
}

// ReadRemoteChild returns the link of step of job parent to a child on
// another shard, or nil.
func ReadRemoteChild(r interface{ Get([]byte) ([]byte, error) }, parent engine.JobID, step string) (*engine.RemoteChild, error) {
	key := storage.RemoteChildKey(uint64(parent), step)
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := new(engine.RemoteChild)
	if _, err := storage.DecodeAt(key, b, storage.KindRemoteChild, remoteChildVersion, c); err != nil {
		return nil, MarkStorageError(err)
	}
	return c, nil
}

// PendingEntries returns up to max pending outbox entries of the store, for
// each target in sequence order, targets in order (0: no bound): what the
// deliverer of the store's shard has to deliver.
func PendingEntries(r *storage.Reader, max int) ([]*engine.OutboxEntry, error) {
	var out []*engine.OutboxEntry
	err := r.Scan(storage.OutboxEntryPrefix, nil, true, func(k, b []byte) (bool, error) {
		e := new(engine.OutboxEntry)
		if _, err := storage.DecodeAt(k, b, storage.KindOutboxEntry, outboxEntryVersion, e); err != nil {
			return false, MarkStorageError(err)
		}
		out = append(out, e)
		return max <= 0 || len(out) < max, nil
	})
	return out, err
}

// remoteJob reports whether job id lives on another shard of a sharded
// cluster.
func (a *applier) remoteJob(id engine.JobID) bool {
	return a.shard.Sharded() && id != 0 && engine.ShardOfJob(id) != a.shard.Index
}

// remoteWorkflow reports whether workflow id wf routes to another shard.
func (a *applier) remoteWorkflow(wf string) bool {
	return a.shard.Sharded() && wf != "" && engine.ShardOfKey(wf, a.shard.Count) != a.shard.Index
}

// send writes an outbox entry carrying cmd for shard target, the next in
// order from this shard to it; parent and step name the remote child link
// its acknowledgement fills (a child's create), else are empty.
func (a *applier) send(target int, cmd engine.Command, parent engine.JobID, step string) (engine.DeliveryRef, error) {
	return a.sendEntry(target, cmd, engine.OutboxEntry{Parent: parent, Step: step})
}

// sendEntry is send with the entry's links (Parent and Step, or Schedule)
// taken from links.
func (a *applier) sendEntry(target int, cmd engine.Command, links engine.OutboxEntry) (engine.DeliveryRef, error) {
	if target < 0 || target >= a.shard.Count || target == a.shard.Index {
		return engine.DeliveryRef{}, fmt.Errorf("%w: an outbox entry of shard %d for shard %d of %d", engine.ErrInvariant, a.shard.Index, target, a.shard.Count)
	}
	h := cmd.Head()
	h.NowMS, h.Nonce = a.now, nil
	if err := cmd.Check(a.lim); err != nil {
		return engine.DeliveryRef{}, err
	}
	body, err := EncodeCommand(cmd)
	if err != nil {
		return engine.DeliveryRef{}, err
	}
	last, err := a.u64(storage.OutboxNextKey(target))
	if err != nil {
		return engine.DeliveryRef{}, err
	}
	ref := engine.DeliveryRef{Source: a.shard.Index, Target: target, Seq: last + 1}
	a.tx.Set(storage.OutboxNextKey(target), storage.U64(ref.Seq))
	a.tx.Set(storage.OutboxEntryKey(target, ref.Seq), EncodeOutboxEntry(&engine.OutboxEntry{
		DeliveryRef: ref, Kind: cmd.Kind(), Command: body, Parent: links.Parent, Step: links.Step, Schedule: links.Schedule, CreatedMS: a.now}))
	return ref, nil
}

// createRemoteChild starts a child whose workflow id routes to another
// shard than its parent's: after the parent's lease is checked, it writes
// the create into the outbox for the child's shard and links the parent's
// step to it. The result names the entry; the engine answers the child's
// job id once the entry is acknowledged (embedded.Engine.Create). A second
// create of the same step finds the link and answers from it.
func (a *applier) createRemoteChild(c *engine.CreateJob) (engine.Result, error) {
	if !engine.LegacyParent(&c.Header, c.ParentID, c.ParentLease) {
		if _, err := a.parentHeld(c.ParentLease, "CreateJob"); err != nil {
			return nil, err
		}
	}
	p, err := a.load(c.ParentID)
	if err != nil {
		return nil, fmt.Errorf("CreateJob.ParentID: %w", err)
	}
	if p.job.Status.Terminal() {
		return nil, fmt.Errorf("%w: parent job %d is %s", engine.ErrJobClosed, p.job.ID, p.job.Status)
	}
	if c.ParentStep == "" {
		return nil, engine.InvalidField("CreateJob", "ParentStep", "is required for a child on another shard: its end is delivered to that step")
	}
	link, err := ReadRemoteChild(a.tx, c.ParentID, c.ParentStep)
	if err != nil {
		return nil, err
	}
	if link != nil {
		return remoteChildResult(link)
	}
	inner := *c
	inner.Header = engine.Header{By: c.By}
	inner.ParentLease, inner.ParentWorkflowID = nil, p.job.WorkflowID
	target := engine.ShardOfKey(c.WorkflowID, a.shard.Count)
	ref, err := a.send(target, &inner, c.ParentID, c.ParentStep)
	if err != nil {
		return nil, err
	}
	link = &engine.RemoteChild{Parent: c.ParentID, Step: c.ParentStep, WorkflowID: c.WorkflowID, Delivery: ref,
		ClosePolicy: c.ParentClosePolicy, CreatedMS: a.now}
	a.tx.Set(storage.RemoteChildKey(uint64(c.ParentID), c.ParentStep), EncodeRemoteChild(link))
	return &engine.CreateResult{WorkflowID: c.WorkflowID, Delivery: &ref}, nil
}

// remoteChildResult is what a create of a step with a remote child link
// answers: the child's job id, the target's refusal, or the pending entry.
func remoteChildResult(link *engine.RemoteChild) (engine.Result, error) {
	switch {
	case link.Child != 0:
		return &engine.CreateResult{Job: link.Child, WorkflowID: link.WorkflowID}, nil
	case link.Error != "":
		return nil, DeliveryError(link.Outcome, link.Error)
	}
	ref := link.Delivery
	return &engine.CreateResult{WorkflowID: link.WorkflowID, Delivery: &ref}, nil
}

// DeliveryError rebuilds a target's refusal of a delivered command from
// its outcome name and text, matching the sentinel the outcome names.
func DeliveryError(outcome, text string) error {
	for _, o := range outcomeNames {
		if o.name == outcome {
			return fmt.Errorf("%w: delivered to another shard: %s", o.err, text)
		}
	}
	return fmt.Errorf("%w: delivered to another shard: %s", engine.ErrInvalidCommand, text)
}

// sendChildClosed writes the end of child j, whose parent lives on another
// shard, into the outbox for the parent's shard.
func (a *applier) sendChildClosed(j *engine.Job, payload []byte, failed bool) error {
	if j.ParentStep == "" {
		return nil
	}
	cmd := &engine.ChildClosed{Parent: j.ParentID, Step: j.ParentStep, Child: j.ID, Payload: payload, Failed: failed}
	_, err := a.send(engine.ShardOfJob(j.ParentID), cmd, 0, "")
	return err
}

// closeRemoteChildren sends parent's close policy to each of its children
// on other shards whose job id is known; a child whose create is still
// pending gets it when the create is acknowledged (ackDelivery).
func (a *applier) closeRemoteChildren(parent *engine.Job) error {
	if !a.shard.Sharded() {
		return nil
	}
	var links []*engine.RemoteChild
	err := a.tx.Scan(storage.RemoteChildJobPrefix(uint64(parent.ID)), nil, true, func(k, b []byte) (bool, error) {
		c := new(engine.RemoteChild)
		if _, err := storage.DecodeAt(k, b, storage.KindRemoteChild, remoteChildVersion, c); err != nil {
			return false, err
		}
		links = append(links, c)
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, c := range links {
		if err := a.sendCloseChild(parent, c); err != nil {
			return err
		}
	}
	return nil
}

// sendCloseChild writes parent's close policy for the remote child c into
// the outbox, when the child is known and its policy does not abandon it.
func (a *applier) sendCloseChild(parent *engine.Job, c *engine.RemoteChild) error {
	if c.Child == 0 || c.Closed || c.ClosePolicy == engine.ParentCloseAbandon {
		return nil
	}
	_, err := a.send(c.Delivery.Target, &engine.CloseChild{Child: c.Child, Parent: parent.ID, ParentWorkflow: parent.WorkflowID}, 0, "")
	return err
}

// notSharded refuses an outbox command on a store that is not a shard of a
// sharded cluster.
func (a *applier) notSharded(cmd string) error {
	if a.shard.Sharded() {
		return nil
	}
	return engine.InvalidField(cmd, "Target", "names a shard, but this store is not a shard of a sharded cluster")
}

// deliver applies, on this shard, the command an outbox entry of another
// shard carries, once: the first outcome is kept in the delivered record,
// and a repeated delivery answers it. A command the machine refuses writes
// nothing, as any refused command; its deliverer then delivers the entry
// again with the refusal (Deliver.Refusal), which records it as the
// outcome, and acknowledges what that answers.
func (a *applier) deliver(c *engine.Deliver) (engine.Result, error) {
	if err := a.notSharded("Deliver"); err != nil {
		return nil, err
	}
	switch {
	case c.Target != a.shard.Index:
		return nil, engine.InvalidField("Deliver", "Target", fmt.Sprintf("is shard %d, not this shard %d (%s)", c.Target, a.shard.Index, c.DeliveryRef))
	case c.Source >= a.shard.Count:
		return nil, engine.InvalidField("Deliver", "Source", fmt.Sprintf("is %d, not a shard of %d", c.Source, a.shard.Count))
	}
	acked, err := a.u64(storage.AckedBelowKey(c.Source))
	if err != nil {
		return nil, err
	}
	if c.Seq < acked {
		// A late repeat of an entry acknowledged long ago (from a leader
		// that was deposed meanwhile): its delivered record is gone with
		// the acknowledgement, and nothing is applied.
		inner, err := DecodeCommand(c.Command)
		if err != nil {
			return nil, fmt.Errorf("Deliver.Command: %w", err)
		}
		return &engine.DeliverResult{Kind: inner.Kind(), Duplicate: true}, nil
	}
	// The delivered records c says are no longer needed go once the entry
	// is answered (prune, on every path that answers): a refused command
	// writes nothing.
	prune := func() error { return a.pruneDelivered(c.Source, acked, c.AckedBelow) }
	key := storage.DeliveredKey(c.Source, c.Seq)
	b, err := a.tx.Get(key)
	switch {
	case err == nil:
		d := new(engine.DeliveredRecord)
		if _, err := storage.DecodeAt(key, b, storage.KindDelivered, deliveredVersion, d); err != nil {
			return nil, err
		}
		ans := d.Answer
		ans.Duplicate = true
		return &ans, prune()
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	}
	inner, err := DecodeCommand(c.Command)
	if err != nil {
		return nil, fmt.Errorf("Deliver.Command: %w", err)
	}
	if c.Refusal != nil {
		// An earlier Deliver of the entry was refused and wrote nothing:
		// the refusal becomes the entry's outcome, as final as a success.
		ans := *c.Refusal
		ans.Kind, ans.Duplicate = inner.Kind(), false
		a.tx.Set(key, EncodeDelivered(&engine.DeliveredRecord{DeliveryRef: c.DeliveryRef, Answer: ans, AtMS: a.now}))
		return &ans, prune()
	}
	h := inner.Head()
	h.NowMS, h.Nonce, h.RequestID = a.now, nil, ""
	if err := inner.Check(a.lim); err != nil {
		return nil, err
	}
	ref := c.DeliveryRef
	a.delivery = &ref
	var res engine.Result
	// The kinds a Deliver may carry, applied directly (not through
	// applyTable, which holds deliver itself).
	switch x := inner.(type) {
	case *engine.CreateJob:
		res, err = a.create(x)
	case *engine.ChildClosed:
		res, err = a.childClosed(x)
	case *engine.CloseChild:
		res, err = a.closeChildOf(x)
	case *engine.ScheduleRunClosed:
		res, err = a.scheduleRunClosedHere(x)
	case *engine.AskUnit:
		res, err = a.askUnitHere(x)
	case *engine.UnitGranted:
		res, err = a.unitGrantedHere(x)
	case *engine.ReleaseUnit:
		res, err = a.releaseUnitHere(x)
	case *engine.CreateReview, *engine.ReviewClosed:
		res, err = a.deliverReview(x)
	case *engine.Terminate:
		if x.ByParent != nil {
			err = engine.InvalidField("Deliver", "Command", "is a Terminate by a parent: its parent's shard sends a CloseChild")
			break
		}
		res, err = a.terminate(x)
	case *engine.Signal:
		if x.Sender != nil {
			err = engine.InvalidField("Deliver", "Command", "is a Signal with a sender: its sender's shard applies the sender's part")
			break
		}
		res, err = a.signal(x)
	case *engine.RequestCancel:
		if x.Sender != nil {
			err = engine.InvalidField("Deliver", "Command", "is a RequestCancel with a sender: its sender's shard applies the sender's part")
			break
		}
		res, err = a.requestCancel(x)
	default:
		err = engine.InvalidField("Deliver", "Command", fmt.Sprintf("is a %s, which is not delivered across shards", inner.Kind()))
	}
	a.delivery = nil
	if err != nil {
		return nil, err
	}
	body, err := EncodeResult(inner.Kind(), res)
	if err != nil {
		return nil, err
	}
	ans := engine.DeliverResult{Kind: inner.Kind(), Result: body}
	a.tx.Set(key, EncodeDelivered(&engine.DeliveredRecord{DeliveryRef: ref, Answer: ans, AtMS: a.now}))
	return &ans, prune()
}

// deliveredPruneBatch bounds the delivered records one Deliver removes.
const deliveredPruneBatch = 64

// pruneDelivered drops the delivered records of source's entries from
// acked (the watermark so far) up to below, which its deliverer says are
// acknowledged, and moves the watermark to where it stopped: at most
// deliveredPruneBatch records a command, so the watermark may trail below
// and catch up with the next deliveries. Every record under the watermark
// is gone.
func (a *applier) pruneDelivered(source int, acked, below uint64) error {
	if below <= acked {
		return nil
	}
	to := min(below, acked+deliveredPruneBatch)
	for seq := acked; seq < to; seq++ {
		key := storage.DeliveredKey(source, seq)
		switch ok, err := a.tx.Has(key); {
		case err != nil:
			return err
		case ok:
			a.tx.Delete(key)
		}
	}
	a.tx.Set(storage.AckedBelowKey(source), storage.U64(to))
	return nil
}

// ackDelivery deletes an entry its target answered and writes what the
// answer means here: a child's job id (or the target's refusal) on its
// parent's link. An entry gone already (an earlier acknowledgement) is left
// alone, writing nothing.
func (a *applier) ackDelivery(c *engine.AckDelivery) (engine.Result, error) {
	if err := a.notSharded("AckDelivery"); err != nil {
		return nil, err
	}
	if c.Source != a.shard.Index {
		return nil, engine.InvalidField("AckDelivery", "Source", fmt.Sprintf("is shard %d, not this shard %d (%s)", c.Source, a.shard.Index, c.DeliveryRef))
	}
	key := storage.OutboxEntryKey(c.Target, c.Seq)
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return &engine.AckResult{}, nil
	}
	if err != nil {
		return nil, err
	}
	e := new(engine.OutboxEntry)
	if _, err := storage.DecodeAt(key, b, storage.KindOutboxEntry, outboxEntryVersion, e); err != nil {
		return nil, err
	}
	if c.Answer.Kind != e.Kind {
		return nil, engine.InvalidField("AckDelivery", "Answer.Kind", fmt.Sprintf("is %s, but the entry carries a %s", c.Answer.Kind, e.Kind))
	}
	a.tx.Delete(key)
	if e.Schedule != "" {
		return &engine.AckResult{Acked: true}, a.scheduleRunAnswered(e, c.Answer)
	}
	if e.Kind == engine.KindCreateReview {
		return &engine.AckResult{Acked: true}, a.remoteReviewAnswered(e, c.Answer)
	}
	if e.Kind == engine.KindSignal || e.Kind == engine.KindRequestCancel {
		return &engine.AckResult{Acked: true}, a.externalAnswered(e, c.Answer)
	}
	if unitKind(e.Kind) {
		return &engine.AckResult{Acked: true}, a.unitAnswered(e, c.Answer)
	}
	if e.Parent == 0 {
		return &engine.AckResult{Acked: true}, nil
	}
	link, err := ReadRemoteChild(a.tx, e.Parent, e.Step)
	if err != nil || link == nil || !link.Pending() || link.Delivery != e.DeliveryRef {
		return &engine.AckResult{Acked: true}, err
	}
	if c.Answer.Error != "" {
		link.Error, link.Outcome = c.Answer.Error, c.Answer.Outcome
	} else {
		_, r, err := DecodeResult(c.Answer.Result)
		if err != nil {
			return nil, fmt.Errorf("AckDelivery.Answer.Result: %w", err)
		}
		cr, ok := r.(*engine.CreateResult)
		if !ok || cr.Job == 0 {
			return nil, engine.InvalidField("AckDelivery", "Answer.Result", "is not a created child's job id")
		}
		link.Child, link.WorkflowID = cr.Job, cr.WorkflowID
	}
	a.tx.Set(storage.RemoteChildKey(uint64(e.Parent), e.Step), EncodeRemoteChild(link))
	// A parent that ended while its child's create was on its way gives
	// the child its close policy now.
	if p, err := a.load(e.Parent); err == nil && p.job.Status.Terminal() && link.Child != 0 &&
		(p.job.Status == engine.StatusTerminated || p.job.Status == engine.StatusTimedOut) {
		if err := a.sendCloseChild(p.job, link); err != nil {
			return nil, err
		}
	} else if err != nil && !errors.Is(err, engine.ErrUnknownJob) {
		return nil, err
	}
	return &engine.AckResult{Acked: true}, nil
}

// maxChainHops bounds how many runs of a chain CloseChild follows to its
// latest, so a corrupt link cannot loop.
const maxChainHops = 1 << 16

// delivered refuses a command that only a Deliver may carry, applied on
// its own.
func (a *applier) delivered(cmd string) error {
	if a.delivery == nil {
		return engine.InvalidField(cmd, "Header", "is applied only as a command delivered from another shard (Deliver)")
	}
	return nil
}

// childClosed records, on the parent's shard, the end of a child on
// another shard (closed, across shards), and marks the step's link closed.
func (a *applier) childClosed(c *engine.ChildClosed) (engine.Result, error) {
	if err := a.delivered("ChildClosed"); err != nil {
		return nil, err
	}
	if err := a.jobOnShard("ChildClosed", "parent job", c.Parent); err != nil {
		return nil, err
	}
	link, err := ReadRemoteChild(a.tx, c.Parent, c.Step)
	if err != nil {
		return nil, err
	}
	if link != nil && !link.Closed {
		// The end may arrive before the create's acknowledgement: it
		// names the child as well.
		if link.Pending() {
			link.Child = c.Child
		}
		link.Closed = true
		a.tx.Set(storage.RemoteChildKey(uint64(c.Parent), c.Step), EncodeRemoteChild(link))
	}
	p, err := a.load(c.Parent)
	if errors.Is(err, engine.ErrUnknownJob) {
		return &engine.StatusResult{Job: c.Parent}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := a.recordChildEffect(p, c.Step, c.Payload, c.Failed); err != nil {
		return nil, err
	}
	return &engine.StatusResult{Job: p.job.ID, Status: p.job.Status, Seq: p.job.LastSeq}, nil
}

// closeChildOf applies, on a child's shard, the close policy its parent on
// another shard sent when it ended; a child that ended already is left
// alone.
func (a *applier) closeChildOf(c *engine.CloseChild) (engine.Result, error) {
	if err := a.delivered("CloseChild"); err != nil {
		return nil, err
	}
	l, err := a.load(c.Child)
	if err != nil {
		return nil, err
	}
	// The link names the chain's first run; a run continued as new (or
	// retried, or reset) passed the child on to the next, which keeps the
	// parent.
	for hops := 0; l.job.Status.Terminal() && l.job.NextRunID != 0 && hops < maxChainHops; hops++ {
		if l, err = a.load(l.job.NextRunID); err != nil {
			return nil, err
		}
	}
	if l.job.ParentID != c.Parent {
		return nil, engine.InvalidField("CloseChild", "Parent", fmt.Sprintf("is %d, but job %d's parent is %d", c.Parent, c.Child, l.job.ParentID))
	}
	if c.Terminate {
		if l.job.Status.Terminal() {
			return &engine.StatusResult{Job: l.job.ID, Status: l.job.Status, Seq: l.job.LastSeq}, nil
		}
		return a.lifecycle(engine.Target{Job: l.job.ID}, engine.Event{Type: engine.EventJobTerminated, Reason: c.Reason,
			Payload: engine.EncodeTerminatedFailure(c.Reason), By: c.By})
	}
	if err := a.closeChild(&engine.Job{ID: c.Parent, WorkflowID: c.ParentWorkflow}, l); err != nil {
		return nil, err
	}
	return &engine.StatusResult{Job: l.job.ID, Status: l.job.Status, Seq: l.job.LastSeq}, nil
}

// OutboxBacklog returns, for each target shard with entries pending in the
// store of shard source, how many there are and the first one's sequence
// and time, in target order. It decodes only each target's first entry.
func OutboxBacklog(r *storage.Reader, source int) ([]engine.DeliveryBacklog, error) {
	var out []engine.DeliveryBacklog
	err := r.Scan(storage.OutboxEntryPrefix, nil, true, func(k, b []byte) (bool, error) {
		at, err := storage.ParseOutboxPair(k)
		if err != nil {
			return false, MarkStorageError(err)
		}
		if n := len(out); n > 0 && out[n-1].Target == at.Shard {
			out[n-1].Pending++
			out[n-1].LastSeq = at.Seq
			return true, nil
		}
		e := new(engine.OutboxEntry)
		if _, err := storage.DecodeAt(k, b, storage.KindOutboxEntry, outboxEntryVersion, e); err != nil {
			return false, MarkStorageError(err)
		}
		out = append(out, engine.DeliveryBacklog{Source: source, Target: at.Shard, Pending: 1, FirstSeq: at.Seq, LastSeq: at.Seq, OldestMS: e.CreatedMS})
		return true, nil
	})
	return out, err
}

// remoteChildTarget reports whether t names a run on another shard (by its
// job id, or its workflow id's route).
func (a *applier) remoteChildTarget(t engine.Target) bool {
	if t.Job != 0 {
		return a.remoteJob(t.Job)
	}
	return a.remoteWorkflow(t.WorkflowID)
}

// terminateRemoteChild is Terminate by a parent's worker (ByParent) of its
// child on another shard: on the parent's shard, after the parent's lease
// is checked, the terminate goes to the child's shard through the outbox
// (CloseChild with Terminate). A run that is not the parent's child on
// another shard is, for that parent, no child at all (ErrUnknownJob); one
// whose end reached the parent is gone already (ErrJobClosed).
func (a *applier) terminateRemoteChild(c *engine.Terminate) (engine.Result, error) {
	p, err := a.fenced(*c.ByParent, "Terminate")
	if err != nil {
		return nil, err
	}
	var link *engine.RemoteChild
	t := c.Target
	err = a.tx.Scan(storage.RemoteChildJobPrefix(uint64(p.job.ID)), nil, true, func(k, b []byte) (bool, error) {
		l := new(engine.RemoteChild)
		if _, err := storage.DecodeAt(k, b, storage.KindRemoteChild, remoteChildVersion, l); err != nil {
			return false, err
		}
		if l.Child != 0 && (t.Job == l.Child || t.Job == 0 && t.WorkflowID == l.WorkflowID) {
			link = l
		}
		return link == nil, nil
	})
	switch {
	case err != nil:
		return nil, err
	case link == nil:
		return nil, fmt.Errorf("%w: %s is not a child of job %d on another shard", engine.ErrUnknownJob, targetText(t), p.job.ID)
	case link.Closed:
		return nil, fmt.Errorf("%w: the child %d of job %d ended", engine.ErrJobClosed, link.Child, p.job.ID)
	}
	cmd := &engine.CloseChild{Child: link.Child, Parent: p.job.ID, ParentWorkflow: p.job.WorkflowID, Terminate: true, Reason: c.Reason}
	cmd.By = c.By
	if _, err := a.send(link.Delivery.Target, cmd, 0, ""); err != nil {
		return nil, err
	}
	return &engine.StatusResult{Job: link.Child}, nil
}

// targetText names a target in an error.
func targetText(t engine.Target) string {
	if t.Job != 0 {
		return fmt.Sprintf("job %d", t.Job)
	}
	return fmt.Sprintf("workflow id %q", t.WorkflowID)
}
