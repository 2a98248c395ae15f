package main

// This file is "heddle workflow cancel" and "heddle workflow terminate", the
// two ways to stop a run. Cancel asks: the workflow code sees its context
// cancelled and may clean up (compensate, release) before it ends. Terminate
// ends the run at once as Terminated, running no code: for a run that is
// stuck or whose code is gone.

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// wfStopOutput is the JSON document of cancel and terminate.
type wfStopOutput struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	// Status is the run's status right after the command: still open after
	// a cancel request, Terminated after terminate.
	Status string `json:"status"`
	// Seq is the seq of the event the command appended.
	Seq uint64 `json:"seq"`
}

// newWFCancelCommand is cancel, or terminate when terminate is set.
func newWFCancelCommand(g *wfGlobals, terminate bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel {ID | -w WORKFLOW-ID | -r RUN-ID | -q QUERY [--yes]} [--reason TEXT]",
		Short: "ask a run to cancel itself (its workflow code decides how to end)",
		Long: "Asks a run to cancel itself: its workflow code sees its context cancelled and\n" +
			"decides how to end. A workflow id names its current run.\n\n" + wfBatchQueryHelp,
		Args: cobra.ArbitraryArgs,
	}
	if terminate {
		cmd.Use = "terminate {ID | -w WORKFLOW-ID | -r RUN-ID | -q QUERY [--yes]} [--reason TEXT]"
		cmd.Short = "end a run at once as Terminated, without running workflow code"
		cmd.Long = "Ends a run at once as Terminated, without running workflow code (no cleanup, no\n" +
			"compensation): for a run that is stuck or whose code is gone. Its children end as\n" +
			"their parent-close policy says. \"heddle workflow cancel\" asks the code to end\n" +
			"instead. A workflow id names its current run.\n\n" + wfBatchQueryHelp
	}
	target := addTargetFlags(cmd.Flags())
	var reason string
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the run's history")
	verb, op := "cancel", engine.BatchCancel
	if terminate {
		verb, op = "terminate", engine.BatchTerminate
	}
	query := addQueryFlags(cmd, verb)
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		if query.given(cmd) {
			if err := noTargetWithQuery(target, args); err != nil {
				return err
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
		if terminate {
			res, err = svc.Terminate(c.ctx, engine.Terminate{Target: t, Reason: reason})
		} else {
			res, err = svc.RequestCancel(c.ctx, engine.RequestCancel{Target: t, Reason: reason})
		}
		if errors.Is(err, engine.ErrJobClosed) || errors.Is(err, engine.ErrIllegalTransition) {
			// Say it in the words of the run, not of the engine's tables.
			if j, derr := svc.Describe(c.ctx, t); derr == nil && j.Status.Terminal() {
				verb := "cancelled"
				if terminate {
					verb = "terminated"
				}
				return fmt.Errorf("workflow %s (job %d) already ended %s: only an open run can be %s", j.WorkflowID, j.ID, j.Status, verb)
			}
		}
		if err != nil {
			return err
		}
		out := wfStopOutput{WorkflowID: wfWorkflowOf(t, j), JobID: uint64(res.Job), Status: res.Status.String(), Seq: res.Seq}
		if !c.table() {
			return c.doc(out)
		}
		if terminate {
			_, err = fmt.Fprintf(c.out, "Terminated workflow %s (job %d): %s, event %d.\n", wfCell(out.WorkflowID), out.JobID, out.Status, out.Seq)
		} else {
			_, err = fmt.Fprintf(c.out, "Cancel requested for workflow %s (job %d) as event %d; it is %s until its code ends it.\n",
				wfCell(out.WorkflowID), out.JobID, out.Seq, out.Status)
		}
		return err
	})
	return cmd
}
