package main

// This file prints runs for people: aligned "key  value" blocks for one run
// and aligned tables for many. It works from the JSON documents of
// workflow_doc.go, so the text and -o json never disagree about a run.

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
)

// Payloads are cut in text output: a whole order in every table row hides
// the table. -o json never cuts.
const (
	wfResultWidth = 1000 // describe, start --wait
	wfCellWidth   = 60   // history details, list cells
)

// wfTable aligns rows of cells into columns. It buffers the table so that
// it can drop the padding a tabwriter leaves after an empty last cell.
type wfTable struct {
	out io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
	err error // the first row that failed, kept for flush
}

func newWFTable(out io.Writer) *wfTable {
	t := &wfTable{out: out}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// row adds one row; the cells must not hold tabs or newlines (see wfCell).
func (t *wfTable) row(cells ...string) {
	if t.err == nil {
		_, t.err = io.WriteString(t.tw, strings.Join(cells, "\t")+"\n")
	}
}

// flush writes the table.
func (t *wfTable) flush() error {
	if t.err != nil {
		return t.err
	}
	if err := t.tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for line := range strings.Lines(t.buf.String()) {
		b.WriteString(strings.TrimRight(line, " \n"))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(t.out, b.String())
	return err
}

// wfKV prints one "key  value" line of a block. Keys have a fixed width, not
// a tabwriter's, so that blocks printed apart (start, then its outcome)
// line up.
func wfKV(p *printer, k, v string) { p.printf("%-13s%s\n", k, v) }

// wfPrintJob prints one run as an aligned block.
func wfPrintJob(w io.Writer, d wfJobDoc) error {
	p := newPrinter(w)
	kv := func(k, v string) { wfKV(p, k, v) }
	names := map[string]string{}
	for _, s := range d.Steps {
		names[s.Step] = s.Activity
	}
	for _, a := range d.PendingActivities {
		names[a.ActivityID] = a.ActivityType
	}
	kv("Workflow ID", wfCell(d.WorkflowID))
	kv("Job ID", fmt.Sprint(d.JobID))
	kv("Type", wfCell(d.Type))
	kv("Queue", wfCell(d.Queue))
	kv("Status", d.Status)
	if d.Paused != nil {
		kv("Paused", wfPauseText(d.Paused))
	}
	if d.NextRunID != 0 {
		kv("Next run", fmt.Sprintf("%s → run %d", engine.NextRunText(d.NextRunReason), d.NextRunID))
	}
	if d.PrevRunID != 0 {
		kv("Previous run", fmt.Sprintf("run %d", d.PrevRunID))
	}
	// The run's attempt counts the workflow's retries (Temporal's
	// attempt); the task attempt counts the workers' claims of this run
	// (each turn, and each lease that expired), which the engine fences by.
	kv("Run attempt", fmt.Sprint(max(d.RunAttempt, 1)))
	kv("Task attempt", fmt.Sprintf("%d (claims of this run by a worker)", d.Attempt))
	if d.Retries > 0 {
		kv("Retries", fmt.Sprint(d.Retries))
	}
	kv("Created", wfWhenRFC(d.CreatedAt))
	kv("Updated", wfWhenRFC(d.UpdatedAt))
	if d.ClosedAt != "" {
		kv("Closed", wfWhenRFC(d.ClosedAt))
	}
	if d.Deadline != "" {
		kv("Deadline", wfWhenRFC(d.Deadline))
	}
	if d.RetryAt != "" {
		kv("Retry at", wfWhenRFC(d.RetryAt))
	}
	if d.LeaseOwner != "" {
		kv("Lease", fmt.Sprintf("%s, expires %s", wfCell(d.LeaseOwner), wfRelRFC(d.LeaseExpiresAt)))
	}
	if d.ParentJobID != 0 {
		kv("Parent", fmt.Sprintf("job %d, step %s", d.ParentJobID, wfCell(d.ParentStep)))
	}
	if d.ScheduleID != "" {
		kv("Schedule", wfCell(d.ScheduleID)+" started it (heddle schedule describe shows it)")
	}
	if d.CancelRequested {
		kv("Cancel", "requested")
	}
	if d.ResetBaseRunID != 0 {
		kv("Reset from", fmt.Sprintf("run %d at event %d", d.ResetBaseRunID, d.ResetEventID))
	}
	if d.ResetNewRunID != 0 {
		kv("Reset to", fmt.Sprintf("run %d (a reset started it in this run's place)", d.ResetNewRunID))
	}
	if d.WaitingFor != nil {
		kv("Waiting for", wfWaitText(d.WaitingFor, wfRelRFC, names))
	}
	if d.QueuedReason != nil {
		kv("Why queued", wfCell(d.QueuedReason.Message))
	}
	for _, t := range d.Timers {
		kv("Timer", fmt.Sprintf("%s fires %s", wfTimerLabel(t.ID, names), wfRelRFC(t.FireAt)))
	}
	shown := map[string]bool{}
	for _, a := range d.PendingActivities {
		kv("Activity "+wfCell(a.ActivityID), wfPendingLine(a))
		shown[a.ActivityID] = true
	}
	if d.PendingTruncated {
		kv("Activities", fmt.Sprintf("(those of the first %d events; the history is longer)", wfPendingMaxEvents))
	}
	for _, s := range d.Steps {
		// A pending activity's line says its try and failure; its step's
		// line is shown too when it says more: the question it asks a
		// person, or the resource it holds.
		if !shown[s.Step] || len(s.question()) > 0 || s.Resource != "" {
			kv("Step "+wfCell(s.Step), stepLine(s))
		}
	}
	kv("History", fmt.Sprintf("%d events", d.HistoryLength))
	if d.CloseReason != "" {
		kv("Closed by", fmt.Sprintf("%s (%s)", d.CloseEvent, wfCell(d.CloseReason)))
	}
	switch {
	case d.Result != nil:
		kv("Result", wfCell(wfPayloadText(d.Result, wfResultWidth)))
	case d.ResultBase64 != nil:
		kv("Result", wfPayloadText(d.ResultBase64, wfResultWidth))
	}
	if f := d.Failure; f != nil {
		kv("Failure", wfCell(wfTruncate(wfFailureText(f), wfResultWidth)))
	}
	return p.err()
}

// wfPauseText says since when a run is paused, by whom and why, and what
// lets it go on.
func wfPauseText(p *wfPauseDoc) string {
	if p.At == "" {
		return "held while its workflow's run is paused"
	}
	s := "since " + wfRelRFC(p.At)
	if p.By != "" {
		s += " by " + wfCell(p.By)
	}
	if p.Reason != "" {
		s += ": " + wfCell(p.Reason)
	}
	if p.HeldByParent {
		s += "; also held while its workflow's run is paused"
	}
	return s + " (heddle workflow unpause)"
}

func wfFailureText(f *wfFailureDoc) string {
	s := f.Message
	if f.Type != "" {
		s += " [" + f.Type + "]"
	}
	if f.NonRetryable {
		s += " (non-retryable)"
	}
	return s
}

// wfWaitText says what a wait waits for: "signal approved, or timer t1 in
// 5s"; when formats a timer's fire time, names gives the activity of a step
// (nil: none known), so that a retry's timer reads as the retry it is.
// "any signal" is said only when the wait names nothing else: the SDK's
// waits all let any signal wake the run, and name the signals its code
// reads.
func wfWaitText(w *wfWaitDoc, when func(rfc3339 string) string, names map[string]string) string {
	var parts []string
	for _, s := range w.Signals {
		parts = append(parts, wfSignalLabel(s))
	}
	for _, s := range w.Steps {
		parts = append(parts, "step "+wfCell(s))
	}
	for _, t := range w.Timers {
		parts = append(parts, fmt.Sprintf("%s %s", wfTimerLabel(t.ID, names), when(t.FireAt)))
	}
	if len(parts) == 0 && w.AnySignal {
		parts = append(parts, "any signal")
	}
	s := strings.Join(parts, ", or ")
	if s == "" {
		s = "nothing named"
	}
	if w.Parked {
		s += " (parked)"
	}
	return s
}

// wfSignalLabel names a signal a wait names, the engine's own in words.
func wfSignalLabel(name string) string {
	switch name {
	case engine.UpdateSignalName:
		return "an update"
	case engine.AsyncCompletionSignal:
		return "its asynchronous completion"
	}
	return "signal " + wfCell(name)
}

// wfTimerLabel names a timer for people: "retry of activity Charge, try 3"
// for the SDK's retry timer "retry:<step>:<failed try>", "timer (step 4)"
// for a workflow timer; names maps steps to their activities.
func wfTimerLabel(id string, names map[string]string) string {
	if rest, ok := strings.CutPrefix(id, replay.RetryTimerPrefix); ok {
		step, tried, ok := strings.Cut(rest, ":")
		if n, err := strconv.Atoi(tried); ok && err == nil {
			what := "step " + wfCell(step)
			if name := names[step]; name != "" {
				what = "activity " + wfCell(name)
			}
			return fmt.Sprintf("retry of %s, try %d", what, n+1)
		}
	}
	if _, err := strconv.ParseUint(id, 10, 64); err == nil {
		return "timer (step " + id + ")"
	}
	return "timer " + wfCell(id)
}

// wfWhenRFC and wfRelRFC format a document's RFC 3339 time for people.
func wfWhenRFC(s string) string { return wfWhen(wfParseRFC(s)) }
func wfRelRFC(s string) string  { return wfRelative(wfParseRFC(s)) }

func wfParseRFC(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
