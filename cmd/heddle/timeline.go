package main

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
)

// printTimeline prints one job's whole history as a table: this is the
// record the engine keeps, and the only thing a recovering worker reads.
func (d *demoRun) printTimeline(ctx context.Context) error {
	wf := d.cfg.Timeline
	j, err := d.c.DescribeWorkflow(ctx, wf, "")
	if err != nil {
		return err
	}
	id := j.ID
	hist, err := d.c.GetWorkflowHistory(ctx, wf, "")
	if err != nil {
		return err
	}
	if len(hist) == 0 {
		return fmt.Errorf("timeline: job %d has no history", id)
	}
	d.rep.plain("")
	d.rep.plain("history of %s (job %d), %d events; +ms from the first event, att = attempt:", wf, id, len(hist))
	d.rep.plain("  %3s %6s %3s  %-23s %-24s %s", "seq", "+ms", "att", "event", "step  name", "details")
	first := hist[0].AtMS
	for _, ev := range hist {
		line := fmt.Sprintf("  %3d %6d %3s  %-23s %-24s %s", ev.Seq, ev.AtMS-first, attempt(ev.Attempt),
			ev.Type, stepOrName(ev), details(ev, first))
		d.rep.plain("%s", strings.TrimRight(line, " "))
	}
	return nil
}

func attempt(a uint64) string {
	if a == 0 {
		return "-"
	}
	return fmt.Sprint(a)
}

func stepOrName(ev engine.Event) string {
	return strings.TrimSpace(ev.Step + "  " + ev.Name)
}

// details joins what else the event carries: its payload (shortened), the
// commit mark, the reason, the lease and what a wait waits for.
func details(ev engine.Event, first int64) string {
	var parts []string
	if len(ev.Payload) > 0 {
		parts = append(parts, shorten(string(ev.Payload), 48))
	}
	if ev.Commit {
		parts = append(parts, "[committed]")
	}
	if ev.Reason != "" {
		parts = append(parts, "reason "+ev.Reason)
	}
	if ev.LeaseExpiryMS != 0 {
		parts = append(parts, fmt.Sprintf("lease until +%dms", ev.LeaseExpiryMS-first))
	}
	if w := ev.Wait; w != nil {
		if len(w.Signals) > 0 {
			parts = append(parts, "waits for signal "+strings.Join(w.Signals, ", "))
		}
		if w.TimerAtMS != 0 {
			parts = append(parts, fmt.Sprintf("waits for timer %s at +%dms", w.TimerID, w.TimerAtMS-first))
		}
	}
	return strings.Join(parts, "  ")
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
