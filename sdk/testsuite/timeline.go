package testsuite

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine/clock"
)

// timeline is a test environment's time: a manual clock that only the
// environment's driver moves. Moving it and firing the timers it made are
// two steps, so that the driver can run the delayed callbacks due at an
// instant before the engine's timers of that instant fire (a callback
// registered before the workflow started comes first, as in Temporal).
//
// The engine gets the timeline itself: its log stamps commands with the
// timeline's time, so workflow time follows it. Its scheduler gets the
// timeline's firing (firedView): the time of the last fire, on whose
// timers it sleeps. Were the scheduler to read the moved time, one that
// looked between the two steps (woken by the commit before, say) would
// sweep the timers of the new instant before the callbacks ran.
type timeline struct {
	mu     sync.Mutex
	now    time.Time
	fired  time.Time // the time of the last fire; never after now
	timers []*manualTimer
}

var _ clock.Clock = (*timeline)(nil)

func newTimeline(start time.Time) *timeline { return &timeline{now: start, fired: start} }

// Now returns the timeline's time.
func (tl *timeline) Now() time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.now
}

// NewTimer returns a timer that fires once the timeline reaches d from now.
func (tl *timeline) NewTimer(d time.Duration) clock.Timer {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.newTimerLocked(tl.now, d)
}

// newTimerLocked returns a timer due d after from. It fires at once when
// it is due by the last fire (from may be earlier than that). tl.mu is
// held.
func (tl *timeline) newTimerLocked(from time.Time, d time.Duration) clock.Timer {
	t := &manualTimer{tl: tl, at: from.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 || !t.at.After(tl.fired) {
		t.c <- from
		return t
	}
	tl.timers = append(tl.timers, t)
	return t
}

// firedView is the timeline as its last fire left it: the engine's
// scheduler's clock (see timeline). It is the scheduler's alone.
//
// Its timers count from the time it last told, not from the time it reads
// when the timer is made: the scheduler reads the time, looks at its
// deadlines and sleeps until the next one, and a fire between the read and
// the timer would otherwise set the timer past the deadline by as much as
// the fire moved the time (and the test would stall at a deadline due).
func (tl *timeline) firedView() clock.Clock {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return &firedView{tl: tl, told: tl.fired}
}

type firedView struct {
	tl   *timeline
	told time.Time // the time Now last returned; guarded by tl.mu
}

func (v *firedView) Now() time.Time {
	v.tl.mu.Lock()
	defer v.tl.mu.Unlock()
	v.told = v.tl.fired
	return v.told
}

func (v *firedView) NewTimer(d time.Duration) clock.Timer {
	v.tl.mu.Lock()
	defer v.tl.mu.Unlock()
	return v.tl.newTimerLocked(v.told, d)
}

// set moves the time forward to t (never back) without firing anything.
func (tl *timeline) set(t time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if t.After(tl.now) {
		tl.now = t.In(tl.now.Location()) // times from milliseconds are Local
	}
}

// fire fires every timer due by now, in the order of their deadlines, and
// shows now to the scheduler's view.
func (tl *timeline) fire() {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.fired = tl.now
	sort.SliceStable(tl.timers, func(i, j int) bool { return tl.timers[i].at.Before(tl.timers[j].at) })
	keep := tl.timers[:0]
	for _, t := range tl.timers {
		if t.at.After(tl.now) {
			keep = append(keep, t)
			continue
		}
		t.c <- tl.now // buffered, and sent once: never blocks
	}
	clear(tl.timers[len(keep):])
	tl.timers = keep
}

type manualTimer struct {
	tl *timeline
	at time.Time
	c  chan time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.tl.mu.Lock()
	defer t.tl.mu.Unlock()
	for i, x := range t.tl.timers {
		if x == t {
			t.tl.timers = append(t.tl.timers[:i], t.tl.timers[i+1:]...)
			return true
		}
	}
	return false
}

// workerClock is the clock the environment's workers get. It reads the
// timeline, and its timers fire when the timeline reaches them or when as
// much real time has passed, whichever comes first: the worker's own waits
// (the pause before it watches a busy run's history, an activity's
// heartbeat timeout, a lease renewal) pass in real time while activities
// run, as activities' own timeouts do, and are skipped with the rest when
// the driver moves the timeline. It is also the sdkhook.TurnProbe through
// which the driver learns that a run's turn is idle.
type workerClock struct {
	tl    *timeline
	probe func(job, seenSeq uint64, inflight int, wakeAt time.Time) (done func())
}

func (c workerClock) Now() time.Time { return c.tl.Now() }

func (c workerClock) TurnWaiting(job, seenSeq uint64, inflight int, wakeAt time.Time) func() {
	return c.probe(job, seenSeq, inflight, wakeAt)
}

// CronFirstRunNow implements sdkhook.CronFirstRunNow: as in Temporal's
// test environment, a cron child's first run starts at once, and each
// later run at the schedule's next time after the run before it ended.
func (c workerClock) CronFirstRunNow() bool { return true }

func (c workerClock) NewTimer(d time.Duration) clock.Timer {
	h := &eitherTimer{c: make(chan time.Time, 1), stop: make(chan struct{})}
	if d <= 0 {
		h.fired.Store(true)
		h.c <- c.tl.Now()
		return h
	}
	onTimeline := c.tl.NewTimer(d)
	real := time.NewTimer(d)
	go func() {
		defer onTimeline.Stop()
		defer real.Stop()
		var at time.Time
		select {
		case at = <-onTimeline.C():
		case <-real.C:
			at = c.tl.Now()
		case <-h.stop:
			return
		}
		if h.fired.CompareAndSwap(false, true) {
			h.c <- at
		}
	}()
	return h
}

// eitherTimer fires once, at the first of two timers.
type eitherTimer struct {
	c     chan time.Time
	stop  chan struct{}
	once  sync.Once
	fired atomic.Bool
}

func (h *eitherTimer) C() <-chan time.Time { return h.c }

func (h *eitherTimer) Stop() bool {
	h.once.Do(func() { close(h.stop) })
	return h.fired.CompareAndSwap(false, true)
}
