package machine

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The operations on a run's activities (docs/state-machines.md §6):
// PauseActivity, UnpauseActivity, ResetActivity, UpdateActivityOptions.
//
// An activity the workflow's own worker runs keeps what they leave on its
// step record: one that has none (it ran under the job's lease, the
// straight path) gets one, marked Straight, so that every later try takes
// a step lease, which leaseStep refuses while the activity is paused. An
// activity sent to another task queue runs as its own job (an activity
// task): the command acts on that job (its pause, its attempt base, its
// options), and records the same event on the run's history, where the
// steps table reads it.

// pendingActivity is one pending activity of a run, as a command finds it.
type pendingActivity struct {
	step string
	name string
	proj engine.StepProjection
	s    *step   // its step record; nil when it has none
	task *loaded // its activity task when it runs on another task queue
	// changed: the command wrote for it (its record is saved).
	changed bool
}

// ReasonActivityReset is the reason of the job_requeued with which a reset
// releases an activity task that waited out a retry delay (Retrying).
const ReasonActivityReset = "activity_reset"

// pendingActivities finds the activities of run l that sel names and that
// are pending: known to the engine (a step event, a step record, a
// heartbeat) and without a recorded result. It reads the run's step
// events (without their payloads) once, as the steps query does. An empty
// answer is ErrUnknownActivity.
func (a *applier) pendingActivities(l *loaded, sel engine.ActivitySelector, cmd string) ([]*pendingActivity, error) {
	j := l.job
	if j.Status.Terminal() {
		return nil, fmt.Errorf("%w: %s of job %d in status %s", engine.ErrJobClosed, cmd, j.ID, j.Status)
	}
	byStep := map[string][]engine.Event{}
	var steps []string
	note := func(name string) {
		if _, ok := byStep[name]; !ok && (sel.ActivityID == "" || name == sel.ActivityID) {
			byStep[name] = nil
			steps = append(steps, name)
		}
	}
	err := a.tx.Scan(storage.EventPrefix(uint64(j.ID)), nil, true, func(k, v []byte) (bool, error) {
		var ev engine.Event
		if _, err := decodeElided(k, v, storage.KindEvent, eventVersion, &ev, eventLargeFields, 0); err != nil {
			return false, err
		}
		if engine.IsStepEvent(ev.Type) && ev.Step != "" && (sel.ActivityID == "" || ev.Step == sel.ActivityID) {
			note(ev.Step)
			byStep[ev.Step] = append(byStep[ev.Step], ev)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	for _, name := range j.LiveSteps {
		note(name)
	}
	for _, b := range j.Beats {
		note(b.Step)
	}
	slices.SortFunc(steps, compareSteps)
	var tasks map[string]*loaded
	var out []*pendingActivity
	for _, name := range steps {
		if eff, err := a.effect(j.ID, name); err != nil || eff != nil {
			if err != nil {
				return nil, err
			}
			continue // its result is recorded
		}
		s, err := a.loadStep(j.ID, name)
		if err != nil {
			return nil, err
		}
		p := &pendingActivity{step: name, s: s, proj: engine.DeriveStepState(byStep[name])}
		state := p.proj.State
		if s != nil {
			state, p.name = s.rec.State, s.rec.Activity
		}
		if state.Terminal() {
			continue
		}
		remote := false
		for _, ev := range byStep[name] {
			if ev.Name != "" && p.name == "" {
				p.name = ev.Name
			}
			remote = remote || ev.Type == engine.EventActivityScheduled
		}
		if sel.ActivityType != "" && p.name != sel.ActivityType {
			continue
		}
		if remote {
			if tasks == nil {
				if tasks, err = a.openTasks(j); err != nil {
					return nil, err
				}
			}
			if p.task = tasks[name]; p.task == nil {
				continue // its task ended: its result is on its way
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		what := "pending activities"
		switch {
		case sel.ActivityID != "":
			what = fmt.Sprintf("pending activity %q", sel.ActivityID)
		case sel.ActivityType != "":
			what = fmt.Sprintf("pending activity of type %q", sel.ActivityType)
		}
		return nil, fmt.Errorf("%w: job %d (workflow id %q) has no %s: none the engine knows of, or its result is recorded (heddle step list %s)",
			engine.ErrUnknownActivity, j.ID, j.WorkflowID, what, j.WorkflowID)
	}
	return out, nil
}

// openTasks returns run j's open activity tasks by the step they carry out.
func (a *applier) openTasks(j *engine.Job) (map[string]*loaded, error) {
	tasks := map[string]*loaded{}
	var ids []engine.JobID
	err := a.tx.Scan(storage.ChildPrefix(uint64(j.ID)), nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.ParseChildKey(k)
		ids = append(ids, engine.JobID(id))
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		t, err := a.load(id)
		if err != nil {
			return nil, err
		}
		if !t.job.Status.Terminal() && isActivityTask(t.job) {
			tasks[t.job.ParentStep] = t
		}
	}
	return tasks, nil
}

// compareSteps orders step ids numerically when they are numbers (the
// SDK's steps), else by text after them.
func compareSteps(x, y string) int {
	nx, ex := strconv.ParseUint(x, 10, 64)
	ny, ey := strconv.ParseUint(y, 10, 64)
	switch {
	case ex == nil && ey == nil:
		switch {
		case nx < ny:
			return -1
		case nx > ny:
			return 1
		}
		return 0
	case ex == nil:
		return -1
	case ey == nil:
		return 1
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// record returns the step record of inline activity p, giving it one when
// it has none: the activity ran under the job's lease, and from now on
// takes a step lease for each try, which the engine may refuse. The record
// starts where the step's events lead, Straight: a try running under the
// job's lease when the operator acted may still end it. Its heartbeat
// moves from the job record to it.
func (a *applier) record(l *loaded, p *pendingActivity) *step {
	if p.s != nil {
		return p.s
	}
	s := newStep(l.job.ID, p.step, p.name, p.proj.State)
	r := s.rec
	r.Attempt, r.Resource, r.Avoid, r.Straight = p.proj.Attempt, p.proj.Resource, slices.Clone(p.proj.Avoid), true
	if i := slices.IndexFunc(l.job.Beats, func(b engine.StepBeat) bool { return b.Step == p.step }); i >= 0 {
		r.LastHeartbeatMS = l.job.Beats[i].AtMS
		l.job.Beats = slices.Delete(l.job.Beats, i, i+1)
	}
	p.s = s
	return s
}

// control appends an activity control event for p: on its step record
// (inline), or on the run's history beside its task's (remote).
func (a *applier) control(l *loaded, p *pendingActivity, ev engine.Event, cmd string) error {
	p.changed = true
	if p.task != nil {
		ev.Step, ev.Name = p.step, p.name
		_, err := a.appendEvent(l, ev)
		return err
	}
	_, err := a.stepEvent(l, a.record(l, p), ev, cmd)
	return err
}

// activityDone finishes an activity command: the records saved, the run
// woken when asked (an unpause, a reset or new options may let an activity
// run sooner, which its worker decides), and the answer.
func (a *applier) activityDone(l *loaded, ps []*pendingActivity, before uint64, wake string) (engine.Result, error) {
	res := &engine.ActivityResult{Job: l.job.ID}
	inline := false
	for _, p := range ps {
		res.Steps = append(res.Steps, p.step)
		if p.s != nil && p.changed {
			a.saveStep(l, p.s)
		}
		inline = inline || p.task == nil
	}
	if l.job.LastSeq == before {
		return res, nil // every activity already was as asked: nothing written
	}
	if wake != "" && inline {
		if _, err := a.wake(l, wake, ps[0].step); err != nil {
			return nil, err
		}
	}
	a.save(l)
	res.Seq = l.job.LastSeq
	return res, nil
}

func (a *applier) pauseActivity(c *engine.PauseActivity) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	ps, err := a.pendingActivities(l, c.ActivitySelector, "PauseActivity")
	if err != nil {
		return nil, err
	}
	before := l.job.LastSeq
	for _, p := range ps {
		if p.pause() != nil {
			continue
		}
		if err := a.control(l, p, engine.Event{Type: engine.EventActivityPaused, Reason: c.Reason, By: c.By}, "PauseActivity"); err != nil {
			return nil, err
		}
		if p.task != nil {
			if err := a.pauseTask(p.task, true, c.Reason, c.By); err != nil {
				return nil, err
			}
			continue
		}
		r := p.s.rec
		r.Pause = &engine.PauseInfo{AtMS: a.now, By: c.By, Reason: c.Reason}
		if r.WaiterSeq != 0 {
			// A paused step gives up its place in the resource queue: no
			// unit may go to it, and a unit free for it must not make the
			// steps behind it wait. Its next lease joins the back again.
			a.tx.Delete(storage.WaiterKey(r.WaiterSeq, uint64(r.Job), r.Step))
			r.WaiterSeq = 0
		}
		if asking(r) {
			// So with its ask on the pool's shard.
			if err := a.giveUnitBack(r); err != nil {
				return nil, err
			}
		}
	}
	return a.activityDone(l, ps, before, "")
}

func (a *applier) unpauseActivity(c *engine.UnpauseActivity) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	ps, err := a.pendingActivities(l, c.ActivitySelector, "UnpauseActivity")
	if err != nil {
		return nil, err
	}
	before := l.job.LastSeq
	for _, p := range ps {
		if p.pause() == nil {
			continue
		}
		if err := a.unpauseOne(l, p, c.Reason, c.By); err != nil {
			return nil, err
		}
		if c.ResetAttempts {
			if err := a.resetOne(l, p, false, c.Reason, c.By); err != nil {
				return nil, err
			}
		}
	}
	return a.activityDone(l, ps, before, string(engine.EventActivityUnpaused))
}

func (a *applier) resetActivity(c *engine.ResetActivity) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	ps, err := a.pendingActivities(l, c.ActivitySelector, "ResetActivity")
	if err != nil {
		return nil, err
	}
	before := l.job.LastSeq
	for _, p := range ps {
		if err := a.resetOne(l, p, c.RestoreOriginalOptions, c.Reason, c.By); err != nil {
			return nil, err
		}
		if !c.KeepPaused && p.pause() != nil {
			if err := a.unpauseOne(l, p, c.Reason, c.By); err != nil {
				return nil, err
			}
		}
	}
	return a.activityDone(l, ps, before, string(engine.EventActivityReset))
}

func (a *applier) updateActivityOptions(c *engine.UpdateActivityOptions) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	ps, err := a.pendingActivities(l, c.ActivitySelector, "UpdateActivityOptions")
	if err != nil {
		return nil, err
	}
	before := l.job.LastSeq
	for _, p := range ps {
		var next *engine.ActivityOptions
		if !c.RestoreOriginal {
			next = p.options().Merge(&c.Options)
		}
		if err := a.setOptions(l, p, next, c.By); err != nil {
			return nil, err
		}
		if t := p.task; t != nil && !c.RestoreOriginal {
			// The engine enforces an activity task's schedule-to-close and
			// schedule-to-start timeouts as its deadlines, from its
			// scheduling (the task's creation).
			if ms := c.Options.ScheduleToCloseTimeoutMS; ms > 0 {
				t.job.DeadlineMS = t.job.CreatedMS + ms
			}
			if ms := c.Options.ScheduleToStartTimeoutMS; ms > 0 && t.job.Attempt == 0 {
				t.job.StartDeadlineMS = t.job.CreatedMS + ms
			}
			a.save(t)
		}
	}
	return a.activityDone(l, ps, before, string(engine.EventActivityOptionsUpdated))
}

// pause returns p's pause: its record's, or for an activity on another
// queue, the one its events on the run's history left.
func (p *pendingActivity) pause() *engine.PauseInfo {
	if p.s != nil {
		return p.s.rec.Pause
	}
	return p.proj.Pause
}

// options returns the operator's options in force for p.
func (p *pendingActivity) options() *engine.ActivityOptions {
	switch {
	case p.s != nil:
		return p.s.rec.Options
	case p.task != nil:
		return p.task.job.ActivityOptions
	}
	return nil
}

// unpauseOne ends p's pause.
func (a *applier) unpauseOne(l *loaded, p *pendingActivity, reason, by string) error {
	if err := a.control(l, p, engine.Event{Type: engine.EventActivityUnpaused, Reason: reason, By: by}, "UnpauseActivity"); err != nil {
		return err
	}
	if p.task != nil {
		return a.pauseTask(p.task, false, reason, by)
	}
	p.s.rec.Pause = nil
	return nil
}

// pauseTask pauses (on) or unpauses activity task t for its activity's
// pause, and saves it.
func (a *applier) pauseTask(t *loaded, on bool, reason, by string) error {
	if (t.job.Pause != nil) == on {
		return nil
	}
	ev := engine.Event{Type: engine.EventWorkflowPaused, Attempt: t.job.Attempt, Reason: "activity paused", By: by}
	if !on {
		ev.Type, ev.Reason = engine.EventWorkflowUnpaused, "activity unpaused"
	}
	if reason != "" {
		ev.Reason += ": " + reason
	}
	if _, err := a.appendEvent(t, ev); err != nil {
		return err
	}
	if on {
		t.job.Pause = &engine.PauseInfo{AtMS: a.now, By: by, Reason: ev.Reason}
		a.held(t.job)
	} else {
		t.job.Pause = nil
		if err := a.released(t); err != nil {
			return err
		}
	}
	a.save(t)
	return nil
}

// resetOne starts p's attempts over: its retry policy counts from the
// tries made so far, and one waiting out a retry delay tries again at
// once. restore also drops the operator's options. A reset of an
// activity with no try since its last reset, and nothing to restore,
// writes nothing.
func (a *applier) resetOne(l *loaded, p *pendingActivity, restore bool, reason, by string) error {
	restore = restore && p.options() != nil
	if t := p.task; t != nil {
		j := t.job
		if j.AttemptBase == j.Attempt && j.Status != engine.StatusRetrying && !restore {
			return nil
		}
		if err := a.control(l, p, engine.Event{Type: engine.EventActivityReset, Reason: reason, By: by}, "ResetActivity"); err != nil {
			return err
		}
		if _, err := a.appendEvent(t, engine.Event{Type: engine.EventActivityReset, Attempt: j.Attempt, Reason: reason, By: by}); err != nil {
			return err
		}
		j.AttemptBase = j.Attempt
		if j.Status == engine.StatusRetrying {
			if _, err := a.appendEvent(t, engine.Event{Type: engine.EventJobRequeued, Reason: ReasonActivityReset}); err != nil {
				return err
			}
		}
		a.save(t)
		if restore {
			return a.setOptions(l, p, nil, by)
		}
		return nil
	}
	if p.s != nil && p.s.rec.AttemptBase == p.s.rec.Attempt && !restore {
		return nil
	}
	s := a.record(l, p)
	p.changed = true
	if _, err := a.stepEvent(l, s, engine.Event{Type: engine.EventActivityReset, StepAttempt: s.rec.Attempt, Reason: reason, By: by}, "ResetActivity"); err != nil {
		return err
	}
	s.rec.AttemptBase = s.rec.Attempt
	if restore {
		return a.setOptions(l, p, nil, by)
	}
	return nil
}

// setOptions puts next in force as p's operator options (nil: the
// workflow's own), writing nothing when they already are.
func (a *applier) setOptions(l *loaded, p *pendingActivity, next *engine.ActivityOptions, by string) error {
	if reflect.DeepEqual(p.options(), next) {
		return nil
	}
	payload := engine.EncodeActivityOptions(next)
	if err := a.control(l, p, engine.Event{Type: engine.EventActivityOptionsUpdated, Payload: payload, By: by}, "UpdateActivityOptions"); err != nil {
		return err
	}
	if t := p.task; t != nil {
		if _, err := a.appendEvent(t, engine.Event{Type: engine.EventActivityOptionsUpdated, Attempt: t.job.Attempt, Payload: payload, By: by}); err != nil {
			return err
		}
		t.job.ActivityOptions = next.Clone()
		a.save(t)
		return nil
	}
	p.s.rec.Options = next.Clone()
	return nil
}
