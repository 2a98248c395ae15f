package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// loadedTask is a task as Apply read it, beside the version being changed,
// so that saveTask moves exactly the index entries that changed.
type loadedTask struct {
	old *engine.Task // nil for a task created by this command
	t   *engine.Task
}

func (a *applier) loadTask(id engine.TaskID) (*loadedTask, error) {
	key := storage.TaskKey(uint64(id))
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownTask(engine.TaskTarget{ID: id})
	}
	if err != nil {
		return nil, err
	}
	t := new(engine.Task)
	if _, err := storage.DecodeAt(key, b, storage.KindTask, taskVersion, t); err != nil {
		return nil, err
	}
	return &loadedTask{old: t.Clone(), t: t}, nil
}

// phaseTask returns the id of job's task named phase, or 0.
func (a *applier) phaseTask(job, phase string) (engine.TaskID, error) {
	b, err := a.tx.Get(storage.TaskPhaseKey(job, phase))
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	id, err := storage.ParseU64(b)
	return engine.TaskID(id), err
}

func (a *applier) resolveTask(t engine.TaskTarget) (*loadedTask, error) {
	if t.ID != 0 {
		return a.loadTask(t.ID)
	}
	id, err := a.phaseTask(t.Job, t.Phase)
	if err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, unknownTask(t)
	}
	return a.loadTask(id)
}

// appendTaskEvent checks ev against the task table from the task's state,
// numbers and stamps it, stores it and folds it into the record. ev.To
// selects the target where an event has two (task_reviewed).
func (a *applier) appendTaskEvent(lt *loadedTask, ev engine.TaskEvent, cmd string) (uint64, error) {
	t := lt.t
	to, ok := engine.TaskNext(t.State, ev.Type, ev.To)
	if !ok {
		return 0, &engine.TaskStateError{Task: t.ID, Command: cmd, State: t.State, Legal: engine.LegalTaskOps(t.State)}
	}
	ev.From, ev.To = t.State, to
	ev.Seq = t.LastSeq + 1
	ev.AtMS = a.now
	a.tx.Set(storage.TaskEventKey(uint64(t.ID), ev.Seq), EncodeTaskEvent(&ev))
	engine.FoldTaskEvent(t, &ev)
	return ev.Seq, nil
}

// depsMet reports whether every dependency of t has reached SUCCESS.
func (a *applier) depsMet(t *engine.Task) (bool, error) {
	for _, d := range t.Deps {
		dl, err := a.loadTask(d)
		if err != nil {
			return false, err
		}
		if dl.t.State != engine.TaskSuccess {
			return false, nil
		}
	}
	return true, nil
}

// claimable reports whether t belongs in a claim index: PENDING with its
// dependencies met (work), or REVIEWING with no reviewer (review).
func (a *applier) claimable(t *engine.Task) (bool, error) {
	switch {
	case t.State == engine.TaskPending:
		return a.depsMet(t)
	case t.State == engine.TaskReviewing && t.LeaseOwner == "":
		return true, nil
	}
	return false, nil
}

// taskIndexKeys lists the exact index entries a task record implies; the
// lease entry, which the sweep drops when stale, is not among them.
func taskIndexKeys(t *engine.Task) []string {
	keys := []string{
		string(storage.TaskJobKey(t.Job, uint64(t.ID))),
	}
	if t.State.AwaitsPerson() {
		keys = append(keys, string(storage.TaskAwaitKey(uint64(t.ID))))
	}
	if t.ReadyAtMS != 0 {
		if t.State == engine.TaskPending {
			keys = append(keys, string(storage.TaskWorkKey(t.Queue, t.ReadyAtMS, uint64(t.ID))))
		} else {
			keys = append(keys, string(storage.TaskReviewKey(reviewQueueOf(t), t.ReadyAtMS, uint64(t.ID))))
		}
	}
	return keys
}

// saveTask stores the record and moves its index entries: the claim
// indexes (the ready time is kept while the task stays claimable the same
// way, and set to now when it becomes claimable) and the lease index.
func (a *applier) saveTask(lt *loadedTask) error {
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
	a.tx.Set(storage.TaskKey(uint64(t.ID)), EncodeTask(t))
	var before []string
	if lt.old != nil {
		before = taskIndexKeys(lt.old)
	}
	after := taskIndexKeys(t)
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
		a.tx.Set(storage.TaskLeaseKey(t.LeaseExpiryMS, uint64(t.ID)), nil)
	}
	lt.old = t.Clone()
	return nil
}

