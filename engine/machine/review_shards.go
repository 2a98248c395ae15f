package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// Review tasks of a workflow step whose review job lives on another shard
// than the step's run (docs/sharding.md, "Cross-shard work"). The create
// routes to the run's shard (engine.ShardOfCommand), which checks the run's
// lease, writes the create without the lease into its outbox for the review
// job's shard and links the step to it (storage.RemoteReviewKey). The
// review job's shard creates the task naming the remote run as its parent,
// its provenance (the delivery from the run's shard) standing for the
// run's lease; the acknowledgement fills the link with the task's id, and
// the engine answers it (embedded.Engine.CreateReview). When the task ends,
// its shard sends ReviewClosed to the run's shard, which records it as the
// step's effect, once. A run reset from the run that created the task does
// not take it over across shards (createRemoteReview): that is refused.

// remoteReviewVersion is the version of the remote review link's record.
const remoteReviewVersion = 1

// EncodeRemoteReview returns the stored form of a remote review link.
func EncodeRemoteReview(r *engine.RemoteReview) []byte {
	return storage.MustEncode(storage.KindRemoteReview, remoteReviewVersion, r)
}

// DecodeRemoteReview decodes a stored remote review link (bounded:
// storage.Decode walks the bytes before it decodes them).
func DecodeRemoteReview(b []byte) (_ *engine.RemoteReview, err error) {
	defer markStorage(&err)
	r := new(engine.RemoteReview)
	if _, err := storage.Decode(b, storage.KindRemoteReview, remoteReviewVersion, r); err != nil {
		return nil, err
	}
	return r, nil
}

// ReadRemoteReview returns the link of step of job parent to its review task
// on another shard, or nil.
func ReadRemoteReview(r interface{ Get([]byte) ([]byte, error) }, parent engine.JobID, step string) (*engine.RemoteReview, error) {
	key := storage.RemoteReviewKey(uint64(parent), step)
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l := new(engine.RemoteReview)
	if _, err := storage.DecodeAt(key, b, storage.KindRemoteReview, remoteReviewVersion, l); err != nil {
		return nil, MarkStorageError(err)
	}
	return l, nil
}

// deliveredReview reports whether c is a workflow step's task delivered from
// its run's shard: the delivery is its provenance, standing for the run's
// lease, which that shard checked.
func (a *applier) deliveredReview(c *engine.CreateReview) bool {
	return a.delivery != nil && c.ParentJob != 0 && engine.ShardOfJob(c.ParentJob) == a.delivery.Source &&
		a.delivery.Source != a.shard.Index
}

// createRemoteReview creates the task of a workflow step whose review job
// routes to shard target: after the run's lease is checked, the create goes
// into the outbox for that shard and the step is linked to it. The result
// names the entry; the engine answers the task's id once the entry is
// acknowledged. A second create of the same step finds the link and answers
// from it.
func (a *applier) createRemoteReview(c *engine.CreateReview, target int) (engine.Result, error) {
	var p *loaded
	var err error
	if engine.LegacyParent(&c.Header, c.ParentJob, c.ParentLease) {
		p, err = a.load(c.ParentJob)
	} else {
		p, err = a.parentHeld(c.ParentLease, "CreateTask")
	}
	if err != nil {
		return nil, err
	}
	if p.job.Status.Terminal() {
		return nil, fmt.Errorf("%w: parent job %d is %s", engine.ErrJobClosed, p.job.ID, p.job.Status)
	}
	link, err := ReadRemoteReview(a.tx, c.ParentJob, c.ParentStep)
	if err != nil {
		return nil, err
	}
	if link != nil {
		if link.Job != c.Job || link.Phase != c.Phase {
			return nil, engine.InvalidField("CreateTask", "ParentStep", fmt.Sprintf("%q of job %d created task %s/%s already, not %s/%s",
				c.ParentStep, c.ParentJob, link.Job, link.Phase, c.Job, c.Phase))
		}
		return remoteReviewResult(link)
	}
	if err := a.noResetReviewElsewhere(p, c); err != nil {
		return nil, err
	}
	inner := *c
	inner.Header = engine.Header{By: c.Header.By}
	inner.ParentLease = nil
	ref, err := a.send(target, &inner, c.ParentJob, c.ParentStep)
	if err != nil {
		return nil, err
	}
	link = &engine.RemoteReview{Parent: c.ParentJob, Step: c.ParentStep, Job: c.Job, Phase: c.Phase, Delivery: ref, CreatedMS: a.now}
	a.tx.Set(storage.RemoteReviewKey(uint64(c.ParentJob), c.ParentStep), EncodeRemoteReview(link))
	return &engine.ReviewResult{Delivery: &ref}, nil
}

