package engine

import (
	"context"
	"time"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// Scheduler proposes FireTimers, Reclaim and ReleaseDelayed exactly when the
// earliest timer, lease expiry or retry delay falls due. It reads the first
// key of each time-ordered index (cost independent of how many jobs exist or
// have finished), sleeps until the earliest deadline, and is woken early by
// Wake when a commit may have created an earlier one. It never polls on a
// fixed tick.
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

// NewScheduler returns a scheduler proposing to log from the indexes of db.
// batch bounds the jobs of one proposal (0 means 256).
func NewScheduler(log Log, db Viewer, clk clock.Clock, batch int) *Scheduler {
	if batch <= 0 {
		batch = 256
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
	cmd         func(max int) Command
	name        string // the sweep label of the scheduler-lag metric
}

var sweeps = []sweepKind{
	{storage.TimerPrefix, storage.KeyLowTimer, func(n int) Command { return &FireTimers{Max: n} }, "timers"},
	{storage.LeasePrefix, storage.KeyLowLease, func(n int) Command { return &Reclaim{Max: n} }, "leases"},
	{storage.DelayedPrefix, storage.KeyLowDelayed, func(n int) Command { return &ReleaseDelayed{Max: n} }, "delayed"},
}

// Deadlines returns the earliest due time (Unix ms) of each index, 0 when
// empty, reading from each index's low-water mark; an entry may be stale (a
// lease or timer no longer needed), in which case the sweep just removes it,
// in the order timers, leases, retry delays.
func (s *Scheduler) Deadlines() ([3]int64, error) {
	var out [3]int64
	err := s.db.View(func(r *storage.Reader) error {
		for i, sw := range sweeps {
			low, err := storage.ReadU64(r, sw.low)
			if err != nil {
				return err
			}
			var k []byte
			err = r.Scan(sw.prefix, append(append([]byte(nil), sw.prefix...), storage.U64(low)...), false,
				func(key, _ []byte) (bool, error) { k = key; return false, nil })
			if err != nil {
				return err
			}
			if k == nil {
				continue
			}
			tk, err := storage.ParseTimeKey(k)
			if err != nil {
				return err
			}
			out[i] = tk.AtMS
		}
		return nil
	})
	return out, err
}

// Run loops until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	for {
		sleep, err := s.step(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if s.OnError != nil {
				s.OnError(err)
			}
			backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
			sleep = backoff
		} else {
			backoff = 0
		}
		if sleep == 0 {
			continue
		}
		var timerC <-chan time.Time
		var t clock.Timer
		if sleep > 0 {
			t = s.clock.NewTimer(sleep)
			timerC = t.C()
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
func (s *Scheduler) step(ctx context.Context) (time.Duration, error) {
	deadlines, err := s.Deadlines()
	if err != nil {
		return 0, err
	}
	nowMS := s.clock.Now().UnixMilli()
	next := int64(-1)
	for i, at := range deadlines {
		if at == 0 {
			continue
		}
		if i == 1 { // leases
			at = max(at, s.ReclaimNotBeforeMS)
		}
		if at <= nowMS {
			s.Metrics.SchedulerLag(sweeps[i].name, time.Duration(nowMS-at)*time.Millisecond)
			if _, err := s.log.Propose(ctx, sweeps[i].cmd(s.batch)); err != nil {
				return 0, err
			}
			return 0, nil
		}
		if next < 0 || at < next {
			next = at
		}
	}
	if next < 0 {
		return -1, nil
	}
	return time.Duration(next-nowMS) * time.Millisecond, nil
}