func (a *applier) createTask(c *engine.CreateTask) (engine.Result, error) {
	existing, err := a.phaseTask(c.Job, c.Phase)
	if err != nil {
		return nil, err
	}
	if existing != 0 {
		return nil, fmt.Errorf("%w: job %q already has phase %q (task %d)", engine.ErrTaskExists, c.Job, c.Phase, existing)
	}
	deps := make([]engine.TaskID, 0, len(c.Deps))
	for _, p := range c.Deps {
		id, err := a.phaseTask(c.Job, p)
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
	case engine.LegacyParent(&c.Header, c.ParentJob, c.ParentLease):
		if _, err := a.load(c.ParentJob); err != nil {
			return nil, err
		}
	case c.ParentJob != 0:
		if _, err := a.parentHeld(c.ParentLease, "CreateTask"); err != nil {
			return nil, err
		}
	}
	next, err := a.u64(storage.KeyNextTask)
	if err != nil {
		return nil, err
	}
	id := engine.TaskID(next + 1)
	a.tx.Set(storage.KeyNextTask, storage.U64(uint64(id)))
	lt := &loadedTask{t: &engine.Task{
		ID: id, Job: c.Job, Phase: c.Phase, Description: c.Description, JobDescription: c.JobDescription,
		Queue: c.Queue, ReviewQueue: c.ReviewQueue, Type: c.Type, ReviewType: c.ReviewType, Deps: deps,
		AutoReview: c.AutoReview, AutoApprove: c.AutoApprove, ParentJob: c.ParentJob, ParentStep: c.ParentStep,
	}}
	ev := engine.TaskEvent{Type: engine.TaskEventCreated, By: c.By, Config: &c.Config}
	if c.Draft {
		ev.Type = engine.TaskEventDrafted
	}
	seq, err := a.appendTaskEvent(lt, ev, "CreateTask")
	if err != nil {
		return nil, err
	}
	a.tx.Set(storage.TaskPhaseKey(c.Job, c.Phase), storage.U64(uint64(id)))
	for _, d := range deps {
		a.tx.Set(storage.TaskDepKey(uint64(d), uint64(id)), nil)
	}
	if err := a.saveTask(lt); err != nil {
		return nil, err
	}
	return &engine.TaskResult{Task: id, State: lt.t.State, Seq: seq}, nil
}

func (a *applier) taskCommand(c *engine.TaskCommand) (engine.Result, error) {
	lt, err := a.resolveTask(c.TaskTarget)
	if err != nil {
		return nil, err
	}
	t := lt.t
	if c.Expect != engine.TaskNone && t.State != c.Expect {
		return nil, &engine.TaskStateError{Task: t.ID, Command: fmt.Sprintf("%s (expecting %s)", c.Op, c.Expect), State: t.State, Legal: engine.LegalTaskOps(t.State)}
	}
	ev := engine.TaskEvent{Type: c.Op.Event(), By: c.By, Reason: c.Reason, Config: c.Config}
	seq, err := a.appendTaskEvent(lt, ev, string(c.Op))
	if err != nil {
		return nil, err
	}
	if seq, err = a.afterTaskMove(lt, seq); err != nil {
		return nil, err
	}
	if err := a.saveTask(lt); err != nil {
		return nil, err
	}
	return &engine.TaskResult{Task: t.ID, State: t.State, Seq: seq}, nil
}

// afterTaskMove runs what the task's new state implies: the automatic
// step or approval it is configured for, and at an end the release of its
// dependants and the effect of its parent's step. It returns the seq of the
// last event written.
func (a *applier) afterTaskMove(lt *loadedTask, seq uint64) (uint64, error) {
	t := lt.t
	var err error
	switch {
	case t.State == engine.TaskReviewRequired && t.AutoReview:
		seq, err = a.appendTaskEvent(lt, engine.TaskEvent{Type: engine.TaskEventReviewStarted, By: engine.ByAuto}, "step")
	case t.State == engine.TaskApprovalRequired && t.AutoApprove:
		seq, err = a.appendTaskEvent(lt, engine.TaskEvent{Type: engine.TaskEventApproved, By: engine.ByAuto}, "approve")
	}
	if err != nil {
		return 0, err
	}
	if t.State.Terminal() {
		if err := a.saveTask(lt); err != nil {
			return 0, err
		}
		if err := a.taskEnded(t); err != nil {
			return 0, err
		}
	}
	return seq, nil
}

