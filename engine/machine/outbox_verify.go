package machine

import (
	"errors"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// outbox checks the outbox's records of shard l (VerifyShard): every
// pending entry was written by this shard, for another shard of the
// cluster, under the key of its target and sequence, no later than the
// sequence its target's counter gave, carries a command of its kind, and
// has a live source record (the job whose step or end it carries); every
// delivered record names another shard of the cluster as its source and
// this one as its target, under its key; every remote child link belongs
// to a job of this shard, and one still pending has its entry; every
// pending signal or cancel request a step sent has its sending mark, and
// every sending mark its entry (sendingMarks).
func (v *verifier) outbox(l engine.ShardLayout, wrong func(format string, a ...any) bool) {
	jobExists := func(id engine.JobID) bool {
		ok, err := v.has(storage.JobKey(uint64(id)))
		if err != nil {
			v.add(err)
		}
		return ok || err != nil
	}
	err := v.r.Scan(storage.OutboxEntryPrefix, nil, true, func(k, b []byte) (bool, error) {
		e := new(engine.OutboxEntry)
		if _, err := storage.DecodeAt(k, b, storage.KindOutboxEntry, outboxEntryVersion, e); err != nil {
			return v.add(err), nil
		}
		at, err := storage.ParseOutboxPair(k)
		if err != nil {
			return v.add(err), nil
		}
		next, err := v.u64(storage.OutboxNextKey(at.Shard))
		if err != nil {
			return v.add(err), nil
		}
		switch {
		case e.Source != l.Index:
			return wrong("outbox entry %s was written by shard %d", e.DeliveryRef, e.Source), nil
		case e.Target != at.Shard || e.Seq != at.Seq:
			return wrong("outbox entry %s is stored under target %d seq %d", e.DeliveryRef, at.Shard, at.Seq), nil
		case e.Target >= l.Count || e.Target == l.Index:
			return wrong("outbox entry %s names shard %d, not another shard of %d", e.DeliveryRef, e.Target, l.Count), nil
		case e.Seq == 0 || e.Seq > next:
			return wrong("outbox entry %s is beyond the last sequence %d given for shard %d", e.DeliveryRef, next, e.Target), nil
		}
		cmd, err := DecodeCommand(e.Command)
		if err != nil {
			return wrong("outbox entry %s: its command: %v", e.DeliveryRef, err), nil
		}
		var source engine.JobID
		if e.Schedule != "" {
			// A schedule's: a run's create, or an overlap policy's cancel
			// request or terminate; the schedule lives here.
			switch c := cmd.(type) {
			case *engine.CreateJob:
				if c.ScheduleID != e.Schedule {
					return wrong("outbox entry %s of schedule %q creates a run of schedule %q", e.DeliveryRef, e.Schedule, c.ScheduleID), nil
				}
			case *engine.RequestCancel, *engine.Terminate:
			default:
				return wrong("outbox entry %s of schedule %q carries a %s", e.DeliveryRef, e.Schedule, cmd.Kind()), nil
			}
			if cmd.Kind() != e.Kind {
				return wrong("outbox entry %s says it carries a %s but carries a %s", e.DeliveryRef, e.Kind, cmd.Kind()), nil
			}
			// The schedule may have been deleted since: the entry is
			// delivered all the same, and its answer changes nothing.
			if engine.ShardOfKey(e.Schedule, l.Count) != l.Index {
				return wrong("outbox entry %s names schedule %q, which lives on shard %d", e.DeliveryRef, e.Schedule, engine.ShardOfKey(e.Schedule, l.Count)), nil
			}
			return true, nil
		}
		switch c := cmd.(type) {
		case *engine.ScheduleRunClosed:
			source = c.Job
		case *engine.CreateJob:
			source = c.ParentID
			if e.Parent != c.ParentID || e.Step != c.ParentStep {
				return wrong("outbox entry %s creates a child of job %d step %q but links job %d step %q", e.DeliveryRef, c.ParentID, c.ParentStep, e.Parent, e.Step), nil
			}
		case *engine.ChildClosed:
			source = c.Child
		case *engine.CreateReview:
			source = c.ParentJob
			if ok, cont := v.reviewEntry(e, c, l, wrong); !ok {
				return cont, nil
			}
		case *engine.ReviewClosed:
			// Its source is a task of this shard, not a job
			// (review_shards.go).
			if cmd.Kind() != e.Kind {
				return wrong("outbox entry %s says it carries a %s but carries a %s", e.DeliveryRef, e.Kind, cmd.Kind()), nil
			}
			_, cont := v.reviewClosedEntry(e, c, wrong)
			return cont, nil
		case *engine.CloseChild:
			source = c.Parent
		case *engine.Signal, *engine.RequestCancel:
			// A run's step signalled, or asked to cancel, a run on another
			// shard: its sending mark names this entry.
			source = e.Parent
			if sent := v.sendingMark(e.Parent, e.Step); sent != (storage.OutboxPair{Shard: e.Target, Seq: e.Seq}) {
				return wrong("outbox entry %s carries a %s of job %d step %q, whose sending mark names %+v", e.DeliveryRef, cmd.Kind(), e.Parent, e.Step, sent), nil
			}
		case *engine.AskUnit, *engine.ReleaseUnit:
			// A step of this shard asked the pool's shard for a unit, or
			// gave one back.
			if e.Target != engine.ResourceHomeShard {
				return wrong("outbox entry %s carries a %s for shard %d, which does not hold the resource pool", e.DeliveryRef, cmd.Kind(), e.Target), nil
			}
			if c, ok := cmd.(*engine.AskUnit); ok {
				source = c.Job
			} else {
				source = cmd.(*engine.ReleaseUnit).Job
			}
		case *engine.UnitGranted:
			// The pool granted a unit to a step of the target shard; the
			// record of the grant is its remote unit record, until the step
			// gives the unit back or declines it.
			if e.Target != engine.ShardOfJob(c.Job) || l.Index != engine.ResourceHomeShard {
				return wrong("outbox entry %s grants a unit to job %d, which is not a run of shard %d", e.DeliveryRef, c.Job, e.Target), nil
			}
			if cmd.Kind() != e.Kind {
				return wrong("outbox entry %s says it carries a %s but carries a %s", e.DeliveryRef, e.Kind, cmd.Kind()), nil
			}
			return true, nil
		default:
			return wrong("outbox entry %s carries a %s, which is not delivered", e.DeliveryRef, cmd.Kind()), nil
		}
		if cmd.Kind() != e.Kind {
			return wrong("outbox entry %s says it carries a %s but carries a %s", e.DeliveryRef, e.Kind, cmd.Kind()), nil
		}
		if source == 0 || !jobExists(source) {
			return wrong("outbox entry %s: its source job %d does not exist", e.DeliveryRef, source), nil
		}
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
	err = v.r.Scan(storage.OutboxDeliveredPrefix, nil, true, func(k, b []byte) (bool, error) {
		d := new(engine.DeliveredRecord)
		if _, err := storage.DecodeAt(k, b, storage.KindDelivered, deliveredVersion, d); err != nil {
			return v.add(err), nil
		}
		at, err := storage.ParseOutboxPair(k)
		switch {
		case err != nil:
			return v.add(err), nil
		case d.Source != at.Shard || d.Seq != at.Seq || d.Target != l.Index:
			return wrong("delivered record %s is stored under source %d seq %d", d.DeliveryRef, at.Shard, at.Seq), nil
		case d.Source >= l.Count || d.Source == l.Index:
			return wrong("delivered record %s names source shard %d, not another shard of %d", d.DeliveryRef, d.Source, l.Count), nil
		case d.Answer.Kind == 0 || (len(d.Answer.Result) == 0) == (d.Answer.Error == ""):
			return wrong("delivered record %s holds neither a result nor a refusal, or both", d.DeliveryRef), nil
		}
		if acked, err := v.u64(storage.AckedBelowKey(d.Source)); err != nil {
			return v.add(err), nil
		} else if d.Seq < acked {
			return wrong("delivered record %s is below the acknowledged sequence %d of its source", d.DeliveryRef, acked), nil
		}
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
	err = v.r.Scan(storage.RemoteChildPrefix, nil, true, func(k, b []byte) (bool, error) {
		c := new(engine.RemoteChild)
		if _, err := storage.DecodeAt(k, b, storage.KindRemoteChild, remoteChildVersion, c); err != nil {
			return v.add(err), nil
		}
		parent, step, err := storage.ParseRemoteChildKey(k)
		switch {
		case err != nil:
			return v.add(err), nil
		case uint64(c.Parent) != parent || c.Step != step:
			return wrong("remote child link of job %d step %q is stored under job %d step %q", c.Parent, c.Step, parent, step), nil
		case !jobExists(c.Parent):
			return wrong("remote child link of job %d step %q: the job does not exist", c.Parent, c.Step), nil
		case c.Delivery.Source != l.Index || c.Delivery.Target >= l.Count || c.Delivery.Target == l.Index:
			return wrong("remote child link of job %d step %q names %s", c.Parent, c.Step, c.Delivery), nil
		case c.Child != 0 && engine.ShardOfJob(c.Child) != c.Delivery.Target:
			return wrong("remote child link of job %d step %q names child %d, not of shard %d", c.Parent, c.Step, c.Child, c.Delivery.Target), nil
		}
		if c.Closed && c.Child == 0 {
			return wrong("remote child link of job %d step %q is closed without a child", c.Parent, c.Step), nil
		}
		if c.Pending() {
			ok, err := v.has(storage.OutboxEntryKey(c.Delivery.Target, c.Delivery.Seq))
			if err != nil {
				return v.add(err), nil
			}
			if !ok {
				return wrong("remote child link of job %d step %q waits for %s, which is not pending", c.Parent, c.Step, c.Delivery), nil
			}
		}
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
}

// sendingMark returns the entry the sending mark of job's step names, the
// zero pair when there is none.
func (v *verifier) sendingMark(job engine.JobID, step string) storage.OutboxPair {
	if job == 0 || step == "" {
		return storage.OutboxPair{}
	}
	b, err := v.r.Get(storage.SendingKey(uint64(job), step))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.OutboxPair{}
	}
	if err != nil {
		v.add(err)
		return storage.OutboxPair{}
	}
	p, err := storage.ParseSendingValue(b)
	if err != nil {
		v.add(err)
	}
	return p
}

// sendingMarks checks that every sending mark belongs to a job of this
// shard and names a pending entry that carries that job's step.
func (v *verifier) sendingMarks(l engine.ShardLayout, wrong func(format string, a ...any) bool) {
	err := v.r.Scan(storage.SendingPrefix, nil, true, func(k, b []byte) (bool, error) {
		job, step, err := storage.ParseSendingKey(k)
		if err != nil {
			return v.add(err), nil
		}
		at, err := storage.ParseSendingValue(b)
		if err != nil {
			return v.add(err), nil
		}
		if l.Sharded() && engine.ShardOfJob(engine.JobID(job)) != l.Index {
			return wrong("the sending mark of job %d step %q belongs to shard %d", job, step, engine.ShardOfJob(engine.JobID(job))), nil
		}
		eb, err := v.r.Get(storage.OutboxEntryKey(at.Shard, at.Seq))
		if errors.Is(err, storage.ErrNotFound) {
			return wrong("the sending mark of job %d step %q names entry %d→%d #%d, which is not pending", job, step, l.Index, at.Shard, at.Seq), nil
		}
		if err != nil {
			return v.add(err), nil
		}
		e := new(engine.OutboxEntry)
		if _, err := storage.DecodeAt(storage.OutboxEntryKey(at.Shard, at.Seq), eb, storage.KindOutboxEntry, outboxEntryVersion, e); err != nil {
			return v.add(err), nil
		}
		if uint64(e.Parent) != job || e.Step != step || (e.Kind != engine.KindSignal && e.Kind != engine.KindRequestCancel) {
			return wrong("the sending mark of job %d step %q names %s, a %s of job %d step %q", job, step, e.DeliveryRef, e.Kind, e.Parent, e.Step), nil
		}
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
}

// u64 reads a counter, 0 when absent.
func (v *verifier) u64(key []byte) (uint64, error) {
	b, err := v.r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return storage.ParseU64(b)
}

// has reports whether key is stored.
func (v *verifier) has(key []byte) (bool, error) {
	_, err := v.r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
