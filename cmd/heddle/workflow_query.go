package main

// This file is "heddle workflow query": it asks a run's workflow code a
// question (a query handler registered with workflow.SetQueryHandler) and
// prints the answer. The server hands the query to a worker process of the
// run's task queue that serves queries (as "heddle worker" does, through
// httpapi.Client's ServeQueries), which replays the run's history to answer; the run's
// history is not changed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/spf13/cobra"
)

// wfQueryOutput is query's JSON document. A result that is JSON is
// embedded as JSON; any other in result_base64.
type wfQueryOutput struct {
	WorkflowID   string          `json:"workflow_id"`
	JobID        uint64          `json:"job_id"`
	Query        string          `json:"query"`
	Result       json.RawMessage `json:"result,omitempty"`
	ResultBase64 []byte          `json:"result_base64,omitempty"`
}

// wfDefaultQueryTimeout bounds the wait for a worker to answer: a worker
// answers in milliseconds, so a long silence means none serves the queue.
const wfDefaultQueryTimeout = 10 * time.Second

func newWFQueryCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "query {ID | -w WORKFLOW-ID | -r RUN-ID} {NAME | --name NAME} [--input JSON]...",
		Short: "ask a run's workflow code a query and print the answer",
		Long: "Sends query NAME, with the --input values as its arguments, to a worker of the\n" +
			"run's task queue, which answers from the run's history without changing it. Some\n" +
			"worker of that queue must serve queries. A workflow id asks its current run.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	input := wfJSONValues{repeat: true}
	var (
		name    string
		timeout time.Duration
	)
	cmd.Flags().StringVar(&name, "name", "", "the query's `name` (its query type), instead of the NAME argument")
	cmd.Flags().Var(&input, "input", "a query argument as `JSON` (strings quoted: '\"x\"'); repeat for more arguments")
	cmd.Flags().DurationVar(&timeout, "timeout", wfDefaultQueryTimeout, "how long to wait for a worker to answer")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
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
		switch {
		case name == "":
			return usagef("NAME must not be empty")
		case timeout <= 0:
			return usagef("--timeout %v must be positive", timeout)
		}
		queryArgs := make([]any, len(input.vals))
		for i, v := range input.vals {
			queryArgs[i] = v
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		// The run is pinned first, so that the answer is the run printed.
		j, err := target.describe(c.ctx, svc, id)
		if err != nil {
			return err
		}
		data, err := wfAsk(c, svc, j, name, queryArgs, timeout)
		if err != nil {
			return err
		}
		out := wfQueryOutput{WorkflowID: j.WorkflowID, JobID: uint64(j.ID), Query: name}
		out.Result = wfResultJSON(data)
		if out.Result == nil && len(data) > 0 {
			out.ResultBase64 = data
		}
		if !c.table() {
			return c.doc(out)
		}
		p := newPrinter(c.out)
		wfKV(p, "Workflow ID", wfCell(out.WorkflowID))
		wfKV(p, "Job ID", fmt.Sprint(out.JobID))
		wfKV(p, "Query", wfCell(name))
		switch {
		case out.Result != nil:
			wfKV(p, "Result", wfCell(wfPayloadText(out.Result, wfResultWidth)))
		case out.ResultBase64 != nil:
			wfKV(p, "Result", wfPayloadText(out.ResultBase64, wfResultWidth))
		default:
			wfKV(p, "Result", "(none)")
		}
		return p.err()
	})
	return cmd
}

// wfAsk asks run j's workflow code query name with args through the node,
// which hands it to a worker of j's queue that serves queries, and returns
// the encoded answer; a worker that does not answer within timeout is
// reported with what to check.
func wfAsk(c *wfCall, svc *httpapi.Client, j *engine.Job, name string, args []any, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	encoded, err := converter.Encode(args...)
	if err != nil {
		// The words of the HTTP client, which encoded them before
		// queries travelled as bytes.
		return nil, fmt.Errorf("httpapi: query arguments: %w", err)
	}
	data, err := svc.Query(ctx, j.WorkflowID, strconv.FormatUint(uint64(j.ID), 10), name, encoded)
	switch {
	case errors.Is(err, httpapi.ErrQueryTimeout), err != nil && c.ctx.Err() == nil && ctx.Err() != nil:
		return nil, fmt.Errorf("no worker of queue %q answered query %q within %v: is one running and serving queries? (\"heddle worker\" and workers made with sdk/worker over HTTP do)", j.Queue, name, timeout)
	case errors.Is(err, engine.ErrUnknownQuery) && name == workflow.StackTraceQuery:
		return nil, fmt.Errorf("the worker of queue %q does not answer the stack trace query: it runs a heddle release before the query was added (%w)", j.Queue, err)
	}
	return data, err
}
