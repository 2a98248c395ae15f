package main

// This file is "heddle workflow pause" and "heddle workflow unpause"
// (Temporal's workflow pause and unpause): an operator holds a run while
// finding out why it misbehaves, and lets it go on. A paused run keeps its
// status; it takes no new turn and starts no activity, its running turn
// finishes, and its timers and signals are still recorded
// (docs/state-machines.md §6).

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// wfPauseOutput is the JSON document of pause and unpause.
type wfPauseOutput struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	// Status is the run's status right after the command: a pause does
	// not change it.
	Status string `json:"status"`
	Paused bool   `json:"paused"`
	// Seq is the seq of the event the command appended; 0 when the run
	// already was as asked and nothing was written.
	Seq uint64 `json:"seq,omitempty"`
}

// newWFPauseCommand is pause, or unpause when unpause is set.
func newWFPauseCommand(g *wfGlobals, unpause bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pause {ID | -w WORKFLOW-ID | -r RUN-ID | -q QUERY [--yes]} [--reason TEXT]",
		Short: "pause a run: it takes no new turn and starts no activity until unpaused",
		Long: "Pauses a run (Temporal's workflow pause). It keeps its status, timers and steps:\n" +
			"a turn that runs finishes (its running activities end, no new one starts), and the\n" +
			"run is not taken by a worker again until it is unpaused. Timers fire and signals\n" +
			"arrive while it is paused, and are recorded; its timeouts keep running. Its\n" +
			"activities on other task queues are held too. Pausing a paused run changes\n" +
			"nothing. A workflow id names its current run.\n\n" + wfBatchQueryHelp,
		Args: cobra.ArbitraryArgs,
	}
	if unpause {
		cmd.Use = "unpause {ID | -w WORKFLOW-ID | -r RUN-ID | -q QUERY [--yes]} [--reason TEXT]"
		cmd.Short = "let a paused run go on"
		cmd.Long = "Unpauses a run (Temporal's workflow unpause): a worker takes it again, and it\n" +
			"starts what the pause held back. Unpausing a run that is not paused changes\n" +
			"nothing. A workflow id names its current run.\n\n" + wfBatchQueryHelp
	}
	target := addTargetFlags(cmd.Flags())
	var reason, requestID string
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the run's history")
	cmd.Flags().StringVar(&requestID, "request-id", "", "an `id` that makes the command idempotent: sent again, it changes nothing more")
	verb, op := "pause", engine.BatchPause
	if unpause {
		verb, op = "unpause", engine.BatchUnpause
	}
	query := addQueryFlags(cmd, verb)
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		if query.given(cmd) {
			if err := noTargetWithQuery(target, args); err != nil {
				return err
			}
			if requestID != "" {
				return usagef("--request-id names one run's command: a batch gives each run's its own")
			}
			return query.start(c, engine.BatchSpec{Operation: op, Reason: reason})
		}
		id, _, err := target.args(args)
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		t, j, err := target.resolve(c.ctx, svc, id)
		if err != nil {
			return err
		}
		var res *engine.StatusResult
		if unpause {
			cmd := engine.Unpause{Target: t, Reason: reason}
			cmd.RequestID = requestID
			res, err = svc.Unpause(c.ctx, cmd)
		} else {
			cmd := engine.Pause{Target: t, Reason: reason}
			cmd.RequestID = requestID
			res, err = svc.Pause(c.ctx, cmd)
		}
		if err != nil {
			return err
		}
		out := wfPauseOutput{WorkflowID: wfWorkflowOf(t, j), JobID: uint64(res.Job), Status: res.Status.String(), Paused: !unpause, Seq: res.Seq}
		if !c.table() {
			return c.doc(out)
		}
		verb, already := "Paused", "was paused already"
		if unpause {
			verb, already = "Unpaused", "was not paused"
		}
		if out.Seq == 0 {
			_, err = fmt.Fprintf(c.out, "Workflow %s (job %d) %s: nothing changed. It is %s.\n", wfCell(out.WorkflowID), out.JobID, already, out.Status)
			return err
		}
		_, err = fmt.Fprintf(c.out, "%s workflow %s (job %d) as event %d. It is %s.\n", verb, wfCell(out.WorkflowID), out.JobID, out.Seq, out.Status)
		return err
	})
	return cmd
}
