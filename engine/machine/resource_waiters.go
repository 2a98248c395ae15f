package machine

import (
	"errors"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// ReadResourceWaiters reads up to limit steps of the waiter queue from r,
// in queue order. The queue keeps the entries of steps that stopped
// waiting until a freed unit is offered past them; those are skipped: an
// entry counts while its step record still holds its seq and its job is
// open. A step of another shard (its remote unit record) counts while the
// record holds its seq.
func ReadResourceWaiters(r *storage.Reader, limit int) (_ []engine.ResourceWaiter, err error) {
	defer markStorage(&err)
	out := []engine.ResourceWaiter{}
	var low uint64
	b, err := r.Get(storage.KeyLowWaiter)
	switch {
	case err == nil:
		if low, err = storage.ParseU64(b); err != nil {
			return nil, err
		}
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	}
	err = r.Scan(storage.WaiterPrefix, storage.WaiterKey(low, 0, ""), false, func(k, _ []byte) (bool, error) {
		e, err := storage.ParseWaiterKey(k)
		if err != nil {
			return false, err
		}
		rec, err := readStep(r.Get, engine.JobID(e.Job), e.Step)
		if err != nil {
			return false, err
		}
		if rec == nil {
			// A step of another shard waits through its remote unit record.
			u, err := readRemoteUnit(r.Get, engine.JobID(e.Job), e.Step)
			if err != nil || u == nil || u.WaiterSeq != e.Seq {
				return err == nil, err
			}
			out = append(out, engine.ResourceWaiter{Seq: e.Seq, Job: u.Job, Step: u.Step, Activity: u.Activity,
				Attempt: u.StepAttempt, Capabilities: u.Capabilities, Selector: u.Selector, Avoid: u.Avoid, UpdatedMS: u.AskedMS})
			return len(out) < limit, nil
		}
		if rec.WaiterSeq != e.Seq {
			return true, nil
		}
		j, err := ReadJob(r, engine.JobID(e.Job))
		if err != nil {
			return false, err
		}
		if j.Status.Terminal() {
			return true, nil
		}
		out = append(out, engine.ResourceWaiter{Seq: e.Seq, Job: rec.Job, Step: rec.Step, Activity: rec.Activity,
			Attempt: rec.Attempt, Capabilities: rec.Capabilities, Selector: rec.Selector, Avoid: rec.Avoid,
			UpdatedMS: rec.UpdatedMS})
		return len(out) < limit, nil
	})
	return out, err
}
