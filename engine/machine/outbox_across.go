package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// VerifyAcrossShards checks what links the shards of a sharded cluster of
// count shards (docs/sharding.md, "Cross-shard work"), beyond what
// VerifyShard checks of each alone. view reads shard k's store (its
// leader's, every shard at one moment: a quiet cluster, or a restored
// backup). It checks that:
//
//   - a parent's link to a child on another shard that names the child
//     finds it there, a run of the link's workflow id naming the parent and
//     its step;
//   - a run whose parent lives on another shard has its parent's link, not
//     a refused one, for its workflow id;
//   - a child that ended (the last run of its chain) has its end recorded
//     on its parent's link, or on its way there (a pending entry on its
//     shard);
//   - a link the child's end reached has the effect on the parent's step,
//     unless the parent ended;
//   - no entry is still pending on its source that its target was told is
//     acknowledged (below the target's acknowledged mark for the source);
//   - a schedule's running run on another shard whose job id it knows is
//     there, a run of its workflow id started by that schedule;
//   - a step that holds a unit of the pool on another shard is counted by
//     the pool's shard (its remote unit record for that try, for that
//     resource), a step that asks for one has its ask there or on its way,
//     and every remote unit record of the pool's shard is of a step that
//     holds or asks for it, or has a grant, release or ask about it on its
//     way: no unit is leaked or leased twice;
//   - the same of a workflow step's review task on another shard as of a
//     child (reviewsAcross.check): the link and the task name each other,
//     an ended task's end is on the link or on its way, and a link it
//     reached has the step's effect.
//
// It returns the problems found, up to max (0: no bound).
func VerifyAcrossShards(count int, view func(k int, fn func(r *storage.Reader) error) error, max int) []error {
	v := &verifier{max: max}
	type link struct {
		shard int
		c     *engine.RemoteChild
	}
	links := map[string]link{} // by parent and step
	linkKey := func(parent engine.JobID, step string) string { return fmt.Sprintf("%d/%s", parent, step) }
	type child struct {
		shard int
		j     *engine.Job
	}
	var children []child
	jobs := map[engine.JobID]*engine.Job{}
	// closing holds the children whose end is on its way: a pending
	// ChildClosed entry, by parent and step.
	closing := map[string]bool{}
	effects := map[string]bool{}
	var pending []engine.DeliveryRef
	type scheduleRun struct {
		shard    int
		schedule string
		run      engine.ScheduleRun
	}
	var scheduleRuns []scheduleRun
	ackedBelow := map[[2]int]uint64{} // by target and source
	// The unit checks: the steps holding or asking for a unit of the pool
	// on another shard, the pool shard's records of them, and the unit
	// commands on their way, all by job and step.
	unitSteps := map[string]*engine.StepRecord{}
	units := map[string]*engine.RemoteUnit{}
	unitsMoving := map[string]bool{}
	reviews := newReviewsAcross()
	for k := 0; k < count; k++ {
		err := view(k, func(r *storage.Reader) error {
			for s := 0; s < count; s++ {
				if s == k {
					continue
				}
				b, err := r.Get(storage.AckedBelowKey(s))
				switch {
				case err == nil:
					n, err := storage.ParseU64(b)
					if err != nil {
						return err
					}
					ackedBelow[[2]int{k, s}] = n
				case !errors.Is(err, storage.ErrNotFound):
					return err
				}
			}
			if err := r.Scan(storage.RemoteChildPrefix, nil, true, func(key, b []byte) (bool, error) {
				c := new(engine.RemoteChild)
				if _, err := storage.DecodeAt(key, b, storage.KindRemoteChild, remoteChildVersion, c); err != nil {
					return v.add(err), nil
				}
				links[linkKey(c.Parent, c.Step)] = link{k, c}
				e, err := r.Get(storage.EffectKey(uint64(c.Parent), c.Step))
				switch {
				case err == nil && len(e) > 0:
					effects[linkKey(c.Parent, c.Step)] = true
				case err != nil && !errors.Is(err, storage.ErrNotFound):
					return false, err
				}
				return true, nil
			}); err != nil {
				return err
			}
			if err := reviews.read(k, r, v); err != nil {
				return err
			}
			if err := r.Scan(storage.SchedulePrefix, nil, true, func(key, b []byte) (bool, error) {
				s := new(engine.Schedule)
				if _, err := storage.DecodeAt(key, b, storage.KindSchedule, scheduleVersion, s); err != nil {
					return v.add(err), nil
				}
				for _, r := range s.Running {
					if r.Job != 0 && engine.ShardOfJob(r.Job) != k {
						scheduleRuns = append(scheduleRuns, scheduleRun{k, s.ID, r})
					}
				}
				return true, nil
			}); err != nil {
				return err
			}
			if err := r.Scan([]byte{storage.PrefixStep}, nil, true, func(key, b []byte) (bool, error) {
				rec := new(engine.StepRecord)
				if _, err := storage.DecodeAt(key, b, storage.KindStep, stepVersion, rec); err != nil {
					return v.add(err), nil
				}
				if rec.UnitTry != 0 {
					unitSteps[linkKey(rec.Job, rec.Step)] = rec
				}
				return true, nil
			}); err != nil {
				return err
			}
			rus, err := ReadRemoteUnits(r)
			if err != nil {
				return err
			}
			for _, u := range rus {
				units[linkKey(u.Job, u.Step)] = u
			}
			if err := r.Scan(storage.JobPrefix, nil, true, func(key, b []byte) (bool, error) {
				j := new(engine.Job)
				if _, err := storage.DecodeAt(key, b, storage.KindJob, jobVersion, j); err != nil {
					return v.add(err), nil
				}
				jobs[j.ID] = j
				if j.ParentID != 0 && engine.ShardOfJob(j.ParentID) != k {
					children = append(children, child{k, j})
				}
				return true, nil
			}); err != nil {
				return err
			}
			return r.Scan(storage.OutboxEntryPrefix, nil, true, func(key, b []byte) (bool, error) {
				e := new(engine.OutboxEntry)
				if _, err := storage.DecodeAt(key, b, storage.KindOutboxEntry, outboxEntryVersion, e); err != nil {
					return v.add(err), nil
				}
				pending = append(pending, e.DeliveryRef)
				if e.Kind == engine.KindReviewClosed {
					return reviews.entry(e, v), nil
				}
				if e.Kind != engine.KindChildClosed && !unitKind(e.Kind) {
					return true, nil
				}
				cmd, err := DecodeCommand(e.Command)
				if err != nil {
					return v.add(err), nil
				}
				switch c := cmd.(type) {
				case *engine.ChildClosed:
					closing[linkKey(c.Parent, c.Step)] = true
				case *engine.AskUnit:
					unitsMoving[linkKey(c.Job, c.Step)] = true
				case *engine.UnitGranted:
					unitsMoving[linkKey(c.Job, c.Step)] = true
				case *engine.ReleaseUnit:
					unitsMoving[linkKey(c.Job, c.Step)] = true
				}
				return true, nil
			})
		})
		if err != nil {
			v.add(fmt.Errorf("reading shard %d: %w", k, err))
		}
	}
	for _, e := range pending {
		if below := ackedBelow[[2]int{e.Target, e.Source}]; e.Seq < below {
			v.add(fmt.Errorf("%s is pending on its source, but shard %d was told every entry of shard %d below %d is acknowledged", e, e.Target, e.Source, below))
		}
	}
	for key, rec := range unitSteps {
		u := units[key]
		switch {
		case !asking(rec) && (u == nil || u.StepAttempt != rec.UnitTry || u.Resource != rec.Resource):
			v.add(fmt.Errorf("step %q of job %d holds a unit of %q granted to try %d, which the pool's shard does not count (its record: %v)",
				rec.Step, rec.Job, rec.Resource, rec.UnitTry, u))
		case asking(rec) && (u == nil || u.StepAttempt != rec.UnitTry) && !unitsMoving[key]:
			v.add(fmt.Errorf("step %q of job %d asks for a unit for try %d, but the pool's shard has no such ask, nor is one on its way",
				rec.Step, rec.Job, rec.UnitTry))
		}
	}
	for key, u := range units {
		rec := unitSteps[key]
		if rec != nil && rec.UnitTry == u.StepAttempt && (u.Resource != "" || asking(rec)) {
			continue // held, or asked for (and perhaps granted, on its way)
		}
		if !unitsMoving[key] {
			v.add(fmt.Errorf("the pool's shard counts a unit (or an ask) of %s, which its step neither holds nor asks for, and nothing about it is on its way", u))
		}
	}
	for _, sr := range scheduleRuns {
		j := jobs[sr.run.Job]
		switch {
		case j == nil:
			v.add(fmt.Errorf("schedule %q on shard %d runs job %d (%q), which shard %d does not hold", sr.schedule, sr.shard, sr.run.Job,
				sr.run.WorkflowID, engine.ShardOfJob(sr.run.Job)))
		case j.WorkflowID != sr.run.WorkflowID || j.ScheduleID != sr.schedule:
			v.add(fmt.Errorf("schedule %q runs job %d as %q, but the job is %q of schedule %q", sr.schedule, sr.run.Job, sr.run.WorkflowID,
				j.WorkflowID, j.ScheduleID))
		}
	}
	for key, l := range links {
		c := l.c
		if c.Child != 0 {
			j := jobs[c.Child]
			switch {
			case j == nil:
				v.add(fmt.Errorf("job %d step %q on shard %d links child %d, which shard %d does not hold", c.Parent, c.Step, l.shard, c.Child, c.Delivery.Target))
			case j.ParentID != c.Parent || j.ParentStep != c.Step || j.WorkflowID != c.WorkflowID:
				v.add(fmt.Errorf("job %d step %q links child %d, whose parent is %d step %q and workflow id %q", c.Parent, c.Step, c.Child, j.ParentID, j.ParentStep, j.WorkflowID))
			}
		}
		if c.Closed {
			if p := jobs[c.Parent]; p != nil && !p.Status.Terminal() && !effects[key] {
				v.add(fmt.Errorf("job %d step %q: its child's end arrived, but the step has no effect", c.Parent, c.Step))
			}
		}
	}
	for _, ch := range children {
		j := ch.j
		key := linkKey(j.ParentID, j.ParentStep)
		l, ok := links[key]
		switch {
		case !ok:
			v.add(fmt.Errorf("job %d on shard %d has parent %d step %q, which has no link to it", j.ID, ch.shard, j.ParentID, j.ParentStep))
			continue
		case l.c.Error != "":
			v.add(fmt.Errorf("job %d on shard %d exists, but its parent's link %d step %q says its create was refused (%s)", j.ID, ch.shard, j.ParentID, j.ParentStep, l.c.Error))
			continue
		case l.c.WorkflowID != j.WorkflowID:
			v.add(fmt.Errorf("job %d on shard %d has workflow id %q, but its parent's link names %q", j.ID, ch.shard, j.WorkflowID, l.c.WorkflowID))
			continue
		}
		if j.Status.Terminal() && j.NextRunID == 0 && !l.c.Closed && !closing[key] {
			v.add(fmt.Errorf("job %d on shard %d ended, but its end is neither on its parent's link %d step %q nor on its way", j.ID, ch.shard, j.ParentID, j.ParentStep))
		}
	}
	reviews.check(v, jobs)
	return v.errs
}
