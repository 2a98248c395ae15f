package main

// This file is "heddle workflow", the operator's command for the workflows of
// a running node or cluster. It talks to the HTTP API only (never to a
// database directory), so the same binary manages a local dev node and a
// remote cluster alike. Each verb lives in its own workflow_<verb>.go file;
// this one holds the flags they share (the connection and -o) and the list
// of verbs, so adding a verb is one line here.

import (
	"context"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/spf13/cobra"
)

// wfDefaultRetry is how long a command keeps trying nodes that do not answer
// (or a cluster electing a leader) before it reports the failure: long
// enough for a leader election, short enough that a typo in --addr does not
// look like a hang.
const wfDefaultRetry = 10 * time.Second

func newWorkflowCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "start, list, count, describe, show, query, signal, cancel, terminate, reset, pause or unpause workflows",
		Long: "Manages the workflows of a heddle node or cluster through its HTTP API.\n\n" +
			"An ID argument is a workflow id (its current run), or a numeric job (run) id;\n" +
			"-w/--workflow-id and -r/--run-id name a run without that guess.\n\n" +
			"Results print for people, or with -o json as one JSON document, or with -o jsonl\n" +
			"as one JSON object per line (a run of list, an event of history). The JSON has\n" +
			"snake_case keys, statuses by name (\"Completed\") and RFC 3339 UTC times.",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(
		newWFStartCommand(g),
		newWFListCommand(g),
		newWFCountCommand(g),
		newWFDescribeCommand(g),
		newWFHistoryCommand(g),
		newWFQueryCommand(g),
		newWFSignalCommand(g),
		newWFCancelCommand(g, false),
		newWFCancelCommand(g, true),
		newWFPauseCommand(g, false),
		newWFPauseCommand(g, true),
		newWFResetCommand(g),
	)
	return cmd
}

// addAPIFlags defines the flags every command of the HTTP API has (the
// connection and -o) on cmd, for its subcommands.
func addAPIFlags(cmd *cobra.Command) *wfGlobals {
	g := &wfGlobals{}
	fs := cmd.PersistentFlags()
	fs.StringVar(&g.addr, "addr", "", "HTTP `addresses` of the nodes to ask, comma-separated host:port or http(s) URLs (default $HEDDLE_ADDR, else "+defaultAddr+")")
	fs.StringVar(&g.token, "token", "", "bearer `token` of the HTTP API (default $HEDDLE_TOKEN)")
	fs.StringVar(&g.tlsCA, "tls-ca", "", tlsCAUsage)
	fs.DurationVar(&g.retry, "retry-timeout", wfDefaultRetry, "how long to keep trying when no node answers or the cluster has no leader")
	g.format = addOutputFlags(fs)
	completeOutput(cmd)
	return g
}

// wfGlobals are the flags every verb has.
type wfGlobals struct {
	addr, token, tlsCA string
	retry              time.Duration
	format             *outputFormat
}

// wfCall is one run of a verb: where it writes and how.
type wfCall struct {
	ctx context.Context
	// out takes the result, err the diagnostics.
	out, err io.Writer
	format   outputFormat
	// path is "heddle workflow start" etc., for messages.
	path string
	g    *wfGlobals
}

// runE adapts a verb's function to cobra. Ctrl-C ends a long wait (start
// --wait, query) through the context, so deferred cleanups run and the
// exit status says it was cut short.
func (g *wfGlobals) runE(fn func(c *wfCall, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
		defer stop()
		return fn(&wfCall{ctx: ctx, out: cmd.OutOrStdout(), err: cmd.ErrOrStderr(), format: *g.format, path: cmd.CommandPath(), g: g}, args)
	}
}

// client returns an API client for --addr and --token.
func (c *wfCall) client() (*httpapi.Client, error) {
	addr := envDefault(c.g.addr, "HEDDLE_ADDR", defaultAddr)
	addrs := splitAddrs(addr)
	if len(addrs) == 0 {
		return nil, usagef("--addr names no address")
	}
	if c.g.retry <= 0 {
		return nil, usagef("--retry-timeout %v must be positive", c.g.retry)
	}
	tlsConfig, err := clientTLSFor(c.g.tlsCA)
	if err != nil {
		return nil, err
	}
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs, Token: envDefault(c.g.token, "HEDDLE_TOKEN", ""), TLS: tlsConfig, RetryTimeout: c.g.retry})
	if err != nil {
		return nil, usagef("--addr %q: %v", addr, err)
	}
	return cl, nil
}

// table reports whether the result is for people.
func (c *wfCall) table() bool { return c.format == formatTable }

// doc prints a verb's one JSON document in the format asked for.
func (c *wfCall) doc(v any) error { return printDoc(c.out, c.format, v) }
