package main

// This file is the --query form of "heddle workflow cancel", "terminate",
// "signal" and "reset", Temporal's CLI shape: with --query the command acts
// on every run the filter matches, as a batch operation the server runs
// (heddle batch describe follows it). It first counts the runs and, without
// --yes, asks on a terminal and refuses on any other input, saying how many
// runs match.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/converter"
)

// wfQueryFlags are the batch flags of a workflow verb.
type wfQueryFlags struct {
	query string
	yes   bool
	rps   int
	// stdin is where the confirmation is read; nil means os.Stdin, which
	// is asked only when it is a terminal.
	stdin io.Reader
}

func addQueryFlags(cmd *cobra.Command, verb string) *wfQueryFlags {
	q := &wfQueryFlags{}
	fs := cmd.Flags()
	fs.StringVarP(&q.query, "query", "q", "", "act on every run this list filter `query` matches, as a batch operation (see heddle workflow list --query)")
	fs.BoolVarP(&q.yes, "yes", "y", false, "with --query, "+verb+" the matching runs without asking")
	fs.IntVar(&q.rps, "rps", 0, "with --query, at most `N` runs a second (0: the server's rate)")
	return q
}

// given reports whether --query was given.
func (q *wfQueryFlags) given(cmd *cobra.Command) bool { return cmd.Flags().Changed("query") }

// wfBatchOutput is the JSON document of a verb given --query.
type wfBatchOutput struct {
	BatchID   string `json:"batch_id"`
	Operation string `json:"operation"`
	Query     string `json:"query"`
	// Matched is how many runs the query matched when the batch started.
	Matched uint64 `json:"matched"`
}

// start counts the runs q matches, confirms, and starts the batch.
func (q *wfQueryFlags) start(c *wfCall, spec engine.BatchSpec) error {
	if q.rps < 0 {
		return usagef("--rps %d must not be negative", q.rps)
	}
	spec.Query, spec.RunsPerSecond = q.query, q.rps
	svc, err := c.client()
	if err != nil {
		return err
	}
	if !q.yes {
		n, err := svc.Count(c.ctx, engine.ListQuery{Query: q.query})
		if err != nil {
			return err
		}
		ok, err := q.confirm(c, n.Count, spec.Operation)
		if err != nil || !ok {
			return err
		}
	}
	res, err := svc.StartBatch(c.ctx, engine.StartBatch{BatchSpec: spec})
	if err != nil {
		return err
	}
	b := res.Batch
	out := wfBatchOutput{BatchID: b.ID, Operation: string(b.Operation), Query: b.Query, Matched: b.Total}
	if !c.table() {
		return c.doc(out)
	}
	_, err = fmt.Fprintf(c.out, "Started batch %s to %s the %d runs matching %s.\nFollow it with: heddle batch describe --job-id %s\n",
		b.ID, b.Operation, b.Total, quoteQuery(b.Query), b.ID)
	return err
}

// confirm asks whether to act on n runs: on a terminal it asks, on any
// other input it refuses, saying how many runs match.
func (q *wfQueryFlags) confirm(c *wfCall, n uint64, op engine.BatchOperation) (bool, error) {
	in := q.stdin
	if in == nil {
		in = confirmInput()
	}
	if in == nil {
		return false, usagef("%d runs match %s: add --yes to %s them (the input is not a terminal, so nothing is asked)",
			n, quoteQuery(q.query), op)
	}
	if _, err := fmt.Fprintf(c.err, "%d runs match %s. Start a batch to %s them? [y/N] ", n, quoteQuery(q.query), op); err != nil {
		return false, err
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	_, err = fmt.Fprintln(c.err, "Nothing started.")
	return false, err
}

// quoteQuery shows a query for people; "" is every run.
func quoteQuery(q string) string {
	if q == "" {
		return "(every run)"
	}
	return "'" + q + "'"
}

// confirmInput is where a confirmation is read: the standard input when
// it is a terminal, else nil (nothing is asked). Tests replace it.
var confirmInput = func() io.Reader {
	if stdinIsTerminal() {
		return os.Stdin
	}
	return nil
}

// stdinIsTerminal reports whether the standard input is a terminal: a
// character device other than the null device (which is one too, and is
// what a cron job or a CI step often gets).
func stdinIsTerminal() bool {
	st, err := os.Stdin.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && !os.SameFile(st, null)
}

// noTargetWithQuery refuses a run named beside --query.
func noTargetWithQuery(t *wfTargetFlags, args []string) error {
	if t.given() || len(args) > 0 {
		return usagef("--query acts on the runs it matches: name no run (ID, -w or -r) with it")
	}
	return nil
}

// wfBatchQueryHelp ends the help of each verb that takes --query.
const wfBatchQueryHelp = "With -q/--query (Temporal's batch form) it acts on every run the list filter\n" +
	"matches when it starts, as a batch operation the server runs at a bounded rate:\n" +
	"it says how many runs match and asks first, on a terminal; elsewhere it needs\n" +
	"-y/--yes. heddle batch describe follows the batch."

// signalByQuery is "workflow signal --query": the signal's name is the one
// argument or --name.
func signalByQuery(c *wfCall, q *wfQueryFlags, t *wfTargetFlags, args []string, name string, named bool, input *wfJSONValues) error {
	if t.given() {
		return usagef("--query acts on the runs it matches: name no run (-w or -r) with it")
	}
	switch {
	case named && len(args) > 0:
		return usagef("unexpected argument %q: with --query and --name, give no argument", args[0])
	case !named && len(args) != 1:
		return usagef("with --query, give the signal's NAME as the one argument (or --name)")
	case !named:
		name = args[0]
	}
	if name == "" {
		return usagef("NAME must not be empty")
	}
	var value any // null without --input
	if len(input.vals) == 1 {
		value = input.vals[0]
	}
	payload, err := converter.Encode(value)
	if err != nil {
		return usagef("--input: %v", err)
	}
	return q.start(c, engine.BatchSpec{Operation: engine.BatchSignal, SignalName: name, SignalPayload: payload})
}
