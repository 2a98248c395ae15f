package testsuite

import (
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/clock"
)

// The scheduler's view of the timeline moves only when the timeline fires,
// and its timers count from the time it last told: a fire between the
// scheduler's read and its timer must not push the timer past the
// deadline the scheduler read, and a timer already due by the last fire
// fires at once.
func TestFiredViewOfTheTimeline(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	tl := newTimeline(t0)
	view := tl.firedView()
	fired := func(tm clock.Timer) bool {
		select {
		case <-tm.C():
			return true
		default:
			return false
		}
	}

	tl.set(t0.Add(time.Hour))
	if got := view.Now(); !got.Equal(t0) {
		t.Fatalf("the view reads %v after a set alone, want %v", got, t0)
	}
	// The scheduler read t0 and sleeps two hours; the timeline fires at
	// +1h before the timer is made.
	tl.fire()
	timer := view.NewTimer(2 * time.Hour)
	tl.set(t0.Add(2 * time.Hour))
	tl.fire()
	if !fired(timer) {
		t.Fatal("a timer the view made for two hours after the time it told did not fire at that time")
	}
	if got := view.Now(); !got.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("the view reads %v after the fire, want %v", got, t0.Add(2*time.Hour))
	}

	// A timer counted from an earlier reading that the last fire passed
	// fires at once.
	tl.set(t0.Add(3 * time.Hour))
	tl.fire()
	if due := view.NewTimer(30 * time.Minute); !fired(due) {
		t.Fatal("a timer due by the last fire did not fire at once")
	}
	// The timeline's own timers count from its time.
	own := tl.NewTimer(time.Minute)
	tl.set(t0.Add(3*time.Hour + time.Minute))
	if fired(own) {
		t.Fatal("a timer fired on a set, before the fire")
	}
	tl.fire()
	if !fired(own) {
		t.Fatal("the timeline's own timer did not fire at its time")
	}
}
