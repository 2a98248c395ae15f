package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// loadedReview is a task as Apply read it, beside the version being changed,
// so that saveReview moves exactly the index entries that changed.
type loadedReview struct {
	old *engine.Review // nil for a task created by this command
	t   *engine.Review
}

func (a *applier) loadReview(id engine.ReviewID) (*loadedReview, error) {
	key := storage.ReviewKey(uint64(id))
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownReview(engine.ReviewTarget{ID: id})
	}
	if err != nil {
		return nil, err
	}
	t := new(engine.Review)
	if _, err := storage.DecodeAt(key, b, storage.KindReview, reviewVersion, t); err != nil {
		return nil, err
	}
	return &loadedReview{old: t.Clone(), t: t}, nil
}

// phaseReview returns the id of job's task named phase, or 0.
func (a *applier) phaseReview(job, phase string) (engine.ReviewID, error) {
	b, err := a.tx.Get(storage.ReviewPhaseKey(job, phase))
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	id, err := storage.ParseU64(b)
	return engine.ReviewID(id), err
}

func (a *applier) resolveReview(t engine.ReviewTarget) (*loadedReview, error) {
	if t.ID != 0 {
		return a.loadReview(t.ID)
	}
	id, err := a.phaseReview(t.Job, t.Phase)
	if err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, unknownReview(t)
	}
	return a.loadReview(id)
}

// appendReviewEvent checks ev against the task table from the task's state,
// numbers and stamps it, stores it and folds it into the record. ev.To
// selects the target where an event has two (task_reviewed).
func (a *applier) appendReviewEvent(lt *loadedReview, ev engine.ReviewEvent, cmd string) (uint64, error) {
	t := lt.t
	to, ok := engine.ReviewNext(t.State, ev.Type, ev.To)
	if !ok {
		return 0, &engine.ReviewStateError{Review: t.ID, Command: cmd, State: t.State, Legal: engine.LegalReviewOps(t.State)}
	}
	ev.From, ev.To = t.State, to
	ev.Seq = t.LastSeq + 1
	ev.AtMS = a.now
	a.tx.Set(storage.ReviewEventKey(uint64(t.ID), ev.Seq), EncodeReviewEvent(&ev))
	engine.FoldReviewEvent(t, &ev)
	return ev.Seq, nil
}

// depsMet reports whether every dependency of t has reached SUCCESS.
func (a *applier) depsMet(t *engine.Review) (bool, error) {
	for _, d := range t.Deps {
		dl, err := a.loadReview(d)
		if err != nil {
			return false, err
		}
		if dl.t.State != engine.ReviewSuccess {
			return false, nil
		}
	}
	return true, nil
}

// claimable reports whether t belongs in a claim index: PENDING with its
// dependencies met (work), or REVIEWING with no reviewer (review).
func (a *applier) claimable(t *engine.Review) (bool, error) {
	switch {
	case t.State == engine.ReviewPending:
		return a.depsMet(t)
	case t.State == engine.ReviewReviewing && t.LeaseOwner == "":
		return true, nil
	}
	return false, nil
}

// reviewIndexKeys lists the exact index entries a task record implies; the
// lease entry, which the sweep drops when stale, is not among them.
func reviewIndexKeys(t *engine.Review) []string {
	keys := []string{
		string(storage.ReviewJobKey(t.Job, uint64(t.ID))),
	}
	if t.State.AwaitsPerson() {
		keys = append(keys, string(storage.ReviewAwaitKey(uint64(t.ID))))
	}
	if t.ReadyAtMS != 0 {
		if t.State == engine.ReviewPending {
			keys = append(keys, string(storage.ReviewWorkKey(t.Queue, t.ReadyAtMS, uint64(t.ID))))
		} else {
			keys = append(keys, string(storage.ReviewReviewKey(reviewQueueOf(t), t.ReadyAtMS, uint64(t.ID))))
		}
	}
	return keys
}

// saveReview stores the record and moves its index entries: the claim
// indexes (the ready time is kept while the task stays claimable the same
// way, and set to now when it becomes claimable) and the lease index.
func (a *applier) saveReview(lt *loadedReview) error {
	t := lt.t
	ok, err := a.claimable(t)
	if err != nil {
		return err
	}
	switch {
	case !ok:
		t.ReadyAtMS = 0
	case lt.old == nil || lt.old.ReadyAtMS == 0 || lt.old.State != t.State:
		t.ReadyAtMS = a.now
	}
	a.tx.Set(storage.ReviewKey(uint64(t.ID)), EncodeReview(t))
	var before []string
	if lt.old != nil {
		before = reviewIndexKeys(lt.old)
	}
	after := reviewIndexKeys(t)
	for _, k := range before {
		if !slices.Contains(after, k) {
			a.tx.Delete([]byte(k))
		}
	}
	for _, k := range after {
		if !slices.Contains(before, k) {
			a.tx.Set([]byte(k), nil)
		}
	}
	if t.LeaseOwner != "" && (lt.old == nil || lt.old.LeaseExpiryMS != t.LeaseExpiryMS) {
		a.tx.Set(storage.ReviewLeaseKey(t.LeaseExpiryMS, uint64(t.ID)), nil)
	}
	lt.old = t.Clone()
	return nil
}

