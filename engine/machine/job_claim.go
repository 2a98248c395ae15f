package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The backoff of a deferred job: 1 s after its first deferral in a row,
// doubling with each further one, at most 30 s.
const (
	deferFirstMS = 1000
	deferMaxMS   = 30_000
)

// deferDelayMS is the backoff after the n-th deferral in a row (n >= 1).
func deferDelayMS(n uint32) int64 {
	if n > 6 { // 1 s << 5 is already past the cap
		return deferMaxMS
	}
	return min(int64(deferFirstMS)<<(n-1), deferMaxMS)
}

func (a *applier) claim(c *engine.Claim) (engine.Result, error) {
	// Every ready entry's time is the Now of the command that made the job
	// ready, and Now only grows, so the entries left after a claim all sort
	// at or after the last one it visited (each visited job is claimed or
	// deferred, and leaves the index): that is the queue's low-water mark.
	lowKey := storage.LowReadyKey(c.Queue)
	low, err := a.u64(lowKey)
	if err != nil {
		return nil, err
	}
	var take, pass []*loaded
	var lastReady int64
	start := storage.ReadyKey(c.Queue, int64(low), 0)
	err = a.tx.Scan(storage.ReadyPrefix(c.Queue), start, false, func(k, _ []byte) (bool, error) {
		e, err := storage.ParseReadyKey(k)
		if err != nil {
			return false, err
		}
		l, err := a.load(engine.JobID(e.Job))
		if err != nil {
			return false, err
		}
		if l.job.Status != engine.StatusQueued {
			return false, &storage.CorruptError{Key: storage.JobKey(e.Job), Kind: storage.KindJob,
				Reason: fmt.Sprintf("job is %s but listed in the ready index of %q", l.job.Status, c.Queue)}
		}
		if len(c.Types) == 0 || slices.Contains(c.Types, l.job.Type) {
			take = append(take, l)
		} else {
			pass = append(pass, l)
		}
		lastReady = e.ReadyAtMS
		return len(take) < c.Max && len(pass) < engine.MaxDeferralsPerClaim, nil
	})
	if err != nil {
		return nil, err
	}
	if len(take)+len(pass) > 0 && uint64(lastReady) > low {
		a.tx.Set(lowKey, storage.U64(uint64(lastReady)))
	}
	res := &engine.ClaimResult{}
	for _, l := range take {
		j := l.job
		j.Attempt++
		token := leaseToken(c.Nonce, "job", uint64(j.ID), j.Attempt)
		ev := engine.Event{Type: engine.EventJobLeased, Attempt: j.Attempt, Name: c.Owner, LeaseExpiryMS: a.now + c.LeaseMS, TokenIssued: token != ""}
		seq, err := a.appendEvent(l, ev)
		if err != nil {
			return nil, err
		}
		j.LeaseDigest = leaseDigest(token)
		// A claim ends the job's wait for a claimer: its deferrals and its
		// schedule-to-start deadline are over.
		j.Deferrals, j.DeferredReason, j.StartDeadlineMS = 0, "", 0
		a.save(l)
		cj := engine.ClaimedJob{
			Job: j.ID, WorkflowID: j.WorkflowID, Type: j.Type,
			Attempt: j.Attempt, LeaseExpiryMS: j.LeaseExpiryMS, LeaseToken: token, LastSeq: seq, DeadlineMS: j.DeadlineMS,
			TraceParent: j.TraceParent, ParentID: j.ParentID, RunAttempt: j.RunAttempt,
		}
		cj.CronSchedule = j.CronSchedule
		cj.AttemptBase, cj.ActivityOptions = j.AttemptBase, j.ActivityOptions.Clone()
		switch {
		case j.ParentWorkflowID != "":
			cj.ParentWorkflowID = j.ParentWorkflowID // a parent on another shard
		case j.ParentID != 0:
			// The child's code may ask for its parent (GetInfo); a parent
			// whose record is gone leaves the workflow id empty.
			if p, err := a.load(j.ParentID); err == nil {
				cj.ParentWorkflowID = p.job.WorkflowID
			} else if !isUnknownJob(err) {
				return nil, err
			}
		}
		res.Jobs = append(res.Jobs, cj)
	}
	// A job the claimer cannot run is deferred without a history event:
	// each try would otherwise add events, and a job whose type no worker
	// registers would grow its history without bound. Its record says why,
	// for describe.
	for _, l := range pass {
		j := l.job
		j.Deferrals++
		j.DeferredUntilMS = a.now + deferDelayMS(j.Deferrals)
		j.DeferredReason = fmt.Sprintf("no worker on queue %q registers type %q (asked by owner %q)", c.Queue, j.Type, c.Owner)
		a.save(l)
		res.Deferred = append(res.Deferred, j.ID)
	}
	return res, nil
}

