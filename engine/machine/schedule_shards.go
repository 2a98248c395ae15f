package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// Schedules whose runs live on other shards (docs/sharding.md, "Cross-shard
// work"). A run's workflow id (the action's, or the schedule's, with the
// nominal time after it) routes where it hashes. The schedule's shard
// starts a run elsewhere through its outbox (a CreateJob naming the
// schedule) and keeps it among its running runs, with the delivery until
// its acknowledgement gives the job id. The run's shard sends the end of
// the run's chain back (ScheduleRunClosed), which the schedule applies as
// it applies a local run's end: it forgets the run, pauses when it failed
// and its policy says so, and is due at once. The overlap policies that
// act on open runs (cancel or terminate them) reach them through the
// outbox as well.

// remoteSchedule reports whether schedule id lives on another shard.
func (a *applier) remoteSchedule(id string) bool {
	return a.shard.Sharded() && id != "" && engine.ShardOfKey(id, a.shard.Count) != a.shard.Index
}

// startElsewhere starts the run of s for nominalMS, whose workflow id wf
// routes to another shard: the create goes into the outbox for that shard.
// Whether a run of wf is open there is the target's to say: a create it
// refuses as taken counts as skipped when its answer comes back.
func (a *applier) startElsewhere(s *engine.Schedule, wf string, nominalMS int64, res *engine.ScheduleResult) error {
	cj := s.Action.CreateJob(a.now)
	cj.WorkflowID, cj.ScheduleID = wf, s.ID
	ref, err := a.sendEntry(engine.ShardOfKey(wf, a.shard.Count), cj, engine.OutboxEntry{Schedule: s.ID})
	if err != nil {
		return err
	}
	run := engine.ScheduleRun{WorkflowID: wf, NominalMS: nominalMS, ActualMS: a.now, Delivery: &ref}
	recordStart(s, run, &engine.CreateResult{WorkflowID: wf, Delivery: &ref}, res)
	return nil
}

// sendToRun sends cmd (a cancel request or a terminate of an overlap
// policy) to the shard of s's run r.
func (a *applier) sendToRun(s *engine.Schedule, r engine.ScheduleRun, cmd engine.Command) error {
	_, err := a.sendEntry(engine.ShardOfKey(r.WorkflowID, a.shard.Count), cmd, engine.OutboxEntry{Schedule: s.ID})
	return err
}

// sendScheduleEnds sends, once the command is done, the end of each run it
// closed that a schedule on another shard started, when the run is its
// chain's last: one continued as new, retried or followed by cron's next
// run is not the end, and the next run, which keeps the schedule, reports
// its own.
func (a *applier) sendScheduleEnds() error {
	for _, id := range a.scheduleEnds {
		l := a.jobs[id]
		if l == nil || l.job.NextRunID != 0 {
			continue
		}
		j := l.job
		cmd := &engine.ScheduleRunClosed{Schedule: j.ScheduleID, WorkflowID: j.WorkflowID, Job: j.ID, Status: j.Status}
		if _, err := a.send(engine.ShardOfKey(j.ScheduleID, a.shard.Count), cmd, 0, ""); err != nil {
			return err
		}
	}
	a.scheduleEnds = nil
	return nil
}

// scheduleRunClosedHere applies, on a schedule's shard, the end of a run
// the schedule started on another shard. A schedule deleted meanwhile is
// left alone.
func (a *applier) scheduleRunClosedHere(c *engine.ScheduleRunClosed) (engine.Result, error) {
	if err := a.delivered("ScheduleRunClosed"); err != nil {
		return nil, err
	}
	if a.remoteSchedule(c.Schedule) {
		return nil, engine.InvalidField("ScheduleRunClosed", "Schedule", fmt.Sprintf("%q lives on shard %d, not this shard %d",
			c.Schedule, engine.ShardOfKey(c.Schedule, a.shard.Count), a.shard.Index))
	}
	s, err := a.loadSchedule(c.Schedule)
	if errors.Is(err, engine.ErrUnknownSchedule) {
		return &engine.ScheduleResult{}, nil
	}
	if err != nil {
		return nil, err
	}
	open := s.Running[:0]
	for _, r := range s.Running {
		if r.WorkflowID != c.WorkflowID {
			open = append(open, r)
		}
	}
	s.Running = open
	for i := range s.Recent {
		if r := &s.Recent[i]; r.WorkflowID == c.WorkflowID && r.Job == 0 {
			r.Job, r.Delivery = c.Job, nil // its end came before its create's answer
		}
	}
	if s.Policy.PauseOnFailure && (c.Status == engine.StatusFailed || c.Status == engine.StatusTimedOut) {
		s.State.Paused = true
		s.State.Note = fmt.Sprintf("paused: workflow %q ended %s", c.WorkflowID, c.Status)
	}
	a.saveSchedule(s, s.DueMS)
	// Due at once, as a local run's end makes it (scheduleRunClosed): a
	// start held back by the overlap policy goes now.
	a.tx.Set(storage.SchedDueKey(a.now, s.ID), nil)
	return &engine.ScheduleResult{Schedule: s}, nil
}

// scheduleRunAnswered writes, on a schedule's shard, the answer to an entry
// the schedule sent: a run's create gives the run's job id, or, refused
// (a run of its workflow id is open there), takes the start back as
// skipped. The answers to its cancel requests and terminates change
// nothing here: the runs' ends are reported on their own.
func (a *applier) scheduleRunAnswered(e *engine.OutboxEntry, ans engine.DeliverResult) error {
	if e.Kind != engine.KindCreateJob {
		return nil
	}
	s, err := a.loadSchedule(e.Schedule)
	if errors.Is(err, engine.ErrUnknownSchedule) {
		return nil
	}
	if err != nil {
		return err
	}
	var job engine.JobID
	if ans.Error == "" {
		_, r, err := DecodeResult(ans.Result)
		if err != nil {
			return fmt.Errorf("AckDelivery.Answer.Result: %w", err)
		}
		cr, ok := r.(*engine.CreateResult)
		if !ok || cr.Job == 0 {
			return engine.InvalidField("AckDelivery", "Answer.Result", "is not a created run's job id")
		}
		job = cr.Job
	}
	mine := func(r engine.ScheduleRun) bool { return r.Delivery != nil && *r.Delivery == e.DeliveryRef }
	if job != 0 {
		for _, runs := range [][]engine.ScheduleRun{s.Running, s.Recent} {
			for i := range runs {
				if mine(runs[i]) {
					runs[i].Job, runs[i].Delivery = job, nil
				}
			}
		}
	} else {
		// Refused: the start did not happen.
		drop := func(runs []engine.ScheduleRun) ([]engine.ScheduleRun, bool) {
			out, found := runs[:0], false
			for _, r := range runs {
				if mine(r) {
					found = true
					continue
				}
				out = append(out, r)
			}
			return out, found
		}
		var started bool
		s.Running, _ = drop(s.Running)
		if s.Recent, started = drop(s.Recent); started {
			s.NumActions--
		}
		s.NumSkippedOverlap++
		if ans.Outcome != "workflow_exists" {
			s.State.Note = fmt.Sprintf("a run's start was refused on shard %d: %s", e.Target, ans.Error)
		}
		a.tx.Set(storage.SchedDueKey(a.now, s.ID), nil) // a held-back start may go now
	}
	a.saveSchedule(s, s.DueMS)
	return nil
}
