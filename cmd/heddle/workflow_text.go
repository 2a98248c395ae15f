package main

// This file prints runs for people: aligned "key  value" blocks for one run
// and aligned tables for many. It works from the JSON documents of
// workflow_doc.go, so the text and -o json never disagree about a run.

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heddlewf/heddle/engine"
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
	kv("Attempt", fmt.Sprint(d.Attempt))
	if d.RunAttempt > 1 { // the first run of every workflow is run 1
		kv("Run attempt", fmt.Sprint(d.RunAttempt))
	}
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
		kv("Waiting for", wfWaitText(d.WaitingFor, wfRelRFC))
	}
	if d.QueuedReason != nil {
		kv("Why queued", wfCell(d.QueuedReason.Message))
	}
	for _, t := range d.Timers {
		kv("Timer", fmt.Sprintf("%s fires %s", wfCell(t.ID), wfRelRFC(t.FireAt)))
	}
	for _, s := range d.Steps {
		kv("Step "+wfCell(s.Step), stepLine(s))
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
// 5s"; when formats a timer's fire time.
func wfWaitText(w *wfWaitDoc, when func(rfc3339 string) string) string {
	var parts []string
	if w.AnySignal {
		parts = append(parts, "any signal")
	}
	for _, s := range w.Signals {
		parts = append(parts, "signal "+wfCell(s))
	}
	for _, s := range w.Steps {
		parts = append(parts, "step "+wfCell(s))
	}
	for _, t := range w.Timers {
		parts = append(parts, fmt.Sprintf("timer %s %s", wfCell(t.ID), when(t.FireAt)))
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
