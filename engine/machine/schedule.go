package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

func (a *applier) loadSchedule(id string) (*engine.Schedule, error) {
	key := storage.ScheduleKey(id)
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", engine.ErrUnknownSchedule, id)
	}
	if err != nil {
		return nil, err
	}
	s := new(engine.Schedule)
	if _, err := storage.DecodeAt(key, b, storage.KindSchedule, scheduleVersion, s); err != nil {
		return nil, err
	}
	return s, nil
}

// saveSchedule writes s and, unless its live due entry is already at
// s.DueMS (liveDueMS: the time of the entry it has, 0 for none), its entry
// in the schedule-due index. As with timers, the entry it leaves behind is not
// deleted (that would leave a deletion marker ahead of the index's
// low-water mark): the sweep that reaches it finds it stale and drops it.
func (a *applier) saveSchedule(s *engine.Schedule, liveDueMS int64) {
	s.UpdatedMS = a.now
	a.tx.Set(storage.ScheduleKey(s.ID), EncodeSchedule(s))
	if s.DueMS != 0 && s.DueMS != liveDueMS {
		a.tx.Set(storage.SchedDueKey(s.DueMS, s.ID), nil)
	}
}

func (a *applier) createSchedule(c *engine.CreateSchedule) (engine.Result, error) {
	if err := a.scheduleOnShard("CreateSchedule", c.ID); err != nil {
		return nil, err
	}
	if _, err := a.loadSchedule(c.ID); err == nil {
		return nil, fmt.Errorf("%w: %q", engine.ErrScheduleExists, c.ID)
	} else if !errors.Is(err, engine.ErrUnknownSchedule) {
		return nil, err
	}
	s := &engine.Schedule{ID: c.ID, Spec: c.Spec, Action: c.Action, Policy: c.Policy, State: c.State, CreatedMS: a.now}
	res := &engine.ScheduleResult{Schedule: s}
	if c.TriggerImmediately {
		if err := a.act(s, a.now, a.now, overlapOf(s, engine.OverlapUnspecified), res); err != nil {
			return nil, err
		}
	}
	if err := a.reschedule(s, 0, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (a *applier) updateSchedule(c *engine.UpdateSchedule) (engine.Result, error) {
	if err := a.scheduleOnShard("UpdateSchedule", c.ID); err != nil {
		return nil, err
	}
	s, err := a.loadSchedule(c.ID)
	if err != nil {
		return nil, err
	}
	s.Spec, s.Action, s.Policy, s.State = c.Spec, c.Action, c.Policy, c.State
	s.NextNominalMS = 0 // computed afresh from now
	res := &engine.ScheduleResult{Schedule: s}
	if err := a.reschedule(s, s.DueMS, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (a *applier) pauseSchedule(c *engine.PauseSchedule) (engine.Result, error) {
	s, err := a.loadSchedule(c.ID)
	if err != nil {
		return nil, err
	}
	was := s.State.Paused
	s.State.Paused, s.State.Note = c.Paused, c.Note
	if was && !c.Paused {
		s.NextNominalMS = 0 // go on from now: times passed while paused are not caught up
	}
	res := &engine.ScheduleResult{Schedule: s}
	if err := a.reschedule(s, s.DueMS, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (a *applier) triggerSchedule(c *engine.TriggerSchedule) (engine.Result, error) {
	s, err := a.loadSchedule(c.ID)
	if err != nil {
		return nil, err
	}
	res := &engine.ScheduleResult{Schedule: s}
	a.refreshRunning(s)
	if err := a.drainBuffer(s, res); err != nil {
		return nil, err
	}
	if err := a.act(s, a.now, a.now, overlapOf(s, c.Overlap), res); err != nil {
		return nil, err
	}
	if err := a.reschedule(s, s.DueMS, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (a *applier) deleteSchedule(c *engine.DeleteSchedule) (engine.Result, error) {
	if _, err := a.loadSchedule(c.ID); err != nil {
		return nil, err
	}
	// The due entry stays behind, stale, until its sweep drops it.
	a.tx.Delete(storage.ScheduleKey(c.ID))
	return &engine.ScheduleResult{}, nil
}

// fireSchedules acts on the schedules whose due entries have come. An
// entry whose schedule is gone, or whose time is not the schedule's due
// time, is stale, but acting on it is harmless: it only looks again.
//
// Unlike the other sweeps, one schedule can write a lot (it may start many
// runs), so the sweep also stops once its writes pass
// scheduleSweepBudgetBytes or scheduleSweepBudgetKeys, leaving the entries
// it did not reach due (More), well below a transaction's limit: a sweep
// over the limit would fail, and be proposed again, for ever.
func (a *applier) fireSchedules(c *engine.FireSchedules) (engine.Result, error) {
	low, err := a.u64(storage.KeyLowSchedDue)
	if err != nil {
		return nil, err
	}
	type due struct {
		tk  storage.TimeKey
		key []byte
	}
	var dues []due
	res := &engine.SweepResult{}
	start := append(append([]byte(nil), storage.SchedDuePrefix...), storage.U64(low)...)
	err = a.tx.Scan(storage.SchedDuePrefix, start, false, func(k, _ []byte) (bool, error) {
		tk, err := storage.ParseTimeKey(k)
		if err != nil {
			return false, err
		}
		if tk.AtMS > a.now {
			return false, nil
		}
		if len(dues) == c.Max {
			res.More = true
			return false, nil
		}
		dues = append(dues, due{tk, k})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	mark := a.now
	done := 0
	for _, d := range dues {
		if a.tx.Bytes() > scheduleSweepBudgetBytes || a.tx.Len() > scheduleSweepBudgetKeys {
			res.More, mark = true, d.tk.AtMS
			break
		}
		a.tx.Delete(d.key)
		done++
		if err := a.fireSchedule(d.tk, res); err != nil {
			return nil, err
		}
	}
	if res.More && done == len(dues) {
		mark = dues[len(dues)-1].tk.AtMS
	}
	if done > 0 && uint64(mark) > low {
		a.tx.Set(storage.KeyLowSchedDue, storage.U64(uint64(mark)))
	}
	return res, nil
}

// The write budget of one FireSchedules, about a fifth of a transaction's
// limit with Badger's default 16 MiB memtables.
const (
	scheduleSweepBudgetBytes = 512 << 10
	scheduleSweepBudgetKeys  = 4000
)

// fireSchedule brings the schedule of one due entry up to now.
func (a *applier) fireSchedule(tk storage.TimeKey, res *engine.SweepResult) error {
	s, err := a.loadSchedule(tk.Rest)
	if errors.Is(err, engine.ErrUnknownSchedule) {
		return nil
	}
	if err != nil {
		return err
	}
	old := s.DueMS
	if old == tk.AtMS {
		old = 0 // the live entry was just removed: a new one is needed
	}
	sr := &engine.ScheduleResult{}
	if err := a.reschedule(s, old, sr); err != nil {
		return err
	}
	for _, st := range sr.Started {
		res.Jobs = append(res.Jobs, st.Job)
		res.Ready = append(res.Ready, st.Job)
	}
	return nil
}

// overlapOf is the policy an action of s takes: p, or the schedule's, or Skip.
func overlapOf(s *engine.Schedule, p engine.OverlapPolicy) engine.OverlapPolicy {
	if p == engine.OverlapUnspecified {
		p = s.Policy.Overlap
	}
	if p == engine.OverlapUnspecified {
		p = engine.OverlapSkip
	}
	return p
}

// reschedule brings s up to now and saves it: it forgets the runs that
// closed, starts buffered actions the overlap policy now allows, acts on
// every spec time that has come (up to maxScheduleStepsPerApply), and sets
// the due time for the next one. oldDueMS is the time of the live due
// entry s already has (0: none).
func (a *applier) reschedule(s *engine.Schedule, oldDueMS int64, res *engine.ScheduleResult) error {
	spec, _, err := engine.CompileSpec(&s.Spec)
	if err != nil {
		return err // checked when stored: the record is corrupt
	}
	a.refreshRunning(s)
	if err := a.drainBuffer(s, res); err != nil {
		return err
	}
	if s.NextNominalMS == 0 && !s.State.Paused {
		s.NextNominalMS = spec.Next(a.now)
	}
	window := s.Policy.CatchupWindowMS
	if window == 0 {
		window = engine.DefaultCatchupWindowMS
	}
	steps, started := 0, len(res.Started)
	// Each start may write a large input: past the sweep's write budget
	// the schedule stops (after one step at least, so it always moves on)
	// and stays due now.
	overBudget := func() bool {
		return steps > 0 && (a.tx.Bytes() > scheduleSweepBudgetBytes || a.tx.Len() > scheduleSweepBudgetKeys)
	}
	for !s.State.Paused && s.NextNominalMS != 0 && steps < maxScheduleStepsPerApply && len(res.Started)-started < maxScheduleStartsPerApply && !overBudget() {
		t := s.NextNominalMS
		actual := t + engine.ScheduleJitter(s.ID, t, s.Spec.JitterMS)
		if actual > a.now {
			break
		}
		steps++
		switch {
		case a.now-actual > window:
			s.NumMissedCatchup++
		case s.State.LimitedActions && s.State.RemainingActions <= 0:
		default:
			if s.State.LimitedActions {
				s.State.RemainingActions--
			}
			if err := a.act(s, t, actual, overlapOf(s, engine.OverlapUnspecified), res); err != nil {
				return err
			}
		}
		s.NextNominalMS = spec.Next(t)
	}
	switch {
	case steps == maxScheduleStepsPerApply || len(res.Started)-started == maxScheduleStartsPerApply || (overBudget() && s.NextNominalMS != 0 &&
		s.NextNominalMS+engine.ScheduleJitter(s.ID, s.NextNominalMS, s.Spec.JitterMS) <= a.now):
		s.DueMS = a.now // more times have come: the next sweep goes on
	case s.State.Paused || s.NextNominalMS == 0 || (s.State.LimitedActions && s.State.RemainingActions <= 0):
		s.DueMS = 0
	default:
		s.DueMS = s.NextNominalMS + engine.ScheduleJitter(s.ID, s.NextNominalMS, s.Spec.JitterMS)
	}
	a.saveSchedule(s, oldDueMS)
	res.Schedule = s
	return nil
}

// refreshRunning forgets the runs of s that closed, pausing s when one
// failed and its policy says so.
func (a *applier) refreshRunning(s *engine.Schedule) {
	open := s.Running[:0]
	for _, r := range s.Running {
		if a.remoteWorkflow(r.WorkflowID) {
			// On another shard: its end is delivered here
			// (ScheduleRunClosed), which forgets it.
			open = append(open, r)
			continue
		}
		l, err := a.resolve(engine.Target{WorkflowID: r.WorkflowID})
		if err != nil || l.job.Status.Terminal() {
			if err == nil && s.Policy.PauseOnFailure && (l.job.Status == engine.StatusFailed || l.job.Status == engine.StatusTimedOut) {
				s.State.Paused = true
				s.State.Note = fmt.Sprintf("paused: workflow %q ended %s", r.WorkflowID, l.job.Status)
			}
			continue
		}
		open = append(open, r)
	}
	s.Running = open
}

// drainBuffer starts buffered actions while nothing of s is open.
func (a *applier) drainBuffer(s *engine.Schedule, res *engine.ScheduleResult) error {
	for len(s.Buffered) > 0 && len(s.Running) == 0 {
		b := s.Buffered[0]
		s.Buffered = s.Buffered[1:]
		if err := a.start(s, b.NominalMS, res); err != nil {
			return err
		}
	}
	if len(s.Buffered) == 0 {
		s.Buffered = nil
	}
	return nil
}

// act takes the action of s for nominalMS under overlap policy p.
func (a *applier) act(s *engine.Schedule, nominalMS, actualMS int64, p engine.OverlapPolicy, res *engine.ScheduleResult) error {
	_ = actualMS // the start is recorded at now, which is actualMS or later
	if len(s.Running) == 0 && len(s.Buffered) == 0 {
		return a.start(s, nominalMS, res)
	}
	switch p {
	case engine.OverlapAllowAll:
		return a.start(s, nominalMS, res)
	case engine.OverlapBufferOne:
		if len(s.Buffered) == 0 {
			s.Buffered = append(s.Buffered, engine.BufferedStart{NominalMS: nominalMS, Overlap: p})
			return nil
		}
	case engine.OverlapBufferAll:
		if len(s.Buffered) < engine.MaxScheduleBuffer {
			s.Buffered = append(s.Buffered, engine.BufferedStart{NominalMS: nominalMS, Overlap: p})
			return nil
		}
	case engine.OverlapCancelOther:
		for _, r := range s.Running {
			if a.remoteWorkflow(r.WorkflowID) {
				if err := a.sendToRun(s, r, &engine.RequestCancel{Target: engine.Target{WorkflowID: r.WorkflowID},
					Reason: "schedule " + s.ID + ": overlap policy CancelOther"}); err != nil {
					return err
				}
				continue
			}
			l, err := a.resolve(engine.Target{WorkflowID: r.WorkflowID})
			if err != nil {
				return err
			}
			if !l.job.CancelRequested {
				if _, err := a.requestCancel(&engine.RequestCancel{Target: engine.Target{Job: l.job.ID}, Reason: "schedule " + s.ID + ": overlap policy CancelOther"}); err != nil {
					return err
				}
			}
		}
		// The new run goes once the cancelled ones have closed; a newer
		// action replaces one still waiting.
		s.Buffered = []engine.BufferedStart{{NominalMS: nominalMS, Overlap: p}}
		return nil
	case engine.OverlapTerminateOther:
		for _, r := range s.Running {
			reason := "schedule " + s.ID + ": overlap policy TerminateOther"
			if a.remoteWorkflow(r.WorkflowID) {
				if err := a.sendToRun(s, r, &engine.Terminate{Target: engine.Target{WorkflowID: r.WorkflowID}, Reason: reason}); err != nil {
					return err
				}
				continue
			}
			_, err := a.lifecycle(engine.Target{WorkflowID: r.WorkflowID},
				engine.Event{Type: engine.EventJobTerminated, Reason: reason, Payload: engine.EncodeTerminatedFailure(reason)})
			if err != nil {
				return err
			}
		}
		s.Running, s.Buffered = nil, nil
		return a.start(s, nominalMS, res)
	}
	s.NumSkippedOverlap++
	return nil
}

// start starts the run of s for nominalMS. A run of that workflow id still
// open (two triggers in one second) makes it count as skipped.
func (a *applier) start(s *engine.Schedule, nominalMS int64, res *engine.ScheduleResult) error {
	wf := engine.ScheduleWorkflowID(s, nominalMS)
	if a.remoteWorkflow(wf) {
		return a.startElsewhere(s, wf, nominalMS, res)
	}
	cur, err := a.resolve(engine.Target{WorkflowID: wf})
	switch {
	case errors.Is(err, engine.ErrUnknownJob):
	case err != nil:
		return err
	case !cur.job.Status.Terminal():
		s.NumSkippedOverlap++
		return nil
	}
	cj := s.Action.CreateJob(a.now)
	cj.WorkflowID = wf
	r, err := a.create(cj)
	if err != nil {
		return err
	}
	cr := r.(*engine.CreateResult)
	l, err := a.load(cr.Job)
	if err != nil {
		return err
	}
	l.job.ScheduleID = s.ID
	a.save(l)
	recordStart(s, engine.ScheduleRun{WorkflowID: wf, Job: cr.Job, NominalMS: nominalMS, ActualMS: a.now}, cr, res)
	return nil
}

// recordStart records run, which s just started, among its running and
// recent runs and in res.
func recordStart(s *engine.Schedule, run engine.ScheduleRun, cr *engine.CreateResult, res *engine.ScheduleResult) {
	s.Running = append(s.Running, run)
	if n := len(s.Running); n > engine.MaxScheduleRunning {
		// Only AllowAll gets here: its runs need no tracking to decide.
		s.Running = append([]engine.ScheduleRun(nil), s.Running[n-engine.MaxScheduleRunning:]...)
	}
	s.Recent = append(s.Recent, run)
	if n := len(s.Recent); n > engine.MaxScheduleRecent {
		s.Recent = append([]engine.ScheduleRun(nil), s.Recent[n-engine.MaxScheduleRecent:]...)
	}
	s.NumActions++
	res.Started = append(res.Started, *cr)
}

// scheduleRunClosed puts the schedule that started j (if any) in the
// schedule-due index at now, so that a start its overlap policy held back
// goes at once. Only the index entry is written: the schedule record may be
// the one this very command is changing. A schedule on another shard is
// sent the end instead, once the command is done (sendScheduleEnds).
func (a *applier) scheduleRunClosed(j *engine.Job) {
	switch {
	case j.ScheduleID == "":
	case a.remoteSchedule(j.ScheduleID):
		a.scheduleEnds = append(a.scheduleEnds, j.ID)
	default:
		a.tx.Set(storage.SchedDueKey(a.now, j.ScheduleID), nil)
	}
}

// maxScheduleStepsPerApply bounds the spec times one schedule goes through
// in one command, and maxScheduleStartsPerApply the runs it starts; a
// schedule with more due stays due now, and the next sweep goes on. A
// backfill starts at most as many runs as one command may.
const (
	maxScheduleStepsPerApply  = 1000
	maxScheduleStartsPerApply = engine.MaxBackfillTimes
)
