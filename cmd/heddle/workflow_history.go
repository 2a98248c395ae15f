package main

// This file is "heddle workflow history", also called "show": a run's
// events, the record the engine keeps and a recovering worker replays, as a
// timeline. By default it pages through the whole history (one API page
// holds at most engine.MaxPage events); --after and --limit select a window.

import (
	"fmt"
	"io"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// wfHistoryOutput is history's JSON document.
type wfHistoryOutput struct {
	WorkflowID string       `json:"workflow_id"`
	JobID      uint64       `json:"job_id"`
	Status     string       `json:"status"`
	Events     []wfEventDoc `json:"events"`
	// NextAfter is --after for the events that follow, when --limit
	// stopped before the end; absent when the last event was printed.
	NextAfter uint64 `json:"next_after,omitempty"`
}

func newWFHistoryCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "history {ID | -w WORKFLOW-ID | -r RUN-ID} [--after SEQ] [--limit N] [--full]",
		Aliases: []string{"show"},
		Short:   "print a run's event history as a timeline",
		Long: "Prints a run's events as a timeline: seq, time since the run was created, the\n" +
			"attempt that wrote it, its type, step and name, and what it carries. Every event\n" +
			"by default. A workflow id shows its current run. With -o jsonl, one event a line.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	var (
		after uint64
		limit int
		full  bool
	)
	cmd.Flags().Uint64Var(&after, "after", 0, "print only events after this `seq`")
	cmd.Flags().IntVar(&limit, "limit", 0, "print at most `N` events (default all)")
	cmd.Flags().BoolVar(&full, "full", false, "print payloads whole instead of cut to fit a line")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, _, err := target.args(args)
		if err != nil {
			return err
		}
		if limit < 0 {
			return usagef("--limit %d is negative", limit)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		j, err := target.describe(c.ctx, svc, id)
		if err != nil {
			return err
		}
		out := wfHistoryOutput{WorkflowID: j.WorkflowID, JobID: uint64(j.ID), Status: j.Status.String(), Events: []wfEventDoc{}}
		var events []engine.Event
		for {
			size := engine.MaxPage
			if limit > 0 {
				size = min(size, limit-len(events))
			}
			page, err := svc.History(c.ctx, j.ID, after, size)
			if err != nil {
				return err
			}
			events = append(events, page.Events...)
			if page.Next == 0 {
				break
			}
			if after = page.Next; limit > 0 && len(events) >= limit {
				out.NextAfter = page.Next
				break
			}
		}
		for _, ev := range events {
			out.Events = append(out.Events, wfEventOf(ev))
		}
		switch c.format {
		case formatJSON:
			return c.doc(out)
		case formatJSONL:
			if err := printLines(c.out, out.Events); err != nil {
				return err
			}
			if out.NextAfter != 0 {
				_, err = fmt.Fprintf(c.err, "More events follow: next with --after %d\n", out.NextAfter)
			}
			return err
		}
		width := wfCellWidth
		if full {
			width = 0
		}
		return wfPrintHistory(c.out, j, events, out.NextAfter, width)
	})
	return cmd
}

func wfPrintHistory(w io.Writer, j *engine.Job, events []engine.Event, nextAfter uint64, width int) error {
	p := newPrinter(w)
	p.printf("Workflow %s, job %d (%s on %s): %s, %d events\n", wfCell(j.WorkflowID), j.ID,
		wfCell(j.Type), wfCell(j.Queue), j.Status, j.LastSeq)
	base := j.CreatedMS
	p.printf("Created %s; TIME is since then.\n\n", wfWhen(base))
	if len(events) == 0 {
		p.println("No events in this range.")
	} else {
		tw := newWFTable(p)
		tw.row("SEQ", "TIME", "ATT", "EVENT", "STEP", "NAME", "DETAILS")
		for _, ev := range events {
			att := "-"
			if ev.Attempt != 0 {
				att = fmt.Sprint(ev.Attempt)
			}
			tw.row(fmt.Sprint(ev.Seq), wfOffset(ev.AtMS-base), att, wfCell(string(ev.Type)),
				wfCell(wfTruncate(ev.Step, 32)), wfCell(wfTruncate(ev.Name, 32)), wfEventDetails(ev, base, width))
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	if nextAfter != 0 {
		p.printf("More events follow: next with --after %d\n", nextAfter)
	}
	return p.err()
}

// wfEventDetails joins what else an event carries: its payload, the commit
// mark, the reason, a retry delay, a lease and what a wait waits for. Times
// are offsets from base, like the TIME column.
func wfEventDetails(ev engine.Event, base int64, width int) string {
	var parts []string
	if len(ev.Payload) > 0 {
		parts = append(parts, wfCell(wfPayloadText(ev.Payload, width)))
	}
	if ev.Commit {
		parts = append(parts, "[committed]")
	}
	if ev.Reason != "" {
		parts = append(parts, "reason "+wfCell(ev.Reason))
	}
	if ev.BaseRunID != 0 {
		parts = append(parts, fmt.Sprintf("reset from run %d at event %d", ev.BaseRunID, ev.ResetEventID))
	}
	if ev.NewRunID != 0 {
		parts = append(parts, fmt.Sprintf("continues as run %d", ev.NewRunID))
	}
	if ev.DelayMS != 0 {
		parts = append(parts, "delay "+strings.TrimPrefix(wfOffset(ev.DelayMS), "+"))
	}
	if ev.LeaseExpiryMS != 0 {
		parts = append(parts, "lease until "+wfOffset(ev.LeaseExpiryMS-base))
	}
	if ev.Wait != nil {
		at := func(rfc string) string { return "at " + wfOffset(wfParseRFC(rfc)-base) }
		parts = append(parts, "waits for "+wfWaitText(wfWaitOf(ev.Wait), at, nil))
	}
	return strings.Join(parts, "  ")
}
