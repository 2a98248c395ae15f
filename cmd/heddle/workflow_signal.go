package main

// This file is "heddle workflow signal": it delivers a named signal to a run,
// with one JSON value encoded as the SDK client's SignalWorkflow encodes its
// argument, so workflow code receives it unchanged.

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/spf13/cobra"
)

// wfSignalOutput is signal's JSON document.
type wfSignalOutput struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	Signal     string `json:"signal"`
	// Seq is the signal_received event's seq in the run's history.
	Seq uint64 `json:"seq"`
	// Woke: the run was waiting for this signal and now runs again.
	Woke bool `json:"woke"`
}

func newWFSignalCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "signal {ID | -w WORKFLOW-ID | -r RUN-ID | -q QUERY [--yes]} {NAME | --name NAME} [--input JSON]",
		Short: "send a signal to a run",
		Long: "Sends signal NAME to a run, with one JSON value (null without --input).\n" +
			"A workflow id signals its current run.\n\n" + wfBatchQueryHelp,
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	input := wfJSONValues{}
	var name string
	cmd.Flags().StringVar(&name, "name", "", "the signal's `name`, instead of the NAME argument")
	cmd.Flags().Var(&input, "input", "the signal's value as `JSON` (strings quoted: '\"x\"')")
	query := addQueryFlags(cmd, "signal")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		if query.given(cmd) {
			return signalByQuery(c, query, target, args, name, cmd.Flags().Changed("name"), &input)
		}
		var rest []string
		if !cmd.Flags().Changed("name") {
			rest = []string{"NAME"}
		}
		id, pos, err := target.args(args, rest...)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			name = pos[0]
		}
		if name == "" {
			return usagef("NAME must not be empty")
		}
		// One value, always: workflow code receives a signal into one variable.
		var value any // null without --input
		if len(input.vals) == 1 {
			value = input.vals[0]
		}
		payload, err := converter.Encode(value)
		if err != nil {
			return usagef("--input: %v", err)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		t, j, err := target.resolve(c.ctx, svc, id)
		if err != nil {
			return err
		}
		res, err := svc.Signal(c.ctx, engine.Signal{Target: t, Name: name, Payload: payload})
		if err != nil {
			return err
		}
		out := wfSignalOutput{WorkflowID: wfWorkflowOf(t, j), JobID: uint64(res.Job), Signal: name, Seq: res.Seq, Woke: res.Woke}
		if !c.table() {
			return c.doc(out)
		}
		woke := "the run was not waiting for it; it will see it when it next looks"
		if out.Woke {
			woke = "it woke the waiting run"
		}
		_, err = fmt.Fprintf(c.out, "Signal %s sent to workflow %s (job %d) as event %d; %s.\n",
			wfCell(name), wfCell(out.WorkflowID), out.JobID, out.Seq, woke)
		return err
	})
	return cmd
}

// wfWorkflowOf is the workflow id of the run t names; j is the run when
// wfResolve had to look it up.
func wfWorkflowOf(t engine.Target, j *engine.Job) string {
	if j != nil {
		return j.WorkflowID
	}
	return t.WorkflowID
}
