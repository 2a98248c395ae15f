package main

// This file is "heddle batch", Temporal's `temporal batch`: the batch
// operations of a node or cluster (started with --query on heddle workflow
// cancel, terminate, signal and reset), listed, described with their
// progress, and stopped. A batch is named by its job id, as Temporal names
// it (--job-id), or by the one argument.

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/heddlewf/heddle/engine"
)

func newBatchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "list, describe or terminate batch operations (workflow cancel|terminate|signal|reset|pause|unpause --query)",
		Long: "Shows and stops the batch operations of a heddle node or cluster through its HTTP\n" +
			"API. A batch acts on every run a list filter matched when it started (heddle\n" +
			"workflow cancel, terminate, signal, reset, pause or unpause with --query starts one);\n" +
			"the server runs it at a bounded rate, survives restarts and leader changes, and\n" +
			"acts on each run once. Its progress counts the runs done, failed (with the last\n" +
			"error) and, once it completed, skipped: those that no longer matched when it\n" +
			"reached them.",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(newBatchListCommand(g), newBatchDescribeCommand(g), newBatchTerminateCommand(g))
	return cmd
}

// batchDoc is a batch as the JSON output shows it.
type batchDoc struct {
	JobID      string `json:"job_id"`
	Operation  string `json:"operation"`
	State      string `json:"state"`
	Query      string `json:"query"`
	Reason     string `json:"reason,omitempty"`
	Signal     string `json:"signal_name,omitempty"`
	ResetType  string `json:"reset_type,omitempty"`
	Total      uint64 `json:"total_operation_count"`
	Complete   uint64 `json:"complete_operation_count"`
	Failure    uint64 `json:"failure_operation_count"`
	Skipped    uint64 `json:"skipped_operation_count,omitempty"`
	LastError  string `json:"last_error,omitempty"`
	RPS        int    `json:"rps,omitempty"`
	Identity   string `json:"identity,omitempty"`
	StoppedBy  string `json:"stopped_by,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	StartTime  string `json:"start_time"`
	CloseTime  string `json:"close_time,omitempty"`
}

func newBatchDoc(b *engine.Batch) batchDoc {
	d := batchDoc{JobID: b.ID, Operation: string(b.Operation), State: b.State.String(), Query: b.Query, Reason: b.Reason,
		Signal: b.SignalName, Total: b.Total, Complete: b.Done, Failure: b.Failed, Skipped: b.Skipped, LastError: b.LastError,
		RPS: b.RunsPerSecond, Identity: b.By, StoppedBy: b.StopBy, StopReason: b.StopReason,
		StartTime: wfRFC3339(b.CreatedMS), CloseTime: wfRFC3339(b.ClosedMS)}
	if b.Operation == engine.BatchReset {
		d.ResetType = b.ResetType.String()
	}
	return d
}

// batchIDArg takes the batch's id from --job-id or the one argument.
func batchIDArg(jobID string, args []string) (string, error) {
	switch {
	case jobID != "" && len(args) > 0:
		return "", usagef("give the batch's id once: --job-id or the argument")
	case jobID != "":
		return jobID, nil
	case len(args) == 1:
		return args[0], nil
	case len(args) > 1:
		return "", usagef("unexpected argument %q", args[1])
	}
	return "", usagef("missing the batch's id: --job-id ID (heddle batch list shows them)")
}

func newBatchListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--limit N] [--cursor C]",
		Short: "list batch operations with their progress",
		Long:  "Lists batch operations in id order, one page at a time, with their state and progress.",
		Args:  noArgs,
	}
	var (
		limit  int
		cursor string
	)
	cmd.Flags().IntVar(&limit, "limit", 100, fmt.Sprintf("most batches to print, `N` from 1 to %d", engine.MaxPage))
	cmd.Flags().StringVar(&cursor, "cursor", "", "start after this `cursor` (a batch id), as printed by the previous page")
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		if limit < 1 || limit > engine.MaxPage {
			return usagef("--limit %d is not between 1 and %d", limit, engine.MaxPage)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		page, err := svc.ListBatches(c.ctx, engine.BatchListQuery{After: cursor, Limit: limit})
		if err != nil {
			return err
		}
		docs := make([]batchDoc, 0, len(page.Batches))
		for _, b := range page.Batches {
			docs = append(docs, newBatchDoc(b))
		}
		switch c.format {
		case formatJSON:
			return c.doc(struct {
				Batches    []batchDoc `json:"batches"`
				NextCursor string     `json:"next_cursor,omitempty"`
			}{docs, page.Next})
		case formatJSONL:
			if page.Next != "" {
				_, _ = fmt.Fprintf(c.err, "next page: --cursor %s\n", page.Next)
			}
			return printLines(c.out, docs)
		}
		tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "JOB ID\tOPERATION\tSTATE\tDONE/TOTAL\tFAILED\tSTARTED\tQUERY")
		for _, d := range docs {
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", wfCell(d.JobID), d.Operation, d.State, d.Complete, d.Total,
				d.Failure, d.StartTime, wfCell(quoteQuery(d.Query)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(docs) == 0 {
			_, err = fmt.Fprintln(c.out, "No batch operations.")
		} else if page.Next != "" {
			_, err = fmt.Fprintf(c.out, "More: --cursor %s\n", page.Next)
		}
		return err
	})
	return cmd
}

func newBatchDescribeCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe {--job-id ID | ID}",
		Short: "show a batch operation and its progress",
		Args:  cobra.ArbitraryArgs,
	}
	var jobID string
	cmd.Flags().StringVarP(&jobID, "job-id", "j", "", "the batch's `id`")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, err := batchIDArg(jobID, args)
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		b, err := svc.DescribeBatch(c.ctx, id)
		if err != nil {
			return err
		}
		if !c.table() {
			return c.doc(newBatchDoc(b))
		}
		return printBatchDoc(c.out, newBatchDoc(b))
	})
	return cmd
}

func printBatchDoc(w io.Writer, d batchDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			_, _ = fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("Job ID", wfCell(d.JobID))
	row("Operation", d.Operation)
	row("State", d.State)
	row("Query", wfCell(quoteQuery(d.Query)))
	row("Reason", wfCell(d.Reason))
	row("Signal", wfCell(d.Signal))
	row("Reset type", d.ResetType)
	row("Progress", fmt.Sprintf("%d of %d done, %d failed", d.Complete, d.Total, d.Failure))
	if d.Skipped > 0 {
		row("Skipped", fmt.Sprintf("%d (no longer matched when reached)", d.Skipped))
	}
	row("Last error", wfCell(d.LastError))
	if d.RPS > 0 {
		row("Rate", fmt.Sprintf("%d runs/s", d.RPS))
	}
	row("Started by", wfCell(d.Identity))
	row("Started", d.StartTime)
	row("Closed", d.CloseTime)
	row("Stopped by", wfCell(d.StoppedBy))
	row("Stop reason", wfCell(d.StopReason))
	return tw.Flush()
}

func newBatchTerminateCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "terminate {--job-id ID | ID} --reason TEXT",
		Short: "stop a running batch operation (the runs it acted on stay so)",
		Long: "Stops a running batch operation (Temporal's batch terminate): it acts on no more\n" +
			"runs. The runs it already acted on stay as they are.",
		Args: cobra.ArbitraryArgs,
	}
	var jobID, reason string
	cmd.Flags().StringVarP(&jobID, "job-id", "j", "", "the batch's `id`")
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept on the batch (required)")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, err := batchIDArg(jobID, args)
		if err != nil {
			return err
		}
		if reason == "" {
			return usagef("--reason is required: say why, for whoever reads the batch")
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.StopBatch(c.ctx, engine.StopBatch{ID: id, Reason: reason})
		if err != nil {
			return err
		}
		d := newBatchDoc(res.Batch)
		if !c.table() {
			return c.doc(d)
		}
		_, err = fmt.Fprintf(c.out, "Terminated batch %s after %d of %d runs (%d failed).\n", wfCell(d.JobID), d.Complete, d.Total, d.Failure)
		return err
	})
	return cmd
}