// noResetReviewElsewhere refuses the create of a task by run p when p was
// reset from a run whose same step created the same task on another shard.
// Within a shard the reset run takes the task over (reviewOfResetRun); the
// task's shard cannot tell that the two runs are one reset chain, so
// across shards this is refused, writing nothing: the new run's step fails
// and the task stays with the run that created it.
func (a *applier) noResetReviewElsewhere(p *loaded, c *engine.CreateReview) error {
	id := p.job.ResetBaseRunID
	for hops := 0; id != 0 && hops < maxResetHops; hops++ {
		old, err := ReadRemoteReview(a.tx, id, c.ParentStep)
		if err != nil {
			return err
		}
		if old != nil && old.Job == c.Job && old.Phase == c.Phase {
			return engine.InvalidField("CreateTask", "ParentJob", fmt.Sprintf(
				"is job %d, reset from job %d, whose step %q created task %s/%s on shard %d: a reset run takes over a review task only on its own shard (docs/sharding.md, \"Cross-shard work\")",
				c.ParentJob, id, c.ParentStep, c.Job, c.Phase, old.Delivery.Target))
		}
		l, err := a.load(id)
		if errors.Is(err, engine.ErrUnknownJob) {
			return nil
		}
		if err != nil {
			return err
		}
		id = l.job.ResetBaseRunID
	}
	return nil
}

// remoteReviewResult is what a create of a step with a remote review link
// answers: the task's id, the target's refusal, or the pending entry.
func remoteReviewResult(link *engine.RemoteReview) (engine.Result, error) {
	switch {
	case link.Review != 0:
		return &engine.ReviewResult{Review: link.Review}, nil
	case link.Error != "":
		return nil, DeliveryError(link.Outcome, link.Error)
	}
	ref := link.Delivery
	return &engine.ReviewResult{Delivery: &ref}, nil
}

// remoteReviewAnswered writes, on the run's shard, the answer to the create
// of a step's task on another shard (entry e): the task's id, or the
// target's refusal, on the step's link. A link that has them already (the
// task's end came first) is left alone.
func (a *applier) remoteReviewAnswered(e *engine.OutboxEntry, ans engine.DeliverResult) error {
	link, err := ReadRemoteReview(a.tx, e.Parent, e.Step)
	if err != nil || link == nil || !link.Pending() || link.Delivery != e.DeliveryRef {
		return err
	}
	if ans.Error != "" {
		link.Error, link.Outcome = ans.Error, ans.Outcome
	} else {
		_, r, err := DecodeResult(ans.Result)
		if err != nil {
			return fmt.Errorf("AckDelivery.Answer.Result: %w", err)
		}
		rr, ok := r.(*engine.ReviewResult)
		if !ok || rr.Review == 0 {
			return engine.InvalidField("AckDelivery", "Answer.Result", "is not a created task's id")
		}
		link.Review = rr.Review
	}
	a.tx.Set(storage.RemoteReviewKey(uint64(e.Parent), e.Step), EncodeRemoteReview(link))
	return nil
}

// sendReviewClosed writes the end of task t, whose parent run lives on
// another shard, into the outbox for the run's shard.
func (a *applier) sendReviewClosed(t *engine.Review, payload []byte, failed bool) error {
	cmd := &engine.ReviewClosed{Parent: t.ParentJob, Step: t.ParentStep, Review: t.ID, Payload: payload, Failed: failed}
	_, err := a.send(engine.ShardOfJob(t.ParentJob), cmd, 0, "")
	return err
}

