package main

// This file is "heddle workflow start" and "heddle workflow execute": it
// creates a run as the SDK client's ExecuteWorkflow does (arguments encoded
// by the SDK's converter, so workers decode them unchanged) and, with
// --wait (execute always), waits for the workflow's outcome, as Temporal's
// "workflow execute" does. A run that did not complete exits 1, so scripts
// can chain on success.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// wfStartOutput is start's JSON document.
type wfStartOutput struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	// Existing: the reuse policy return-existing handed back an open run.
	Existing bool `json:"existing"`
	// Outcome is the workflow's last run once it ended (--wait only).
	Outcome *wfJobDoc `json:"outcome,omitempty"`
}

// wfReusePolicies names the workflow-id reuse policies on the command line.
var wfReusePolicies = []struct {
	name   string
	policy engine.IDReusePolicy
}{
	{"allow-after-terminal", engine.IDReuseAllowAfterTerminal},
	{"reject-duplicate", engine.IDReuseRejectDuplicate},
	{"return-existing", engine.IDReuseReturnExisting},
}

func wfReusePolicyNames() string {
	var names []string
	for _, p := range wfReusePolicies {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

// newWFStartCommand is start, or execute (start and wait) when execute is set.
func newWFStartCommand(g *wfGlobals, execute bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "start --type TYPE -t QUEUE [-w ID] [--input JSON]... [--wait]",
		Short: "start a workflow run (optionally wait for its result)",
		Long: "Starts a run of workflow type TYPE on task queue QUEUE and prints its workflow id\n" +
			"and job (run) id. With --wait it then waits for the workflow to end and prints its\n" +
			"result (as \"heddle workflow execute\" does); the exit status is 1 when the workflow\n" +
			"did not complete.",
		Args: noArgs,
	}
	if execute {
		cmd.Use = "execute --type TYPE -t QUEUE [-w ID] [--input JSON]..."
		cmd.Short = "start a workflow run and wait for its result"
		cmd.Long = "Starts a run of workflow type TYPE on task queue QUEUE, waits for the workflow to\n" +
			"end (following continue-as-new and retries to its last run) and prints its result:\n" +
			"\"heddle workflow start --wait\". The exit status is 1 when the workflow did not\n" +
			"complete (failed, cancelled, terminated or timed out). Ctrl-C stops the wait, not\n" +
			"the run; \"heddle workflow result\" waits for it again."
	}
	fs := cmd.Flags()
	var (
		typ, queue, id string
		input          = wfJSONValues{repeat: true}
		policy         = engine.IDReuseAllowAfterTerminal
		timeout        time.Duration
		wait           bool
	)
	fs.StringVar(&typ, "type", "", "workflow `type` to run, as registered on the worker (required)")
	fs.StringVarP(&queue, "task-queue", "t", "", "task `queue` whose workers run it (required; also --queue)")
	fs.StringVar(&queue, "queue", "", "the same as --task-queue")
	fs.StringVarP(&id, "workflow-id", "w", "", "workflow `id` (default: the engine names it job-<job id>; also --id)")
	fs.StringVar(&id, "id", "", "the same as --workflow-id")
	_ = fs.MarkHidden("queue")
	_ = fs.MarkHidden("id")
	fs.Var(&input, "input", "a workflow argument as `JSON` (strings quoted: '\"x\"'); repeat for more arguments")
	fs.Func("reuse-policy", "what to do when the workflow id already has a run, a `policy`: "+wfReusePolicyNames()+
		" (default allow-after-terminal: start a new run once the last one closed)", func(s string) error {
		for _, p := range wfReusePolicies {
			if strings.EqualFold(strings.ReplaceAll(s, "_", "-"), p.name) {
				policy = p.policy
				return nil
			}
		}
		return fmt.Errorf("unknown policy %q; want one of %s", s, wfReusePolicyNames())
	})
	fs.Func("execution-timeout", "bound on the whole workflow, retries and continue-as-new included, as a Go `duration` (1h, 90s; default none)", func(s string) error {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return errors.New("not a duration such as 90s, 30m or 1h30m")
		case d < 0:
			return errors.New("must not be negative")
		case d > 0 && d < time.Millisecond:
			return errors.New("must be at least 1ms (or 0 for none)")
		}
		timeout = d
		return nil
	})
	if execute {
		wait = true
	} else {
		fs.BoolVar(&wait, "wait", false, "wait for the workflow to end and print its result (as execute does)")
	}
	_ = cmd.RegisterFlagCompletionFunc("reuse-policy", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var names []string
		for _, p := range wfReusePolicies {
			names = append(names, p.name)
		}
		return completeWords(names, prefix), cobra.ShellCompDirectiveNoFileComp
	})
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		switch {
		case typ == "":
			return usagef("--type is required")
		case queue == "":
			return usagef("-t/--task-queue is required")
		}
		payload, err := input.payload()
		if err != nil {
			return usagef("--input: %v", err)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.Create(c.ctx, engine.CreateJob{WorkflowID: id, Type: typ, Queue: queue, Input: payload,
			ReusePolicy: policy, ExecutionTimeoutMS: timeout.Milliseconds()})
		if err != nil {
			return err
		}
		out := wfStartOutput{WorkflowID: res.WorkflowID, JobID: uint64(res.Job), Existing: res.Existing}
		if !wait {
			return wfPrintStart(c, out)
		}
		if c.table() {
			// Say what was started before the wait, which may be long.
			if err := wfPrintStart(c, out); err != nil {
				return err
			}
		}
		j, last, err := wfAwait(c.ctx, svc, res.Job)
		if err != nil {
			return fmt.Errorf("workflow %s started as job %d, but waiting for it failed: %w", res.WorkflowID, res.Job, err)
		}
		return wfReportOutcome(c, out, j, last)
	})
	return cmd
}

func wfPrintStart(c *wfCall, out wfStartOutput) error {
	if !c.table() {
		return c.doc(out)
	}
	p := newPrinter(c.out)
	wfKV(p, "Workflow ID", wfCell(out.WorkflowID))
	wfKV(p, "Job ID", fmt.Sprint(out.JobID))
	if out.Existing {
		wfKV(p, "Note", "an identical run was open; it was returned, not started again")
	}
	return p.err()
}

// wfPrintOutcome prints how the workflow ended, after wfPrintStart's lines.
func wfPrintOutcome(w io.Writer, out wfStartOutput) error {
	p := newPrinter(w)
	d := out.Outcome
	if d.JobID != out.JobID {
		wfKV(p, "Last job ID", fmt.Sprint(d.JobID))
	}
	wfKV(p, "Status", d.Status)
	switch {
	case d.Result != nil:
		wfKV(p, "Result", wfCell(wfPayloadText(d.Result, wfResultWidth)))
	case d.ResultBase64 != nil:
		wfKV(p, "Result", wfPayloadText(d.ResultBase64, wfResultWidth))
	case d.Failure != nil:
		wfKV(p, "Failure", wfCell(wfTruncate(wfFailureText(d.Failure), wfResultWidth)))
	case d.CloseReason != "":
		wfKV(p, "Reason", wfCell(d.CloseReason))
	}
	return p.err()
}
