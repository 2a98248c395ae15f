package main

// This file is "heddle workflow stack" (Temporal's "workflow stack"): it
// asks a run the __stack_trace query, which every workflow answers with
// where each of its coroutines blocks, in the workflow code's own files
// and lines. It is the first look at a run that waits and should not.

import (
	"fmt"
	"strings"
	"time"

	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/spf13/cobra"
)

// wfStackOutput is stack's JSON document.
type wfStackOutput struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	StackTrace string `json:"stack_trace"`
}

func newWFStackCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stack {ID | -w WORKFLOW-ID | -r RUN-ID}",
		Short: "show where a run's workflow code waits: each coroutine's file and line",
		Long: "Asks a run the stack trace query (__stack_trace): a worker of the run's task queue\n" +
			"replays its history and answers with each coroutine of the workflow code, the\n" +
			"SDK call it blocks in (a timer, a signal, an activity's result) and the file and\n" +
			"line of the workflow code that called it. The run's history is not changed. Some\n" +
			"worker of that queue must serve queries. A workflow id asks its current run.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	var timeout time.Duration
	cmd.Flags().DurationVar(&timeout, "timeout", wfDefaultQueryTimeout, "how long to wait for a worker to answer")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, _, err := target.args(args)
		if err != nil {
			return err
		}
		if timeout <= 0 {
			return usagef("--timeout %v must be positive", timeout)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		j, err := target.describe(c.ctx, svc, id)
		if err != nil {
			return err
		}
		if j.Status.Terminal() {
			return fmt.Errorf("workflow %s (job %d) is %s: a run that ended waits nowhere (\"heddle workflow describe\" shows how it ended)", j.WorkflowID, j.ID, j.Status)
		}
		data, err := wfAsk(c, svc, j, workflow.StackTraceQuery, nil, timeout)
		if err != nil {
			return err
		}
		var trace string
		if err := converter.Decode(data, &trace); err != nil {
			return fmt.Errorf("the worker's stack trace: %w", err)
		}
		out := wfStackOutput{WorkflowID: j.WorkflowID, JobID: uint64(j.ID), StackTrace: trace}
		if !c.table() {
			return c.doc(out)
		}
		p := newPrinter(c.out)
		p.printf("Workflow %s (job %d, %s):\n\n", wfCell(out.WorkflowID), out.JobID, j.Status)
		if trace == "" {
			p.printf("(no coroutine of workflow code waits: the run has not started its workflow yet)\n")
		} else {
			p.printf("%s\n", strings.TrimRight(trace, "\n"))
		}
		return p.err()
	})
	return cmd
}