// reviewClosed records, on the run's shard, the end of a task of one of its
// steps that lives on another shard: the step's link is marked closed, and
// the end becomes the step's effect (the first recorded wins; a run that
// ended takes none).
func (a *applier) reviewClosed(c *engine.ReviewClosed) (engine.Result, error) {
	if err := a.delivered("ReviewClosed"); err != nil {
		return nil, err
	}
	if err := a.jobOnShard("ReviewClosed", "parent job", c.Parent); err != nil {
		return nil, err
	}
	if s := engine.ShardOfReview(c.Review); s != a.delivery.Source {
		return nil, engine.InvalidField("ReviewClosed", "Review", fmt.Sprintf("is task %d, of shard %d, but came from shard %d", c.Review, s, a.delivery.Source))
	}
	link, err := ReadRemoteReview(a.tx, c.Parent, c.Step)
	if err != nil {
		return nil, err
	}
	if link != nil && !link.Closed {
		// The end may arrive before the create's acknowledgement: it names
		// the task as well.
		if link.Pending() {
			link.Review = c.Review
		}
		link.Closed = true
		a.tx.Set(storage.RemoteReviewKey(uint64(c.Parent), c.Step), EncodeRemoteReview(link))
	}
	if err := a.recordStepEffect(c.Parent, c.Step, c.Payload, c.Failed); err != nil {
		return nil, err
	}
	p, err := a.load(c.Parent)
	if errors.Is(err, engine.ErrUnknownJob) {
		return &engine.StatusResult{Job: c.Parent}, nil
	}
	if err != nil {
		return nil, err
	}
	return &engine.StatusResult{Job: p.job.ID, Status: p.job.Status, Seq: p.job.LastSeq}, nil
}

// deliverReview applies, inside a Deliver, a workflow step's task create
// from its run's shard, or the end of a task this shard sent there.
func (a *applier) deliverReview(cmd engine.Command) (engine.Result, error) {
	switch c := cmd.(type) {
	case *engine.CreateReview:
		if !a.deliveredReview(c) {
			return nil, engine.InvalidField("Deliver", "Command", "is a CreateTask that names no run of its source shard: only a run's shard delivers its steps' tasks")
		}
		return a.createReview(c)
	case *engine.ReviewClosed:
		return a.reviewClosed(c)
	}
	return nil, engine.InvalidField("Deliver", "Command", fmt.Sprintf("is a %s, which is not a review task's", cmd.Kind()))
}

// reviewEntry checks a pending entry e of this shard that carries a
// workflow step's task create c (VerifyShard): it names the step, and the
// step's link is there (naming e while it waits for its answer). It
// reports whether e is well-formed, and if not whether to go on.
func (v *verifier) reviewEntry(e *engine.OutboxEntry, c *engine.CreateReview, l engine.ShardLayout, wrong func(format string, a ...any) bool) (ok, cont bool) {
	if e.Parent != c.ParentJob || e.Step != c.ParentStep {
		return false, wrong("outbox entry %s creates a task of job %d step %q but links job %d step %q", e.DeliveryRef, c.ParentJob, c.ParentStep, e.Parent, e.Step)
	}
	if s := engine.ShardOfKey(c.Job, l.Count); s != e.Target {
		return false, wrong("outbox entry %s creates a task of review job %q, which routes to shard %d", e.DeliveryRef, c.Job, s)
	}
	link, err := ReadRemoteReview(v.r, c.ParentJob, c.ParentStep)
	switch {
	case err != nil:
		return false, v.add(err)
	case link == nil:
		return false, wrong("outbox entry %s creates a task of job %d step %q, which has no link to it", e.DeliveryRef, c.ParentJob, c.ParentStep)
	case link.Pending() && link.Delivery != e.DeliveryRef:
		return false, wrong("outbox entry %s creates a task of job %d step %q, whose link waits for %s", e.DeliveryRef, c.ParentJob, c.ParentStep, link.Delivery)
	}
	return true, true
}

// reviewClosedEntry checks a pending entry e of this shard that carries the
// end c of one of its tasks (VerifyShard): the task is here, ended, and
// names the run and step the entry goes to. It reports whether e is
// well-formed, and if not whether to go on.
func (v *verifier) reviewClosedEntry(e *engine.OutboxEntry, c *engine.ReviewClosed, wrong func(format string, a ...any) bool) (ok, cont bool) {
	key := storage.ReviewKey(uint64(c.Review))
	b, err := v.r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, wrong("outbox entry %s carries the end of task %d, which does not exist", e.DeliveryRef, c.Review)
	}
	if err != nil {
		return false, v.add(err)
	}
	t := new(engine.Review)
	if _, err := storage.DecodeAt(key, b, storage.KindReview, reviewVersion, t); err != nil {
		return false, v.add(err)
	}
	switch {
	case !t.State.Terminal():
		return false, wrong("outbox entry %s carries the end of task %d, which is %s", e.DeliveryRef, t.ID, t.State)
	case t.ParentJob != c.Parent || t.ParentStep != c.Step || engine.ShardOfJob(c.Parent) != e.Target:
		return false, wrong("outbox entry %s carries the end of task %d to job %d step %q, but its parent is job %d step %q", e.DeliveryRef, t.ID, c.Parent, c.Step, t.ParentJob, t.ParentStep)
	}
	return true, true
}