// taskEnded releases the dependants of a task that succeeded and records
// its end as the effect of its parent's step.
func (a *applier) taskEnded(t *engine.Task) error {
	if t.State == engine.TaskSuccess {
		var deps []engine.TaskID
		err := a.tx.Scan(storage.TaskDepPrefix(uint64(t.ID)), nil, false, func(k, _ []byte) (bool, error) {
			id, err := storage.LastU64(k)
			deps = append(deps, engine.TaskID(id))
			return err == nil, err
		})
		if err != nil {
			return err
		}
		for _, id := range deps {
			dl, err := a.loadTask(id)
			if err != nil {
				return err
			}
			if dl.t.State == engine.TaskPending && dl.t.ReadyAtMS == 0 {
				if err := a.saveTask(dl); err != nil {
					return err
				}
			}
		}
	}
	if t.ParentJob == 0 {
		return nil
	}
	payload, failed := t.Output, t.State != engine.TaskSuccess
	if failed {
		b, err := json.Marshal(engine.Failure{Type: engine.FailureTaskCanceled, NonRetryable: true,
			Message: fmt.Sprintf("task %d (%s/%s) ended %s: %s", t.ID, t.Job, t.Phase, t.State, t.Summary)})
		if err != nil {
			return err
		}
		payload = b
	}
	return a.recordStepEffect(t.ParentJob, t.ParentStep, payload, failed)
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

// maxTaskClaimScan bounds the claimable tasks one claim looks at beyond
// Max, so that a queue full of other types keeps a claim cheap.
const maxTaskClaimScan = 256

func (a *applier) claimTasks(c *engine.ClaimTasks) (engine.Result, error) {
	prefix := storage.TaskWorkQueuePrefix(c.Queue)
	ev := engine.TaskEventStarted
	if c.Role == engine.TaskRoleReview {
		prefix, ev = storage.TaskReviewQueuePrefix(c.Queue), engine.TaskEventReviewerLeased
	}
	var ids []engine.TaskID
	seen := 0
	err := a.tx.Scan(prefix, nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		if err != nil {
			return false, err
		}
		ids = append(ids, engine.TaskID(id))
		seen++
		return seen < c.Max+maxTaskClaimScan, nil
	})
	if err != nil {
		return nil, err
	}
	res := &engine.ClaimTasksResult{}
	for _, id := range ids {
		if len(res.Tasks) == c.Max {
			break
		}
		lt, err := a.loadTask(id)
		if err != nil {
			return nil, err
		}
		t := lt.t
		typ := t.Type
		if c.Role == engine.TaskRoleReview {
			typ = t.ReviewType
		}
		if len(c.Types) > 0 && typ != "" && !slices.Contains(c.Types, typ) {
			continue
		}
		expiry := a.now + c.LeaseMS
		token := leaseToken(c.Nonce, "task", uint64(t.ID), t.Attempt+1)
		if _, err := a.appendTaskEvent(lt, engine.TaskEvent{Type: ev, Attempt: t.Attempt + 1, Owner: c.Owner, LeaseExpiryMS: expiry, TokenIssued: token != ""}, "ClaimTasks"); err != nil {
			return nil, err
		}
		t.LeaseDigest = leaseDigest(token)
		if err := a.saveTask(lt); err != nil {
			return nil, err
		}
		res.Tasks = append(res.Tasks, engine.ClaimedTask{
			Task: t.ID, Job: t.Job, Phase: t.Phase, Type: typ, Role: c.Role, Attempt: t.Attempt,
			LeaseExpiryMS: expiry, LeaseToken: token, Config: t.Config, Output: t.Output, Feedback: t.Feedback,
			Review: t.Review, Runs: t.Runs,
		})
	}
	return res, nil
}

// fencedTask loads a task for a write by the holder of lease ref, and
// refuses it unless ref is the task's current lease, held in one of states.
func (a *applier) fencedTask(ref engine.TaskLeaseRef, cmd string, states ...engine.TaskState) (*loadedTask, error) {
	lt, err := a.loadTask(ref.Task)
	if err != nil {
		return nil, err
	}
	t := lt.t
	if t.Attempt != ref.Attempt || !t.HoldsLease() || !slices.Contains(states, t.State) {
		return nil, &engine.StaleTaskError{Task: t.ID, Attempt: ref.Attempt, Current: t.Attempt, State: t.State, Command: cmd}
	}
	if !tokenMatches(t.LeaseDigest, ref.Token) {
		return nil, &engine.StaleTaskError{Task: t.ID, Attempt: ref.Attempt, Current: t.Attempt, State: t.State, Command: cmd, WrongToken: true}
	}
	return lt, nil
}

