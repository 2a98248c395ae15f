package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// Scheduler proposes FireTimers, Reclaim, ReleaseDelayed, ExpireDeadlines
// ExpireSteps and FireSchedules exactly when the earliest timer, lease
// expiry, retry delay (or deferral), job deadline, step deadline (a step
// lease's expiry, a person's answer timeout) or schedule's due time falls
// due. It reads the front of each time-ordered index (cost independent of
// how many jobs exist or have finished), sleeps until the earliest
// deadline, and is woken early by Wake when a commit may have created an
// earlier one. It never polls on a fixed tick.
//
// The scheduler only proposes; Apply decides. Reclaim in Apply takes only
// Running jobs from the lease index, so a Waiting or Parked job is never
// reclaimed however old its last lease.
type Scheduler struct {
	log   Log
	db    Viewer
	clock clock.Clock
	batch int
	wake  chan struct{}
	// OnError, if set, receives errors from proposals (the loop backs off and
	// goes on); it runs on the scheduler goroutine.
	OnError func(error)
	// ReclaimNotBeforeMS, if set before Run, holds back reclaiming expired
	// leases until that time (Unix ms). A new Raft leader sets it to give
	// workers whose heartbeats could not commit during the election time to
	// renew, so a leader change does not take jobs from live workers.
	ReclaimNotBeforeMS int64
	// Metrics, if set before Run, records how late each sweep is proposed.
	Metrics *metrics.Metrics
}

// DefaultSchedulerBatch is the scheduler's batch when none is configured:
// the default Limits.MaxBatch, so that a thousand timers falling due at once
// are fired by one command, one commit.
const DefaultSchedulerBatch = 1000

// SchedulerBatch returns the batch a scheduler proposing to a machine with
// limits l uses when configured with batch: batch itself, or for 0 the
// smaller of DefaultSchedulerBatch and l.MaxBatch. A batch over l.MaxBatch
// is refused: every sweep it proposed would be.
func SchedulerBatch(batch int, l engine.Limits) (int, error) {
	maxBatch := l.WithDefaults().MaxBatch
	switch {
	case batch < 0 || batch > maxBatch:
		return 0, fmt.Errorf("%w: scheduler batch %d is not in [0, %d] (Limits.MaxBatch)", engine.ErrInvalidCommand, batch, maxBatch)
	case batch == 0:
		return min(DefaultSchedulerBatch, maxBatch), nil
	}
	return batch, nil
}

// NewScheduler returns a scheduler proposing to log from the indexes of db.
// batch bounds the jobs of one proposal (0 means DefaultSchedulerBatch); it
// must not exceed the Limits.MaxBatch of the machine applying them.
func NewScheduler(log Log, db Viewer, clk clock.Clock, batch int) *Scheduler {
	if batch <= 0 {
		batch = DefaultSchedulerBatch
	}
	if clk == nil {
		clk = clock.Wall()
	}
	return &Scheduler{log: log, db: db, clock: clk, batch: batch, wake: make(chan struct{}, 1)}
}

// Wake makes the scheduler re-read its deadlines. It never blocks.
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sweepKind pairs an index with the command that drains it.
type sweepKind struct {
	prefix, low []byte
	cmd         func(max int) engine.Command
	name        string // the sweep label of the scheduler-lag metric
}

// The swept indexes, in the order Deadlines reports them.
var sweeps = []sweepKind{
	{storage.TimerPrefix, storage.KeyLowTimer, func(n int) engine.Command { return &engine.FireTimers{Max: n} }, "timers"},
	{storage.LeasePrefix, storage.KeyLowLease, func(n int) engine.Command { return &engine.Reclaim{Max: n} }, "leases"},
	{storage.DelayedPrefix, storage.KeyLowDelayed, func(n int) engine.Command { return &engine.ReleaseDelayed{Max: n} }, "delayed"},
	{storage.DeadlinePrefix, storage.KeyLowDeadline, func(n int) engine.Command { return &engine.ExpireDeadlines{Max: n} }, "deadlines"},
	{storage.StepDuePrefix, storage.KeyLowStepDue, func(n int) engine.Command { return &engine.ExpireSteps{Max: n} }, "steps"},
	{storage.SchedDuePrefix, storage.KeyLowSchedDue, func(n int) engine.Command { return &engine.FireSchedules{Max: n} }, "schedules"},
	// The review tasks' lease index, swept like the job lease index: the
	// scheduler proposes ReclaimReviews when its earliest entry falls due.
	// It comes after the job sweeps, so their positions (and Deadlines)
	// stay as they were.
	{storage.ReviewLeasePrefix, storage.KeyLowReviewLease, func(n int) engine.Command { return &engine.ReclaimReviews{Max: n} }, reviewLeaseSweep},
}

// leaseSweep is the index of the lease sweep in sweeps.
const leaseSweep = 1

// reviewLeaseSweep names the task lease sweep; like the job lease sweep it
// waits out a new leader's failover grace (Scheduler.ReclaimNotBeforeMS).
const reviewLeaseSweep = "task_leases"

// maxSweepsInFlight bounds the proposals of one kind the scheduler makes at
// once when many entries fall due together.
const maxSweepsInFlight = 8

// due is what the scheduler saw of one index: its earliest entry's time (0
// when empty) and how many entries are due by now, counted up to a bound.
type due struct {
	nextMS int64
	count  int
}