// remoteReviews checks the links of this shard's runs' steps to their tasks
// on other shards (VerifyShard): each is stored under its run and step,
// belongs to a job here, names an entry of this shard to the shard its
// review job routes to and a task of that shard, is closed only with its
// task, holds a task or a refusal but not both, and while it waits for its
// answer has its entry.
func (v *verifier) remoteReviews(l engine.ShardLayout, wrong func(format string, a ...any) bool) {
	err := v.r.Scan(storage.RemoteReviewPrefix, nil, true, func(k, b []byte) (bool, error) {
		c := new(engine.RemoteReview)
		if _, err := storage.DecodeAt(k, b, storage.KindRemoteReview, remoteReviewVersion, c); err != nil {
			return v.add(err), nil
		}
		parent, step, err := storage.ParseRemoteReviewKey(k)
		if err != nil {
			return v.add(err), nil
		}
		has, err := v.has(storage.JobKey(parent))
		if err != nil {
			return v.add(err), nil
		}
		switch {
		case uint64(c.Parent) != parent || c.Step != step:
			return wrong("remote review link of job %d step %q is stored under job %d step %q", c.Parent, c.Step, parent, step), nil
		case !has:
			return wrong("remote review link of job %d step %q: the job does not exist", c.Parent, c.Step), nil
		case c.Delivery.Source != l.Index || c.Delivery.Target >= l.Count || c.Delivery.Target == l.Index:
			return wrong("remote review link of job %d step %q names %s", c.Parent, c.Step, c.Delivery), nil
		case engine.ShardOfKey(c.Job, l.Count) != c.Delivery.Target:
			return wrong("remote review link of job %d step %q names review job %q, which routes to shard %d, not %d", c.Parent, c.Step, c.Job,
				engine.ShardOfKey(c.Job, l.Count), c.Delivery.Target), nil
		case c.Review != 0 && engine.ShardOfReview(c.Review) != c.Delivery.Target:
			return wrong("remote review link of job %d step %q names task %d, not of shard %d", c.Parent, c.Step, c.Review, c.Delivery.Target), nil
		case c.Review != 0 && c.Error != "":
			return wrong("remote review link of job %d step %q names task %d and a refusal", c.Parent, c.Step, c.Review), nil
		case c.Closed && c.Review == 0:
			return wrong("remote review link of job %d step %q is closed without a task", c.Parent, c.Step), nil
		}
		if c.Pending() {
			ok, err := v.has(storage.OutboxEntryKey(c.Delivery.Target, c.Delivery.Seq))
			if err != nil {
				return v.add(err), nil
			}
			if !ok {
				return wrong("remote review link of job %d step %q waits for %s, which is not pending", c.Parent, c.Step, c.Delivery), nil
			}
		}
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
}

// reviewsAcross gathers, shard by shard, what VerifyAcrossShards checks of
// the tasks of workflow steps whose review jobs live on other shards.
type reviewsAcross struct {
	links   map[string]reviewLinkAt // by parent and step
	effects map[string]bool         // the steps with a link that have an effect
	tasks   map[engine.ReviewID]*engine.Review
	remote  []reviewAt      // tasks whose parent lives on another shard
	closing map[string]bool // a pending ReviewClosed, by parent and step
}

type reviewLinkAt struct {
	shard int
	l     *engine.RemoteReview
}

type reviewAt struct {
	shard int
	t     *engine.Review
}

func newReviewsAcross() *reviewsAcross {
	return &reviewsAcross{links: map[string]reviewLinkAt{}, effects: map[string]bool{}, tasks: map[engine.ReviewID]*engine.Review{},
		closing: map[string]bool{}}
}

func stepKey(parent engine.JobID, step string) string { return fmt.Sprintf("%d/%s", parent, step) }

// read gathers the links and tasks of shard k's store.
func (ra *reviewsAcross) read(k int, r *storage.Reader, v *verifier) error {
	err := r.Scan(storage.RemoteReviewPrefix, nil, true, func(key, b []byte) (bool, error) {
		l := new(engine.RemoteReview)
		if _, err := storage.DecodeAt(key, b, storage.KindRemoteReview, remoteReviewVersion, l); err != nil {
			return v.add(err), nil
		}
		ra.links[stepKey(l.Parent, l.Step)] = reviewLinkAt{k, l}
		_, err := r.Get(storage.EffectKey(uint64(l.Parent), l.Step))
		switch {
		case err == nil:
			ra.effects[stepKey(l.Parent, l.Step)] = true
		case !errors.Is(err, storage.ErrNotFound):
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return r.Scan(storage.ReviewRecordPrefix, nil, true, func(key, b []byte) (bool, error) {
		t := new(engine.Review)
		if _, err := storage.DecodeAt(key, b, storage.KindReview, reviewVersion, t); err != nil {
			return v.add(err), nil
		}
		ra.tasks[t.ID] = t
		if t.ParentJob != 0 && engine.ShardOfJob(t.ParentJob) != k {
			ra.remote = append(ra.remote, reviewAt{k, t})
		}
		return true, nil
	})
}

// entry notes a pending entry that carries a task's end.
func (ra *reviewsAcross) entry(e *engine.OutboxEntry, v *verifier) bool {
	cmd, err := DecodeCommand(e.Command)
	if err != nil {
		return v.add(err)
	}
	if c, ok := cmd.(*engine.ReviewClosed); ok {
		ra.closing[stepKey(c.Parent, c.Step)] = true
	}
	return true
}

// check checks what was gathered: a link that names its task finds it on
// the review job's shard, naming the link's run and step; a task naming a
// run of another shard has that run's link, not a refused one, naming it
// (or still waiting for its answer); a task that ended has its end on the
// link or on its way; a link its task's end reached has the step's effect,
// unless the run ended.
func (ra *reviewsAcross) check(v *verifier, jobs map[engine.JobID]*engine.Job) {
	for key, la := range ra.links {
		l := la.l
		if l.Review != 0 {
			t := ra.tasks[l.Review]
			switch {
			case t == nil:
				v.add(fmt.Errorf("job %d step %q on shard %d links task %d, which shard %d does not hold", l.Parent, l.Step, la.shard, l.Review, l.Delivery.Target))
			case t.ParentJob != l.Parent || t.ParentStep != l.Step || t.Job != l.Job || t.Phase != l.Phase:
				v.add(fmt.Errorf("job %d step %q links task %d (%s/%s), which is %s/%s of job %d step %q", l.Parent, l.Step, l.Review, l.Job, l.Phase,
					t.Job, t.Phase, t.ParentJob, t.ParentStep))
			}
		}
		if l.Closed {
			if p := jobs[l.Parent]; p != nil && !p.Status.Terminal() && !ra.effects[key] {
				v.add(fmt.Errorf("job %d step %q: its task's end arrived, but the step has no effect", l.Parent, l.Step))
			}
		}
	}
	for _, ta := range ra.remote {
		t := ta.t
		key := stepKey(t.ParentJob, t.ParentStep)
		la, ok := ra.links[key]
		switch {
		case !ok:
			v.add(fmt.Errorf("task %d on shard %d has parent %d step %q, which has no link to it", t.ID, ta.shard, t.ParentJob, t.ParentStep))
			continue
		case la.l.Error != "":
			v.add(fmt.Errorf("task %d on shard %d exists, but its parent's link %d step %q says its create was refused (%s)", t.ID, ta.shard, t.ParentJob, t.ParentStep, la.l.Error))
			continue
		case la.l.Job != t.Job || la.l.Phase != t.Phase || (la.l.Review != 0 && la.l.Review != t.ID):
			v.add(fmt.Errorf("task %d (%s/%s) on shard %d has parent %d step %q, whose link names task %d (%s/%s)", t.ID, t.Job, t.Phase, ta.shard,
				t.ParentJob, t.ParentStep, la.l.Review, la.l.Job, la.l.Phase))
			continue
		}
		if t.State.Terminal() && !la.l.Closed && !ra.closing[key] {
			v.add(fmt.Errorf("task %d on shard %d ended, but its end is neither on its parent's link %d step %q nor on its way", t.ID, ta.shard, t.ParentJob, t.ParentStep))
		}
	}
}
