package engine

import (
	"fmt"

	"github.com/heddlewf/heddle/storage"
)

func (a *applier) claim(c *Claim) (Result, error) {
	// Every ready entry's time is the Now of the command that made the job
	// ready, and Now only grows, so the entries left after a claim all sort
	// at or after the last one claimed: that is the queue's low-water mark.
	lowKey := storage.LowReadyKey(c.Queue)
	low, err := a.u64(lowKey)
	if err != nil {
		return nil, err
	}
	var ids []JobID
	var lastReady int64
	start := storage.ReadyKey(c.Queue, int64(low), 0)
	err = a.tx.Scan(storage.ReadyPrefix(c.Queue), start, false, func(k, _ []byte) (bool, error) {
		e, err := storage.ParseReadyKey(k)
		if err != nil {
			return false, err
		}
		ids = append(ids, JobID(e.Job))
		lastReady = e.ReadyAtMS
		return len(ids) < c.Max, nil
	})
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 && uint64(lastReady) > low {
		a.tx.Set(lowKey, storage.U64(uint64(lastReady)))
	}
	res := &ClaimResult{}
	for _, id := range ids {
		l, err := a.load(id)
		if err != nil {
			return nil, err
		}
		j := l.job
		if j.Status != StatusQueued {
			return nil, &storage.CorruptError{Key: storage.JobKey(uint64(id)), Kind: storage.KindJob,
				Reason: fmt.Sprintf("job is %s but listed in the ready index of %q", j.Status, c.Queue)}
		}
		j.Attempt++
		ev := Event{Type: EventJobLeased, Attempt: j.Attempt, Name: c.Owner, LeaseExpiryMS: a.now + c.LeaseMS}
		seq, err := a.appendEvent(l, ev)
		if err != nil {
			return nil, err
		}
		a.save(l)
		res.Jobs = append(res.Jobs, ClaimedJob{
			Job: j.ID, WorkflowID: j.WorkflowID, Type: j.Type,
			Attempt: j.Attempt, LeaseExpiryMS: j.LeaseExpiryMS, LastSeq: seq, DeadlineMS: j.DeadlineMS,
			TraceParent: j.TraceParent,
		})
	}
	return res, nil
}

func (a *applier) heartbeat(c *Heartbeat) (Result, error) {
	res := &HeartbeatResult{LeaseExpiryMS: a.now + c.LeaseMS}
	for _, ref := range c.Leases {
		l, err := a.fenced(ref, "Heartbeat")
		if err != nil {
			code := StaleAttemptCode
			if _, ok := err.(*StaleAttemptError); !ok {
				if !isUnknownJob(err) {
					return nil, err
				}
				code = "unknown_job"
			}
			res.Refused = append(res.Refused, Refusal{LeaseRef: ref, Code: code})
			continue
		}
		if l.job.CancelRequested {
			res.CancelRequested = append(res.CancelRequested, l.job.ID)
		}
		// A lease only grows: a heartbeat with a shorter lease than the
		// one held keeps the longer expiry.
		if exp := a.now + c.LeaseMS; exp > l.job.LeaseExpiryMS {
			l.job.LeaseExpiryMS = exp
			a.save(l)
		}
	}
	return res, nil
}

func (a *applier) reclaim(c *Reclaim) (Result, error) {
	return a.sweep(storage.LeasePrefix, storage.KeyLowLease, c.Max, func(tk storage.TimeKey, key []byte, res *SweepResult) error {
		l, err := a.load(JobID(tk.Job))
		if err != nil {
			return err
		}
		j := l.job
		// Only the entry of a Running job's current lease is live; any other
		// is stale (the job finished, waits, or renewed its lease) and the
		// sweep just drops it. This is invariant 4's guard: a Waiting or
		// Parked job is never taken, however old its last lease.
		if j.Status != StatusRunning || j.LeaseExpiryMS != tk.AtMS {
			return nil
		}
		if _, err := a.appendEvent(l, Event{Type: EventJobRequeued, Reason: ReasonLeaseExpired, Attempt: j.Attempt}); err != nil {
			return err
		}
		a.save(l)
		res.Jobs = append(res.Jobs, j.ID)
		res.Ready = append(res.Ready, j.ID)
		return nil
	})
}

func (a *applier) releaseDelayed(c *ReleaseDelayed) (Result, error) {
	return a.sweep(storage.DelayedPrefix, storage.KeyLowDelayed, c.Max, func(tk storage.TimeKey, key []byte, res *SweepResult) error {
		l, err := a.load(JobID(tk.Job))
		if err != nil {
			return err
		}
		if l.job.Status != StatusRetrying {
			return &storage.CorruptError{Key: key, Kind: storage.KindKey,
				Reason: fmt.Sprintf("delayed index entry for job %d in status %s", l.job.ID, l.job.Status)}
		}
		if _, err := a.appendEvent(l, Event{Type: EventJobRequeued, Reason: ReasonRetryDelay}); err != nil {
			return err
		}
		a.save(l)
		res.Jobs = append(res.Jobs, l.job.ID)
		res.Ready = append(res.Ready, l.job.ID)
		return nil
	})
}

// sweep calls fn for up to max entries of a time-ordered index that are due
// at or before now, oldest first, and removes each entry it visits. It starts
// at the index's low-water mark (lowKey) and raises the mark to now when it
// drained everything due, or to the last entry's time when max cut it short:
// every entry added later is due after now (leases, timers and delays are
// always in the future when set), so nothing live ever sorts below the mark.
// The keys are collected before fn runs, because fn's writes move entries of
// the same index.
func (a *applier) sweep(prefix, lowKey []byte, max int, fn func(tk storage.TimeKey, key []byte, res *SweepResult) error) (Result, error) {
	type due struct {
		tk  storage.TimeKey
		key []byte
	}
	low, err := a.u64(lowKey)
	if err != nil {
		return nil, err
	}
	var dues []due
	res := &SweepResult{}
	start := append(append([]byte(nil), prefix...), storage.U64(low)...)
	err = a.tx.Scan(prefix, start, false, func(k, _ []byte) (bool, error) {
		tk, err := storage.ParseTimeKey(k)
		if err != nil {
			return false, err
		}
		if tk.AtMS > a.now {
			return false, nil
		}
		if len(dues) == max {
			res.More = true
			return false, nil
		}
		dues = append(dues, due{tk, k})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range dues {
		a.tx.Delete(d.key)
		if err := fn(d.tk, d.key, res); err != nil {
			return nil, err
		}
	}
	mark := a.now
	if res.More {
		mark = dues[len(dues)-1].tk.AtMS
	}
	// Only a sweep that removed entries moves the mark: an idle sweep
	// writes nothing, so idle polling costs no sync.
	if len(dues) > 0 && uint64(mark) > low {
		a.tx.Set(lowKey, storage.U64(uint64(mark)))
	}
	return res, nil
}
