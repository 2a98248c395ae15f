package main

// This file is "heddle workflow cancel" and "heddle workflow terminate", the
// two ways to stop a run. Cancel asks: the workflow code sees its context
// cancelled and may clean up (compensate, release) before it ends. Terminate
// ends the run at once as Cancelled, running no code: for a run that is stuck
// or whose code is gone.

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// wfStopOutput is the JSON document of cancel and terminate.
type wfStopOutput struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	// Status is the run's status right after the command: still open after
	// a cancel request, Cancelled after terminate.
	Status string `json:"status"`
	// Seq is the seq of the event the command appended.
	Seq uint64 `json:"seq"`
}

func runWFCancel(ctx context.Context, wio wfIO, args []string) error {
	return wfStop(ctx, wio, args, false)
}

func runWFTerminate(ctx context.Context, wio wfIO, args []string) error {
	return wfStop(ctx, wio, args, true)
}

func wfStop(ctx context.Context, wio wfIO, args []string, terminate bool) error {
	about := "Asks a run to cancel itself: its workflow code sees its context cancelled and\n" +
		"decides how to end. A workflow id names its current run."
	if terminate {
		about = "Ends a run at once as Cancelled, without running workflow code (no cleanup).\n" +
			"A workflow id names its current run."
	}
	f := newWFFlags(wio, "ID [--reason TEXT] [flags]", about)
	var reason string
	f.fs.StringVar(&reason, "reason", "", "why, recorded in the run's history")
	pos, err := f.parse(args, "ID")
	if err != nil {
		return err
	}
	svc, err := f.client()
	if err != nil {
		return err
	}
	t, j, err := wfResolve(ctx, svc, pos[0])
	if err != nil {
		return err
	}
	var res *engine.StatusResult
	if terminate {
		res, err = svc.Cancel(ctx, engine.Cancel{Target: t, Reason: reason})
	} else {
		res, err = svc.RequestCancel(ctx, engine.RequestCancel{Target: t, Reason: reason})
	}
	if err != nil {
		return err
	}
	out := wfStopOutput{WorkflowID: wfWorkflowOf(t, j), JobID: uint64(res.Job), Status: res.Status.String(), Seq: res.Seq}
	if f.json {
		return wfPrintJSON(wio.out, out)
	}
	if terminate {
		fmt.Fprintf(wio.out, "Terminated workflow %s (job %d): %s, event %d.\n", wfCell(out.WorkflowID), out.JobID, out.Status, out.Seq)
	} else {
		fmt.Fprintf(wio.out, "Cancel requested for workflow %s (job %d) as event %d; it is %s until its code ends it.\n",
			wfCell(out.WorkflowID), out.JobID, out.Seq, out.Status)
	}
	return nil
}