// look reads each index from its low-water mark: the earliest entry, and
// the entries due at nowMS, counted up to limit. Its cost is bounded by
// limit, whatever the number of jobs stored or finished. An entry may be
// stale (a lease or timer no longer needed), in which case the sweep just
// removes it.
func (s *Scheduler) look(nowMS int64, limit int) ([]due, error) {
	var out []due
	err := s.db.View(func(r *storage.Reader) error {
		var err error
		out, err = lookIn(r, nowMS, limit)
		return err
	})
	return out, err
}

// lookIn is look over the read r.
func lookIn(r *storage.Reader, nowMS int64, limit int) ([]due, error) {
	out := make([]due, len(sweeps))
	for i, sw := range sweeps {
		low, err := storage.ReadU64(r, sw.low)
		if err != nil {
			return nil, err
		}
		d := &out[i]
		err = r.Scan(sw.prefix, append(append([]byte(nil), sw.prefix...), storage.U64(low)...), false,
			func(key, _ []byte) (bool, error) {
				tk, err := storage.ParseTimeKey(key)
				if err != nil {
					return false, err
				}
				if d.nextMS == 0 {
					d.nextMS = tk.AtMS
				}
				if tk.AtMS > nowMS {
					return false, nil
				}
				d.count++
				return d.count < limit, nil
			})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Deadlines returns the earliest due time (Unix ms) of each index, 0 when
// empty, in the order timers, leases, retry delays and deferrals, job
// deadlines, step deadlines, schedules.
func (s *Scheduler) Deadlines() ([6]int64, error) {
	var out [6]int64
	err := s.db.View(func(r *storage.Reader) error {
		var err error
		out, err = ReadDeadlines(r)
		return err
	})
	return out, err
}

// ReadDeadlines is Deadlines over the read r, for a caller that must read
// them in one consistent view with other state (Engine.View): a test
// environment deciding whether it may move its clock judges the
// deadlines and the jobs' states of one instant.
func ReadDeadlines(r *storage.Reader) ([6]int64, error) {
	var out [6]int64
	ds, err := lookIn(r, 0, 1)
	for i := range min(len(out), len(ds)) {
		out[i] = ds[i].nextMS
	}
	return out, err
}

// Run loops until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	for {
		stepNow := s.clock.Now()
		sleep, err := s.step(ctx, stepNow)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if s.OnError != nil {
				s.OnError(machine.MarkStorageError(err))
			}
			backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
			sleep, stepNow = backoff, s.clock.Now()
		} else {
			backoff = 0
		}
		if sleep == 0 {
			continue
		}
		var timerC <-chan time.Time
		var t clock.Timer
		if sleep > 0 {
			// The sleep was computed from the time step read. Should the
			// clock have moved past the wake time since (a manual clock
			// advanced by a test, a slow look), the timer would fire a
			// whole sleep late; so the clock is read again once the timer
			// is set, and the loop looks again at once if it is already due.
			wakeAt := stepNow.Add(sleep)
			t = s.clock.NewTimer(sleep)
			timerC = t.C()
			if !s.clock.Now().Before(wakeAt) {
				t.Stop()
				continue
			}
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return ctx.Err()
		case <-timerC:
		case <-s.wake:
			if t != nil {
				t.Stop()
			}
		}
	}
}

// step proposes every sweep that is due and returns how long to sleep: 0 to
// look again at once, a negative duration when nothing is scheduled at all.
//
// When many entries fall due together (a thousand timers set for the same
// instant), it proposes enough sweeps to take them all, up to
// maxSweepsInFlight of each kind, at once rather than one after the other:
// the log packs proposals waiting together into one group commit (one Raft
// entry in a cluster), so they cost one round instead of one each. The log
// applies them in order, each taking the entries the ones before it left; a
// sweep that finds nothing left writes nothing.
func (s *Scheduler) step(ctx context.Context, now time.Time) (time.Duration, error) {
	nowMS := now.UnixMilli()
	ds, err := s.look(nowMS, s.batch*maxSweepsInFlight)
	if err != nil {
		return 0, err
	}
	var cmds []engine.Command
	next := int64(-1)
	for i, d := range ds {
		at := d.nextMS
		if at == 0 {
			continue
		}
		if i == leaseSweep || sweeps[i].name == reviewLeaseSweep {
			at = max(at, s.ReclaimNotBeforeMS)
		}
		if at <= nowMS {
			s.Metrics.SchedulerLag(sweeps[i].name, time.Duration(nowMS-at)*time.Millisecond)
			for n := min(max((d.count+s.batch-1)/s.batch, 1), maxSweepsInFlight); n > 0; n-- {
				cmds = append(cmds, sweeps[i].cmd(s.batch))
			}
			continue
		}
		if next < 0 || at < next {
			next = at
		}
	}
	if len(cmds) > 0 {
		return 0, s.proposeAll(ctx, cmds)
	}
	if next < 0 {
		return -1, nil
	}
	// The sleep ends at the deadline's own instant, measured from now with
	// its sub-millisecond part, not from nowMS: a clock that reads between
	// two milliseconds (a test clock moved by a few nanoseconds) would
	// otherwise set its timer that fraction past the deadline, and a clock
	// then moved exactly to the deadline would never fire it.
	return time.UnixMilli(next).Sub(now), nil
}

// proposeAll proposes cmds concurrently and returns the first error.
func (s *Scheduler) proposeAll(ctx context.Context, cmds []engine.Command) error {
	if len(cmds) == 1 {
		_, err := s.log.Propose(ctx, cmds[0])
		return err
	}
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.log.Propose(ctx, c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