func (a *applier) createReview(c *engine.CreateReview) (engine.Result, error) {
	target, err := a.reviewOnShard(c)
	if err != nil {
		return nil, err
	}
	if target >= 0 {
		return a.createRemoteReview(c, target)
	}
	delivered := a.deliveredReview(c)
	existing, err := a.phaseReview(c.Job, c.Phase)
	if err != nil {
		return nil, err
	}
	if existing != 0 {
		// A task delivered from its run's shard is never a reset run's
		// (createRemoteReview refuses that).
		if !delivered {
			if res, ok, err := a.reviewOfResetRun(c, existing); ok || err != nil {
				return res, err
			}
		}
		return nil, fmt.Errorf("%w: job %q already has phase %q (task %d)", engine.ErrReviewExists, c.Job, c.Phase, existing)
	}
	deps := make([]engine.ReviewID, 0, len(c.Deps))
	for _, p := range c.Deps {
		id, err := a.phaseReview(c.Job, p)
		if err != nil {
			return nil, err
		}
		if id == 0 {
			return nil, engine.InvalidField("CreateTask", "Deps", fmt.Sprintf("names phase %q, which job %q does not have (a dependency is created first)", p, c.Job))
		}
		if !slices.Contains(deps, id) {
			deps = append(deps, id)
		}
	}
	switch {
	case delivered:
		// Its run's shard checked the run's lease when it sent it.
	case engine.LegacyParent(&c.Header, c.ParentJob, c.ParentLease):
		if _, err := a.load(c.ParentJob); err != nil {
			return nil, err
		}
	case c.ParentJob != 0:
		if _, err := a.parentHeld(c.ParentLease, "CreateTask"); err != nil {
			return nil, err
		}
	}
	next, err := a.u64(storage.KeyNextReview)
	if err != nil {
		return nil, err
	}
	n, err := a.shardID(next+1, "task")
	if err != nil {
		return nil, err
	}
	id := engine.ReviewID(n)
	a.tx.Set(storage.KeyNextReview, storage.U64(next+1))
	lt := &loadedReview{t: &engine.Review{
		ID: id, Job: c.Job, Phase: c.Phase, Description: c.Description, JobDescription: c.JobDescription,
		Queue: c.Queue, ReviewQueue: c.ReviewQueue, Type: c.Type, ReviewType: c.ReviewType, Deps: deps,
		AutoReview: c.AutoReview, AutoApprove: c.AutoApprove, ParentJob: c.ParentJob, ParentStep: c.ParentStep,
	}}
	ev := engine.ReviewEvent{Type: engine.ReviewEventCreated, By: c.By, Config: &c.Config}
	if c.Draft {
		ev.Type = engine.ReviewEventDrafted
	}
	seq, err := a.appendReviewEvent(lt, ev, "CreateTask")
	if err != nil {
		return nil, err
	}
	a.tx.Set(storage.ReviewPhaseKey(c.Job, c.Phase), storage.U64(uint64(id)))
	for _, d := range deps {
		a.tx.Set(storage.ReviewDepKey(uint64(d), uint64(id)), nil)
	}
	if err := a.saveReview(lt); err != nil {
		return nil, err
	}
	return &engine.ReviewResult{Review: id, State: lt.t.State, Seq: seq}, nil
}

func (a *applier) reviewCommand(c *engine.ReviewCommand) (engine.Result, error) {
	lt, err := a.resolveReview(c.ReviewTarget)
	if err != nil {
		return nil, err
	}
	t := lt.t
	if c.Expect != engine.ReviewNone && t.State != c.Expect {
		return nil, &engine.ReviewStateError{Review: t.ID, Command: fmt.Sprintf("%s (expecting %s)", c.Op, c.Expect), State: t.State, Legal: engine.LegalReviewOps(t.State)}
	}
	ev := engine.ReviewEvent{Type: c.Op.Event(), By: c.By, Reason: c.Reason, Config: c.Config}
	seq, err := a.appendReviewEvent(lt, ev, string(c.Op))
	if err != nil {
		return nil, err
	}
	if seq, err = a.afterReviewMove(lt, seq); err != nil {
		return nil, err
	}
	if err := a.saveReview(lt); err != nil {
		return nil, err
	}
	return &engine.ReviewResult{Review: t.ID, State: t.State, Seq: seq}, nil
}