func (a *applier) taskReport(c *engine.TaskReport) (engine.Result, error) {
	var lt *loadedTask
	var err error
	var ev engine.TaskEvent
	switch c.Op {
	case engine.TaskReportOutput:
		lt, err = a.fencedTask(c.TaskLeaseRef, "TaskReport(output)", engine.TaskRunning)
		ev = engine.TaskEvent{Type: engine.TaskEventOutput, Output: c.Output, Cost: c.Cost, Summary: c.Summary}
	case engine.TaskReportPause:
		lt, err = a.fencedTask(c.TaskLeaseRef, "TaskReport(pause)", engine.TaskRunning)
		ev = engine.TaskEvent{Type: engine.TaskEventPaused, Summary: c.Summary}
	case engine.TaskReportUnpause:
		lt, err = a.fencedTask(c.TaskLeaseRef, "TaskReport(unpause)", engine.TaskPaused)
		ev = engine.TaskEvent{Type: engine.TaskEventResumed}
	case engine.TaskReportVerdict:
		lt, err = a.fencedTask(c.TaskLeaseRef, "TaskReport(verdict)", engine.TaskReviewing)
		ev = engine.TaskEvent{Type: engine.TaskEventReviewed, Review: c.Review, To: engine.TaskApprovalRequired}
		if c.Review.Verdict == engine.VerdictIntervene {
			ev.To = engine.TaskInterventionRequired
		}
	}
	if err != nil {
		return nil, err
	}
	ev.Attempt = c.Attempt
	ev.Owner = lt.t.LeaseOwner
	seq, err := a.appendTaskEvent(lt, ev, "TaskReport")
	if err != nil {
		return nil, err
	}
	if seq, err = a.afterTaskMove(lt, seq); err != nil {
		return nil, err
	}
	if err := a.saveTask(lt); err != nil {
		return nil, err
	}
	return &engine.TaskResult{Task: lt.t.ID, State: lt.t.State, Seq: seq}, nil
}

func (a *applier) taskHeartbeat(c *engine.TaskHeartbeat) (engine.Result, error) {
	expiry := a.now + c.LeaseMS
	res := &engine.TaskHeartbeatResult{LeaseExpiryMS: expiry}
	for _, ref := range c.Leases {
		lt, err := a.fencedTask(ref, "TaskHeartbeat", engine.TaskRunning, engine.TaskPaused, engine.TaskReviewing)
		if errors.Is(err, engine.ErrStaleTaskAttempt) || errors.Is(err, engine.ErrUnknownTask) {
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
			if err := a.saveTask(lt); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

func (a *applier) reclaimTasks(c *engine.ReclaimTasks) (engine.Result, error) {
	out := &engine.TaskSweepResult{}
	res, err := a.sweep(storage.TaskLeasePrefix, storage.KeyLowTaskLease, c.Max, func(tk storage.TimeKey, _ []byte, res *engine.SweepResult) error {
		lt, err := a.loadTask(engine.TaskID(tk.Job))
		if err != nil {
			return err
		}
		t := lt.t
		// Only the entry of the lease the record holds is live; any other
		// is stale (renewed, ended, or given up) and just dropped.
		if !t.HoldsLease() || t.LeaseExpiryMS != tk.AtMS {
			return nil
		}
		seq, err := a.appendTaskEvent(lt, engine.TaskEvent{Type: engine.TaskEventLeaseExpired, Attempt: t.Attempt, Owner: t.LeaseOwner}, "ReclaimTasks")
		if err != nil {
			return err
		}
		if _, err := a.afterTaskMove(lt, seq); err != nil {
			return err
		}
		out.Tasks = append(out.Tasks, t.ID)
		return a.saveTask(lt)
	})
	if err != nil {
		return nil, err
	}
	out.More = res.(*engine.SweepResult).More
	return out, nil
}

// reviewQueueOf returns the queue reviewers claim task t from.
func reviewQueueOf(t *engine.Task) string {
	if t.ReviewQueue != "" {
		return t.ReviewQueue
	}
	return t.Queue
}
