// Package clock provides the time source heddle's long-running parts are
// given: the wall clock for programs, and a manual clock for tests.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers. Implementations are safe for
// concurrent use. engine.Apply never uses one: time reaches it inside commands.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer from a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was pending.
	Stop() bool
}

// Wall returns the system clock. It is the one place in heddle's libraries
// that reads the wall clock; programs pass it (or their own Clock) in.
func Wall() Clock { return wall{} }

type wall struct{}

func (wall) Now() time.Time                 { return time.Now() }
func (wall) NewTimer(d time.Duration) Timer { return wallTimer{time.NewTimer(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time { return w.t.C }
func (w wallTimer) Stop() bool          { return w.t.Stop() }

// Manual is a Clock that moves only when told to, for deterministic tests.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

// NewManual returns a manual clock reading start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// NewTimer returns a timer that fires when the clock is advanced d or more.
func (m *Manual) NewTimer(d time.Duration) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{m: m, at: m.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- m.now
		return t
	}
	m.timers = append(m.timers, t)
	return t
}

// Advance moves the clock forward by d and fires every timer now due, in
// the order of their deadlines.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	sort.SliceStable(m.timers, func(i, j int) bool { return m.timers[i].at.Before(m.timers[j].at) })
	var keep []*manualTimer
	for _, t := range m.timers {
		if !t.at.After(m.now) {
			t.c <- m.now
		} else {
			keep = append(keep, t)
		}
	}
	m.timers = keep
	m.mu.Unlock()
}

// Set moves the clock to t, forward or (for tests of clock skew) back, and
// fires every timer due by then.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	d := t.Sub(m.now)
	if d < 0 {
		m.now = t
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	m.Advance(d)
}

// Pending returns how many timers wait to fire.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

type manualTimer struct {
	m  *Manual
	at time.Time
	c  chan time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	for i, x := range t.m.timers {
		if x == t {
			t.m.timers = append(t.m.timers[:i], t.m.timers[i+1:]...)
			return true
		}
	}
	return false
}