// afterReviewMove runs what the task's new state implies: the automatic
// step or approval it is configured for, and at an end the release of its
// dependants and the effect of its parent's step. It returns the seq of the
// last event written.
func (a *applier) afterReviewMove(lt *loadedReview, seq uint64) (uint64, error) {
	t := lt.t
	var err error
	switch {
	case t.State == engine.ReviewReviewRequired && t.AutoReview:
		seq, err = a.appendReviewEvent(lt, engine.ReviewEvent{Type: engine.ReviewEventReviewStarted, By: engine.ByAuto}, "step")
	case t.State == engine.ReviewApprovalRequired && t.AutoApprove:
		seq, err = a.appendReviewEvent(lt, engine.ReviewEvent{Type: engine.ReviewEventApproved, By: engine.ByAuto}, "approve")
	}
	if err != nil {
		return 0, err
	}
	if t.State.Terminal() {
		if err := a.saveReview(lt); err != nil {
			return 0, err
		}
		if err := a.reviewEnded(t); err != nil {
			return 0, err
		}
	}
	return seq, nil
}

// reviewEnded releases the dependants of a task that succeeded and records
// its end as the effect of its parent's step.
func (a *applier) reviewEnded(t *engine.Review) error {
	if t.State == engine.ReviewSuccess {
		var deps []engine.ReviewID
		err := a.tx.Scan(storage.ReviewDepPrefix(uint64(t.ID)), nil, false, func(k, _ []byte) (bool, error) {
			id, err := storage.LastU64(k)
			deps = append(deps, engine.ReviewID(id))
			return err == nil, err
		})
		if err != nil {
			return err
		}
		for _, id := range deps {
			dl, err := a.loadReview(id)
			if err != nil {
				return err
			}
			if dl.t.State == engine.ReviewPending && dl.t.ReadyAtMS == 0 {
				if err := a.saveReview(dl); err != nil {
					return err
				}
			}
		}
	}
	if t.ParentJob == 0 {
		return nil
	}
	return a.recordReviewEffect(t)
}

// recordReviewEffect records the end of task t as the effect of its
// parent's step: its output when it succeeded, a failure when not.
func (a *applier) recordReviewEffect(t *engine.Review) error {
	payload, failed := t.Output, t.State != engine.ReviewSuccess
	if failed {
		b, err := json.Marshal(engine.Failure{Type: engine.FailureReviewCanceled, NonRetryable: true,
			Message: fmt.Sprintf("task %d (%s/%s) ended %s: %s", t.ID, t.Job, t.Phase, t.State, t.Summary)})
		if err != nil {
			return err
		}
		payload = b
	}
	if a.remoteJob(t.ParentJob) {
		return a.sendReviewClosed(t, payload, failed)
	}
	return a.recordStepEffect(t.ParentJob, t.ParentStep, payload, failed)
}

// reviewOfResetRun answers the creation of a review task that exists
// already, when its parent run is one that the creating run was reset from
// and it is for the same step: a reset does not make the task again (the
// people and agents working on it go on), but hands it to the new run.
// The task's parent becomes the creating run, and a task that ended
// already records its end as the effect of that run's step at once. It
// reports false, with nothing written, for any other existing task.
func (a *applier) reviewOfResetRun(c *engine.CreateReview, existing engine.ReviewID) (engine.Result, bool, error) {
	if c.ParentJob == 0 || engine.LegacyParent(&c.Header, c.ParentJob, c.ParentLease) {
		return nil, false, nil
	}
	lt, err := a.loadReview(existing)
	if err != nil {
		return nil, false, err
	}
	t := lt.t
	if t.ParentJob == 0 || t.ParentJob == c.ParentJob || t.ParentStep != c.ParentStep {
		return nil, false, nil
	}
	if ok, err := a.resetAncestor(c.ParentJob, t.ParentJob); !ok || err != nil {
		return nil, false, err
	}
	if _, err := a.parentHeld(c.ParentLease, "CreateTask"); err != nil {
		return nil, false, err
	}
	t.ParentJob = c.ParentJob
	if err := a.saveReview(lt); err != nil {
		return nil, false, err
	}
	if t.State.Terminal() {
		if err := a.recordReviewEffect(t); err != nil {
			return nil, false, err
		}
	}
	return &engine.ReviewResult{Review: t.ID, State: t.State}, true, nil
}

