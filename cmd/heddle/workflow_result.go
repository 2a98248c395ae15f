package main

// This file is "heddle workflow result" (Temporal's "workflow result"): it
// waits for a workflow to end, following continue-as-new and retries to its
// last run as the SDK client's WorkflowRun.Get does, and prints how it
// ended. A workflow that did not complete exits 1, as execute does.

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

func newWFResultCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "result {ID | -w WORKFLOW-ID | -r RUN-ID}",
		Short: "wait for a workflow to end and print its result",
		Long: "Waits for a workflow to end and prints its result, or how it ended: a workflow id\n" +
			"waits for its current run, and a run that continues as new or is retried is\n" +
			"followed to the workflow's last run. A run that ended already answers at once.\n" +
			"The exit status is 1 when the workflow did not complete (failed, cancelled,\n" +
			"terminated or timed out). Ctrl-C stops the wait, not the run.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, _, err := target.args(args)
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		j, err := target.describe(c.ctx, svc, id)
		if err != nil {
			return err
		}
		if c.table() && !j.Status.Terminal() {
			// Say what is waited for before the wait, which may be long.
			_, _ = fmt.Fprintf(c.err, "Waiting for workflow %s (job %d, %s) to end...\n", wfCell(j.WorkflowID), j.ID, j.Status)
		}
		last, closing, err := wfAwait(c.ctx, svc, j.ID)
		if err != nil {
			return fmt.Errorf("waiting for workflow %s (job %d): %w", j.WorkflowID, j.ID, err)
		}
		if !c.table() {
			// The document of the workflow's last run, as describe prints it.
			if err := c.doc(wfJobOf(last, closing)); err != nil {
				return err
			}
			return wfExitFor(c, last)
		}
		out := wfStartOutput{WorkflowID: last.WorkflowID, JobID: uint64(j.ID)}
		if err := wfPrintStart(c, out); err != nil {
			return err
		}
		return wfReportOutcome(c, out, last, closing)
	})
	return cmd
}

// wfReportOutcome prints how the workflow of out ended (its last run last,
// with its closing event) after start's or result's first lines, as its
// JSON document or for people, and returns exit status 1 when it did not
// complete.
func wfReportOutcome(c *wfCall, out wfStartOutput, last *engine.Job, closing *engine.Event) error {
	doc := wfJobOf(last, closing)
	out.Outcome = &doc
	var err error
	if c.table() {
		err = wfPrintOutcome(c.out, out)
	} else {
		err = c.doc(out)
	}
	if err != nil {
		return err
	}
	return wfExitFor(c, last)
}

// wfExitFor is exit status 1, said on stderr, for a workflow whose last run
// did not complete; nil for one that did.
func wfExitFor(c *wfCall, last *engine.Job) error {
	if last.Status != engine.StatusCompleted {
		// Exit status 1 says it already; the line only says how it ended.
		_, _ = fmt.Fprintf(c.err, "%s: workflow %s ended %s\n", c.path, last.WorkflowID, last.Status)
		return exitError{code: 1}
	}
	return nil
}
