package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine/clock"
)

// reporter prints the demo's progress lines, each stamped with the time since
// the demo started. The worker goroutine and the demo's own goroutine both
// print, so writes are serialised, which keeps lines whole and their stamps
// in order. A failed write is kept for err, which the demo checks at its end.
type reporter struct {
	mu    sync.Mutex
	out   *printer
	clock clock.Clock
	start time.Time
}

func newReporter(out io.Writer, clk clock.Clock) *reporter {
	return &reporter{out: newPrinter(out), clock: clk, start: clk.Now()}
}

// err is the first write that failed, or nil.
func (r *reporter) err() error { return r.out.err() }

// event prints one timestamped line about the demo as a whole.
func (r *reporter) event(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := r.clock.Now().Sub(r.start).Milliseconds()
	r.out.printf("[%4dms] %s\n", ms, fmt.Sprintf(format, a...))
}

// order prints one timestamped line about one order, with its workflow id
// in a column so that the story of each order can be followed by eye.
func (r *reporter) order(wf, format string, a ...any) {
	r.event("%-8s %s", wf, fmt.Sprintf(format, a...))
}

// plain prints a line without a timestamp, for headings and the timeline.
func (r *reporter) plain(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.printf(format+"\n", a...)
}

// offset turns an engine time (Unix ms) into milliseconds since the demo
// started, so that lease expiries and timers read like the progress lines.
func (r *reporter) offset(unixMS int64) int64 {
	return unixMS - r.start.UnixMilli()
}

// sleep waits d on clk, or less if ctx ends first. The demo sleeps only to
// pace simulated work and polling; the engine's own timing lives in the
// scheduler.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