func (a *applier) heartbeat(c *engine.Heartbeat) (engine.Result, error) {
	res := &engine.HeartbeatResult{LeaseExpiryMS: a.now + c.LeaseMS}
	for _, ref := range c.Leases {
		l, err := a.fenced(ref, "Heartbeat")
		if err != nil {
			code := engine.StaleAttemptCode
			if _, ok := err.(*engine.StaleAttemptError); !ok {
				if !isUnknownJob(err) {
					return nil, err
				}
				code = "unknown_job"
			}
			ref.Token = "" // the answer names the lease, it does not echo its proof
			res.Refused = append(res.Refused, engine.Refusal{LeaseRef: ref, Code: code})
			continue
		}
		if l.job.CancelRequested {
			res.CancelRequested = append(res.CancelRequested, l.job.ID)
		}
		if l.job.Paused() {
			res.Paused = append(res.Paused, l.job.ID)
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

func (a *applier) reclaim(c *engine.Reclaim) (engine.Result, error) {
	return a.sweep(storage.LeasePrefix, storage.KeyLowLease, c.Max, func(tk storage.TimeKey, key []byte, res *engine.SweepResult) error {
		l, err := a.load(engine.JobID(tk.Job))
		if err != nil {
			return err
		}
		j := l.job
		// Only the entry of a Running job's current lease is live; any other
		// is stale (the job finished, waits, or renewed its lease) and the
		// sweep just drops it. This is invariant 4's guard: a Waiting or
		// Parked job is never taken, however old its last lease.
		if j.Status != engine.StatusRunning || j.LeaseExpiryMS != tk.AtMS {
			return nil
		}
		if j.TimeoutOnLeaseExpiry {
			// Work bound to the worker that held the lease: no other may
			// take it over, so the job ends, and its parent learns of it.
			ev := engine.Event{Type: engine.EventJobTimedOut, Attempt: j.Attempt, Reason: engine.ReasonLeaseExpired,
				Payload: engine.EncodeTimeoutFailure(engine.TimeoutHeartbeat, fmt.Sprintf("job %d (workflow id %q, type %q) timed out: the lease of %s ran out", j.ID, j.WorkflowID, j.Type, j.LeaseOwner))}
			if _, err := a.appendEvent(l, ev); err != nil {
				return err
			}
			if err := a.closed(l, &ev); err != nil {
				return err
			}
			a.save(l)
			res.Jobs = append(res.Jobs, j.ID)
			return nil
		}
		if _, err := a.appendEvent(l, engine.Event{Type: engine.EventJobRequeued, Reason: engine.ReasonLeaseExpired, Attempt: j.Attempt}); err != nil {
			return err
		}
		a.save(l)
		res.Jobs = append(res.Jobs, j.ID)
		res.Ready = append(res.Ready, j.ID)
		return nil
	})
}

func (a *applier) releaseDelayed(c *engine.ReleaseDelayed) (engine.Result, error) {
	return a.sweep(storage.DelayedPrefix, storage.KeyLowDelayed, c.Max, func(tk storage.TimeKey, key []byte, res *engine.SweepResult) error {
		l, err := a.load(engine.JobID(tk.Job))
		if err != nil {
			return err
		}
		j := l.job
		switch {
		case j.Status == engine.StatusQueued && j.DeferredUntilMS == tk.AtMS:
			// A deferred job: back to the ready index, as ready now, with
			// no event (its deferral wrote none either).
			j.DeferredUntilMS, j.ReadyAtMS = 0, a.now
		case j.Status == engine.StatusRetrying:
			if _, err := a.appendEvent(l, engine.Event{Type: engine.EventJobRequeued, Reason: engine.ReasonRetryDelay}); err != nil {
				return err
			}
		default:
			return &storage.CorruptError{Key: key, Kind: storage.KindKey,
				Reason: fmt.Sprintf("delayed index entry for job %d in status %s (deferred until %d)", j.ID, j.Status, j.DeferredUntilMS)}
		}
		a.save(l)
		res.Jobs = append(res.Jobs, j.ID)
		res.Ready = append(res.Ready, j.ID)
		return nil
	})
}

func (a *applier) expireDeadlines(c *engine.ExpireDeadlines) (engine.Result, error) {
	return a.sweep(storage.DeadlinePrefix, storage.KeyLowDeadline, c.Max, func(tk storage.TimeKey, key []byte, res *engine.SweepResult) error {
		l, err := a.load(engine.JobID(tk.Job))
		if err != nil {
			return err
		}
		j := l.job
		// Only the entry the record names is live; any other is stale (the
		// job ended first, or a claim cleared the deadline it was for).
		if j.TimeoutAtMS != tk.AtMS || j.Status.Terminal() {
			return nil // or ended earlier in this sweep (its parent's end took it along)
		}
		_, reason := nextDeadline(j)
		ev := engine.Event{Type: engine.EventJobTimedOut, Attempt: j.Attempt, Reason: reason, Payload: timeoutFailure(j, reason)}
		if _, err := a.appendEvent(l, ev); err != nil {
			return err
		}
		if j.CronSchedule != "" && reason == engine.ReasonRunTimeout {
			a.save(l)
			res.Jobs = append(res.Jobs, j.ID)
			return a.cronTimedOut(l)
		}
		if err := a.closed(l, &ev); err != nil {
			return err
		}
		a.save(l)
		res.Jobs = append(res.Jobs, j.ID)
		return nil
	})
}

// sweep calls fn for up to max entries of a time-ordered index that are due
// at or before now, oldest first, and removes each entry it visits. It starts
// at the index's low-water mark (lowKey) and raises the mark to now when it
// drained everything due, or to the last entry's time when max cut it short:
// every entry added later is due after now (leases, timers and delays are
// always in the future when set; deadlines and timers at the latest now), so
// nothing live ever sorts below the mark.
// The keys are collected before fn runs, because fn's writes move entries of
// the same index.
func (a *applier) sweep(prefix, lowKey []byte, max int, fn func(tk storage.TimeKey, key []byte, res *engine.SweepResult) error) (engine.Result, error) {
	type due struct {
		tk  storage.TimeKey
		key []byte
	}
	low, err := a.u64(lowKey)
	if err != nil {
		return nil, err
	}
	var dues []due
	res := &engine.SweepResult{}
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

// timeoutFailure is the failure a job's deadline of kind reason writes.
func timeoutFailure(j *engine.Job, reason string) []byte {
	tt, what := engine.TimeoutWorkflowRun, "run timeout"
	switch reason {
	case engine.ReasonExecutionTimeout:
		tt, what = engine.TimeoutWorkflowExecution, "execution timeout"
		if isActivityTask(j) {
			tt, what = engine.TimeoutScheduleToClose, "schedule-to-close timeout"
		}
	case engine.ReasonScheduleToStart:
		tt, what = engine.TimeoutScheduleToStart, "schedule-to-start timeout"
	}
	return engine.EncodeTimeoutFailure(tt, fmt.Sprintf("job %d (workflow id %q, type %q) timed out: its %s passed", j.ID, j.WorkflowID, j.Type, what))
}

func isActivityTask(j *engine.Job) bool { return strings.HasPrefix(j.Type, engine.ActivityTypePrefix) }
