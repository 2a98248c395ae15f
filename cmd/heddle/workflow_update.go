package main

// This file is "heddle workflow update", Temporal's "workflow update":
// execute sends an update to a run and prints its result, start sends it
// and returns once the workflow accepted it, result waits for the result
// of an update sent earlier. They go through the SDK client's
// UpdateWorkflow over the HTTP API, so the update is validated by a worker
// (asked as queries are), admitted into the run's history, and run by the
// workflow's handler exactly as a Go program's would be.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/spf13/cobra"
)

// wfUpdateOutput is the JSON document of the update commands. A result
// that is JSON is embedded as JSON; any other in result_base64.
type wfUpdateOutput struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	UpdateID   string `json:"update_id"`
	Name       string `json:"name,omitempty"`
	// Stage is how far the command waited: "accepted" (start) or
	// "completed" (execute, result).
	Stage        string          `json:"stage"`
	Result       json.RawMessage `json:"result,omitempty"`
	ResultBase64 []byte          `json:"result_base64,omitempty"`
}

func newWFUpdateCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update",
		Short: "send an update to a run and print its result (execute, start, result)",
		Long: "Sends an update to a run, as the SDK client's UpdateWorkflow does: a worker of the\n" +
			"run's task queue validates it, the run's history records it, and the workflow's\n" +
			"update handler runs it and returns its result. A rejected update leaves nothing in\n" +
			"the history. Some worker of the queue must serve queries (it validates updates).",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	cmd.AddCommand(newWFUpdateSendCommand(g, true), newWFUpdateSendCommand(g, false), newWFUpdateResultCommand(g))
	return cmd
}

// newWFUpdateSendCommand is "update execute" (wait for the result), or
// "update start" (wait until it is accepted).
func newWFUpdateSendCommand(g *wfGlobals, execute bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "execute {ID | -w WORKFLOW-ID | -r RUN-ID} --name NAME [--input JSON]... [--update-id ID]",
		Short: "send an update and wait for its result",
		Long: "Sends update NAME, with the --input values as its arguments, to a run and waits\n" +
			"for its handler to return; prints the result. The exit status is 1 when the\n" +
			"update was rejected or its handler failed. A workflow id updates its current run.",
		Args: cobra.ArbitraryArgs,
	}
	if !execute {
		cmd.Use = "start {ID | -w WORKFLOW-ID | -r RUN-ID} --name NAME [--input JSON]... [--update-id ID]"
		cmd.Short = "send an update and wait until the workflow accepts it"
		cmd.Long = "Sends update NAME to a run and returns once the workflow accepted it (its\n" +
			"validator passed) and prints its update id; \"heddle workflow update result\"\n" +
			"waits for its result. The exit status is 1 when the update was rejected."
	}
	target := addTargetFlags(cmd.Flags())
	input := wfJSONValues{repeat: true}
	var (
		name, updateID string
		timeout        time.Duration
	)
	cmd.Flags().StringVar(&name, "name", "", "the update's `name`, as the workflow's handler is registered (required)")
	cmd.Flags().Var(&input, "input", "an update argument as `JSON` (strings quoted: '\"x\"'); repeat for more arguments")
	cmd.Flags().StringVar(&updateID, "update-id", "", "the update's `id`: sending one id twice runs the handler once (default: a random id)")
	cmd.Flags().DurationVar(&timeout, "timeout", wfDefaultQueryTimeout, "how long to wait for a worker to validate and accept the update")
	if !execute {
		// Temporal's CLI asks for the stage; accepted is the one it offers.
		cmd.Flags().Func("wait-for-stage", "the `stage` to wait for: accepted (the only one; as Temporal's CLI)", func(s string) error {
			if !strings.EqualFold(s, "accepted") {
				return fmt.Errorf("unknown stage %q; want accepted (\"update execute\" waits for the result)", s)
			}
			return nil
		})
	}
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, _, err := target.args(args)
		if err != nil {
			return err
		}
		switch {
		case name == "":
			return usagef("--name is required: the update's name, as the workflow's handler is registered")
		case timeout <= 0:
			return usagef("--timeout %v must be positive", timeout)
		}
		updateArgs := make([]any, len(input.vals))
		for i, v := range input.vals {
			updateArgs[i] = v
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
			return fmt.Errorf("workflow %s (job %d) is %s: only an open run takes updates", j.WorkflowID, j.ID, j.Status)
		}
		cl := client.New(svc)
		defer cl.Close()
		// The worker's validation and the workflow's acceptance are bounded
		// by --timeout; the handler's work, which may be long, is not.
		actx, cancel := context.WithTimeout(c.ctx, timeout)
		defer cancel()
		h, err := cl.UpdateWorkflow(actx, client.UpdateWorkflowOptions{UpdateID: updateID, WorkflowID: j.WorkflowID,
			RunID: strconv.FormatUint(uint64(j.ID), 10), UpdateName: name, Args: updateArgs,
			WaitForStage: client.WorkflowUpdateStageAccepted})
		if err != nil {
			return wfUpdateError(c, j, name, updateID, timeout, actx, err)
		}
		out := wfUpdateOutput{WorkflowID: j.WorkflowID, JobID: uint64(j.ID), UpdateID: h.UpdateID(), Name: name, Stage: "accepted"}
		if !execute {
			return wfPrintUpdate(c, out)
		}
		return wfUpdateResult(c, h, out)
	})
	return cmd
}

func newWFUpdateResultCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "result {ID | -w WORKFLOW-ID | -r RUN-ID} --update-id ID",
		Short: "wait for the result of an update sent earlier",
		Long: "Waits for the handler of update ID (sent by \"update start\", or by a program) to\n" +
			"return and prints its result. The exit status is 1 when the update was rejected\n" +
			"or its handler failed. A workflow id names its current run.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	var updateID string
	cmd.Flags().StringVar(&updateID, "update-id", "", "the update's `id`, as update start printed it (required)")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, _, err := target.args(args)
		if err != nil {
			return err
		}
		if updateID == "" {
			return usagef("--update-id is required: the id \"update start\" printed")
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		j, err := target.describe(c.ctx, svc, id)
		if err != nil {
			return err
		}
		name, err := wfUpdateName(c.ctx, svc, j, updateID)
		if err != nil {
			return err
		}
		cl := client.New(svc)
		defer cl.Close()
		h := cl.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: j.WorkflowID,
			RunID: strconv.FormatUint(uint64(j.ID), 10), UpdateID: updateID})
		return wfUpdateResult(c, h, wfUpdateOutput{WorkflowID: j.WorkflowID, JobID: uint64(j.ID), UpdateID: updateID, Name: name})
	})
	return cmd
}

// wfUpdateName finds update id's request in run j's history and returns
// its name, so that a mistyped id fails at once instead of waiting for an
// update that never comes.
func wfUpdateName(ctx context.Context, svc engine.Service, j *engine.Job, id string) (string, error) {
	for after := uint64(0); ; {
		page, err := svc.History(ctx, j.ID, after, engine.MaxPage)
		if err != nil {
			return "", err
		}
		for _, ev := range page.Events {
			if ev.Type != engine.EventSignalReceived || ev.Name != workflow.UpdateSignalName {
				continue
			}
			var req workflow.UpdateRequest
			if json.Unmarshal(ev.Payload, &req) == nil && req.ID == id {
				return req.Name, nil
			}
		}
		if page.Next == 0 {
			return "", fmt.Errorf("workflow %s (job %d) received no update with id %q (\"heddle workflow history\" lists what it received)", j.WorkflowID, j.ID, id)
		}
		after = page.Next
	}
}

// wfUpdateResult waits for update h's handler to return and prints out
// with its result; a rejection or a failure of the handler is exit status 1.
func wfUpdateResult(c *wfCall, h client.WorkflowUpdateHandle, out wfUpdateOutput) error {
	// Any result decodes as JSON: bytes as their base64 string.
	var raw json.RawMessage
	err := h.Get(c.ctx, &raw)
	if err != nil {
		if c.ctx.Err() != nil {
			return fmt.Errorf("stopped waiting for update %s of workflow %s; it goes on (\"heddle workflow update result --update-id %s\" waits for it again)", out.UpdateID, out.WorkflowID, out.UpdateID)
		}
		return fmt.Errorf("update %s (id %s) of workflow %s: %w", out.Name, out.UpdateID, out.WorkflowID, err)
	}
	out.Stage = "completed"
	out.Result = wfResultJSON(raw)
	if out.Result == nil && len(raw) > 0 {
		out.ResultBase64 = raw
	}
	return wfPrintUpdate(c, out)
}

// wfUpdateError explains an update that was not accepted.
func wfUpdateError(c *wfCall, j *engine.Job, name, updateID string, timeout time.Duration, actx context.Context, err error) error {
	var rej *client.UpdateRejectedError
	switch {
	case errors.As(err, &rej):
		return fmt.Errorf("update %s of workflow %s was rejected: %v", name, j.WorkflowID, rej.Cause)
	case c.ctx.Err() == nil && actx.Err() != nil, errors.Is(err, httpapi.ErrQueryTimeout), errors.Is(err, client.ErrNoQuerier):
		again := ""
		if updateID != "" {
			again = fmt.Sprintf(" (if it was admitted, it runs when a worker takes the run: \"heddle workflow update result --update-id %s\" waits for it)", updateID)
		}
		return fmt.Errorf("no worker of queue %q accepted update %s within %v: is one running and serving queries?%s", j.Queue, name, timeout, again)
	}
	return err
}

// wfPrintUpdate prints an update command's outcome.
func wfPrintUpdate(c *wfCall, out wfUpdateOutput) error {
	if !c.table() {
		return c.doc(out)
	}
	p := newPrinter(c.out)
	wfKV(p, "Workflow ID", wfCell(out.WorkflowID))
	wfKV(p, "Job ID", fmt.Sprint(out.JobID))
	if out.Name != "" {
		wfKV(p, "Update", wfCell(out.Name))
	}
	wfKV(p, "Update ID", wfCell(out.UpdateID))
	wfKV(p, "Stage", out.Stage)
	if out.Stage == "completed" {
		switch {
		case out.Result != nil:
			wfKV(p, "Result", wfCell(wfPayloadText(out.Result, wfResultWidth)))
		case out.ResultBase64 != nil:
			wfKV(p, "Result", wfPayloadText(out.ResultBase64, wfResultWidth))
		default:
			wfKV(p, "Result", "(none)")
		}
	}
	return p.err()
}