// recordStepEffect records payload as the effect of step of job parent (the
// first result recorded wins; an ended parent takes none), waking the
// parent if it waits for the step or telling it by effect_recorded if it
// is not blocked, as a child job's end does.
func (a *applier) recordStepEffect(parent engine.JobID, step string, payload []byte, failed bool) error {
	p, err := a.load(parent)
	if errors.Is(err, engine.ErrUnknownJob) {
		return nil
	}
	if err != nil || p.job.Status.Terminal() {
		return err
	}
	if e, err := a.effect(p.job.ID, step); err != nil || e != nil {
		return err
	}
	a.tx.Set(storage.EffectKey(uint64(p.job.ID), step), EncodeEffect(&engine.Effect{Step: step, Payload: payload, Failed: failed, AtMS: a.now}))
	switch s := p.job.Status; {
	case waitsForStep(p.job.Wait, step):
		if _, err := a.wake(p, "step", step); err != nil {
			return err
		}
	case s != engine.StatusWaiting && s != engine.StatusParked:
		if _, err := a.appendEvent(p, engine.Event{Type: engine.EventEffectRecorded, Step: step}); err != nil {
			return err
		}
	default:
		return nil
	}
	a.save(p)
	return nil
}

// maxReviewClaimScan bounds the claimable tasks one claim looks at beyond
// Max, so that a queue full of other types keeps a claim cheap.
const maxReviewClaimScan = 256

func (a *applier) claimReviews(c *engine.ClaimReviews) (engine.Result, error) {
	prefix := storage.ReviewWorkQueuePrefix(c.Queue)
	ev := engine.ReviewEventStarted
	if c.Role == engine.ReviewRoleReview {
		prefix, ev = storage.ReviewReviewQueuePrefix(c.Queue), engine.ReviewEventReviewerLeased
	}
	var ids []engine.ReviewID
	seen := 0
	err := a.tx.Scan(prefix, nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		if err != nil {
			return false, err
		}
		ids = append(ids, engine.ReviewID(id))
		seen++
		return seen < c.Max+maxReviewClaimScan, nil
	})
	if err != nil {
		return nil, err
	}
	res := &engine.ClaimReviewsResult{}
	for _, id := range ids {
		if len(res.Reviews) == c.Max {
			break
		}
		lt, err := a.loadReview(id)
		if err != nil {
			return nil, err
		}
		t := lt.t
		typ := t.Type
		if c.Role == engine.ReviewRoleReview {
			typ = t.ReviewType
		}
		if len(c.Types) > 0 && typ != "" && !slices.Contains(c.Types, typ) {
			continue
		}
		expiry := a.now + c.LeaseMS
		token := leaseToken(c.Nonce, "task", uint64(t.ID), t.Attempt+1)
		if _, err := a.appendReviewEvent(lt, engine.ReviewEvent{Type: ev, Attempt: t.Attempt + 1, Owner: c.Owner, LeaseExpiryMS: expiry, TokenIssued: token != ""}, "ClaimTasks"); err != nil {
			return nil, err
		}
		t.LeaseDigest = leaseDigest(token)
		if err := a.saveReview(lt); err != nil {
			return nil, err
		}
		res.Reviews = append(res.Reviews, engine.ClaimedReview{
			Review: t.ID, Job: t.Job, Phase: t.Phase, Type: typ, Role: c.Role, Attempt: t.Attempt,
			LeaseExpiryMS: expiry, LeaseToken: token, Config: t.Config, Output: t.Output, Feedback: t.Feedback,
			Assessment: t.Assessment, Runs: t.Runs,
		})
	}
	return res, nil
}

// fencedReview loads a task for a write by the holder of lease ref, and
// refuses it unless ref is the task's current lease, held in one of states.
func (a *applier) fencedReview(ref engine.ReviewLeaseRef, cmd string, states ...engine.ReviewState) (*loadedReview, error) {
	lt, err := a.loadReview(ref.Review)
	if err != nil {
		return nil, err
	}
	t := lt.t
	if t.Attempt != ref.Attempt || !t.HoldsLease() || !slices.Contains(states, t.State) {
		return nil, &engine.StaleReviewError{Review: t.ID, Attempt: ref.Attempt, Current: t.Attempt, State: t.State, Command: cmd}
	}
	if !tokenMatches(t.LeaseDigest, ref.Token) {
		return nil, &engine.StaleReviewError{Review: t.ID, Attempt: ref.Attempt, Current: t.Attempt, State: t.State, Command: cmd, WrongToken: true}
	}
	return lt, nil
}

