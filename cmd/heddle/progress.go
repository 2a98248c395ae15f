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
// print, so writes are serialised to keep lines whole.
type reporter struct {
	mu    sync.Mutex
	out   io.Writer
	clock clock.Clock
	start time.Time
}

func newReporter(out io.Writer, clk clock.Clock) *reporter {
	return &reporter{out: out, clock: clk, start: clk.Now()}
}

// event prints one timestamped line about the demo as a whole.
func (r *reporter) event(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := r.clock.Now().Sub(r.start).Milliseconds()
	fmt.Fprintf(r.out, "[%4dms] %s\n", ms, fmt.Sprintf(format, a...))
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
	fmt.Fprintf(r.out, format+"\n", a...)
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