func (a *applier) reviewReport(c *engine.ReviewReport) (engine.Result, error) {
	var lt *loadedReview
	var err error
	var ev engine.ReviewEvent
	switch c.Op {
	case engine.ReviewReportOutput:
		lt, err = a.fencedReview(c.ReviewLeaseRef, "TaskReport(output)", engine.ReviewRunning)
		ev = engine.ReviewEvent{Type: engine.ReviewEventOutput, Output: c.Output, Cost: c.Cost, Summary: c.Summary}
	case engine.ReviewReportPause:
		lt, err = a.fencedReview(c.ReviewLeaseRef, "TaskReport(pause)", engine.ReviewRunning)
		ev = engine.ReviewEvent{Type: engine.ReviewEventPaused, Summary: c.Summary}
	case engine.ReviewReportUnpause:
		lt, err = a.fencedReview(c.ReviewLeaseRef, "TaskReport(unpause)", engine.ReviewPaused)
		ev = engine.ReviewEvent{Type: engine.ReviewEventResumed}
	case engine.ReviewReportVerdict:
		lt, err = a.fencedReview(c.ReviewLeaseRef, "TaskReport(verdict)", engine.ReviewReviewing)
		ev = engine.ReviewEvent{Type: engine.ReviewEventReviewed, Assessment: c.Assessment, To: engine.ReviewApprovalRequired}
		if c.Assessment.Verdict == engine.VerdictIntervene {
			ev.To = engine.ReviewInterventionRequired
		}
	}
	if err != nil {
		return nil, err
	}
	ev.Attempt = c.Attempt
	ev.Owner = lt.t.LeaseOwner
	seq, err := a.appendReviewEvent(lt, ev, "TaskReport")
	if err != nil {
		return nil, err
	}
	if seq, err = a.afterReviewMove(lt, seq); err != nil {
		return nil, err
	}
	if err := a.saveReview(lt); err != nil {
		return nil, err
	}
	return &engine.ReviewResult{Review: lt.t.ID, State: lt.t.State, Seq: seq}, nil
}

func (a *applier) reviewHeartbeat(c *engine.ReviewHeartbeat) (engine.Result, error) {
	expiry := a.now + c.LeaseMS
	res := &engine.ReviewHeartbeatResult{LeaseExpiryMS: expiry}
	for _, ref := range c.Leases {
		lt, err := a.fencedReview(ref, "TaskHeartbeat", engine.ReviewRunning, engine.ReviewPaused, engine.ReviewReviewing)
		if errors.Is(err, engine.ErrStaleReviewAttempt) || errors.Is(err, engine.ErrUnknownReview) {
			ref.Token = "" // the answer names the lease, it does not echo its proof
			res.Refused = append(res.Refused, ref)
			continue
		}
		if err != nil {
			return nil, err
		}
		// A lease only grows: a renewal that arrives late never shortens it.
		if expiry > lt.t.LeaseExpiryMS {
			lt.t.LeaseExpiryMS = expiry
			if err := a.saveReview(lt); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

func (a *applier) reclaimReviews(c *engine.ReclaimReviews) (engine.Result, error) {
	out := &engine.ReviewSweepResult{}
	res, err := a.sweep(storage.ReviewLeasePrefix, storage.KeyLowReviewLease, c.Max, func(tk storage.TimeKey, _ []byte, res *engine.SweepResult) error {
		lt, err := a.loadReview(engine.ReviewID(tk.Job))
		if err != nil {
			return err
		}
		t := lt.t
		// Only the entry of the lease the record holds is live; any other
		// is stale (renewed, ended, or given up) and just dropped.
		if !t.HoldsLease() || t.LeaseExpiryMS != tk.AtMS {
			return nil
		}
		seq, err := a.appendReviewEvent(lt, engine.ReviewEvent{Type: engine.ReviewEventLeaseExpired, Attempt: t.Attempt, Owner: t.LeaseOwner}, "ReclaimTasks")
		if err != nil {
			return err
		}
		if _, err := a.afterReviewMove(lt, seq); err != nil {
			return err
		}
		out.Reviews = append(out.Reviews, t.ID)
		return a.saveReview(lt)
	})
	if err != nil {
		return nil, err
	}
	out.More = res.(*engine.SweepResult).More
	return out, nil
}

// reviewQueueOf returns the queue reviewers claim task t from.
func reviewQueueOf(t *engine.Review) string {
	if t.ReviewQueue != "" {
		return t.ReviewQueue
	}
	return t.Queue
}
