package main

// This file is "heddle workflow", the operator's command for the workflows of
// a running node or cluster. It talks to the HTTP API only (never to a
// database directory), so the same binary manages a local dev node and a
// remote cluster alike. Each verb lives in its own workflow_<verb>.go file;
// this one holds the flags they share (the connection and -o) and the list
// of verbs, so adding a verb is one line here.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
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
		Short: "start, execute, list, count, describe, query, signal, update, cancel, terminate, reset, pause or unpause workflows, and read their history and stack",
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
		newWFStartCommand(g, false),
		newWFStartCommand(g, true),
		newWFResultCommand(g),
		newWFListCommand(g),
		newWFCountCommand(g),
		newWFDescribeCommand(g),
		newWFHistoryCommand(g),
		newWFStackCommand(g),
		newWFQueryCommand(g),
		newWFSignalCommand(g),
		newWFUpdateCommand(g),
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
	fs.DurationVar(&g.retry, "retry-timeout", wfDefaultRetry, "how long to keep trying when no node answers or the cluster has no leader (unless set, a refused connection at every address fails at once)")
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
	// retryGiven: --retry-timeout was given, so that a refused connection
	// is waited out too.
	retryGiven bool
}

// runE adapts a verb's function to cobra. Ctrl-C ends a long wait (start
// --wait, query) through the context, so deferred cleanups run and the
// exit status says it was cut short.
func (g *wfGlobals) runE(fn func(c *wfCall, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
		defer stop()
		c := &wfCall{ctx: ctx, out: cmd.OutOrStdout(), err: cmd.ErrOrStderr(), format: *g.format, path: cmd.CommandPath(), g: g,
			retryGiven: cmd.Flags().Changed("retry-timeout")}
		return c.explain(fn(c, args))
	}
}

// client returns an API client for --addr and --token.
func (c *wfCall) client() (*httpapi.Client, error) {
	addr := envDefault(c.g.addr, "HEDDLE_ADDR", defaultAddr)
	addrs := splitAddrs(addr)
	if len(addrs) == 0 {
		return nil, usagef("--addr names no address")
	}
	for _, a := range addrs {
		if err := wfCheckAddr(a); err != nil {
			return nil, err
		}
	}
	if c.g.retry <= 0 {
		return nil, usagef("--retry-timeout %v must be positive", c.g.retry)
	}
	tlsConfig, err := clientTLSFor(c.g.tlsCA)
	if err != nil {
		return nil, err
	}
	refusals := &nodeRefusals{}
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs, Token: envDefault(c.g.token, "HEDDLE_TOKEN", ""), TLS: tlsConfig,
		RetryTimeout: c.g.retry, OnRetry: c.onRetry(addrs, refusals)})
	if err != nil {
		return nil, usagef("--addr %q: %v", addr, err)
	}
	refusals.setNamed(cl.Addrs())
	return cl, nil
}

// table reports whether the result is for people.
func (c *wfCall) table() bool { return c.format == formatTable }

// doc prints a verb's one JSON document in the format asked for.
func (c *wfCall) doc(v any) error { return printDoc(c.out, c.format, v) }

// wfNoNodeError is a command that reached no node: nothing listens at any
// address (refused), or none answered within --retry-timeout.
type wfNoNodeError struct {
	addrs []string
	// refused: every address refused the connection (at once, without
	// --retry-timeout); else the retries ran out.
	refused bool
	// unknownHost: an address names a host that does not exist.
	unknownHost bool
	retry       time.Duration
	err         error
	// noRetryFlag: the command has no --retry-timeout to suggest.
	noRetryFlag bool
}

func (e *wfNoNodeError) Error() string {
	where := strings.Join(e.addrs, ", ")
	var what string
	switch {
	case e.unknownHost:
		return fmt.Sprintf("--addr %s: %s.\nName the nodes as host:port or http(s)://host:port, such as %s.", where, wfShortError(e.err), defaultAddr)
	case e.refused:
		what = fmt.Sprintf("no heddle node listens at %s (connection refused)", where)
	default:
		what = fmt.Sprintf("no heddle node answered at %s within %v (the last try: %s)", where, e.retry, wfShortError(e.err))
	}
	if errors.Is(e.err, engine.ErrUnknownOutcome) {
		what += ".\nThe command may or may not have been applied: look (describe, history) before sending it again"
	}
	what += ".\nStart one with \"heddle dev\" (or \"heddle server\"), or name the nodes with --addr host:port\n(or $HEDDLE_ADDR)"
	if e.noRetryFlag {
		return what + "."
	}
	return what + "; --retry-timeout waits longer for nodes that are starting."
}

func (e *wfNoNodeError) Unwrap() error { return e.err }

// onRetry is the API client's OnRetry for addrs: when every address
// refused the connection (unless --retry-timeout was given: then the nodes
// may be starting) or names no host, before any node answered, it ends
// the command at once (nodeRefusals); otherwise it says once on stderr
// that it keeps trying, so that no wait is silent.
func (c *wfCall) onRetry(addrs []string, refusals *nodeRefusals) func(addr string, err error) error {
	var mu sync.Mutex
	noted := false
	return func(addr string, err error) error {
		if allFailed, noHost := refusals.note(addr, err, !c.retryGiven); allFailed {
			return &wfNoNodeError{addrs: addrs, err: err, refused: !noHost, unknownHost: noHost}
		}
		mu.Lock()
		defer mu.Unlock()
		if !noted {
			noted = true
			_, _ = fmt.Fprintf(c.err, "%s: no answer from %s yet (%v); trying for up to %v (--retry-timeout)\n", c.path, addr, wfShortError(err), c.g.retry)
		}
		return nil
	}
}

// explain turns the error of a call that reached no node into one that
// names the addresses tried and what to do, and adds to the errors a
// newcomer meets most the next thing to try (wfHints).
func (c *wfCall) explain(err error) error {
	var ue *url.Error
	var nn *wfNoNodeError
	var usage *usageError
	switch {
	case err == nil, errors.As(err, &nn), errors.As(err, &usage), errors.As(err, new(exitError)):
		return err
	case errors.As(err, &ue):
		return &wfNoNodeError{addrs: splitAddrs(envDefault(c.g.addr, "HEDDLE_ADDR", defaultAddr)), retry: c.g.retry, err: err}
	}
	var re *httpapi.RemoteError
	if errors.As(err, &re) {
		switch re.Status {
		case http.StatusUnauthorized:
			return &wfHintedError{err, "Give the node's token with --token or $HEDDLE_TOKEN (\"heddle token\" makes tokens)."}
		case http.StatusForbidden:
			return &wfHintedError{err, "The token's role may not do this: docs/security.md lists what each role may do."}
		}
	}
	for _, h := range wfHints {
		if errors.Is(err, h.err) {
			return &wfHintedError{err, h.hint}
		}
	}
	return err
}

// wfHints say what to do next after an error of the engine's.
var wfHints = []struct {
	err  error
	hint string
}{
	{engine.ErrUnknownJob, "No run has that id on this node or cluster: \"heddle workflow list\" lists the runs (is --addr the right node?)."},
	{engine.ErrUnknownSchedule, "No schedule has that id: \"heddle schedule list\" lists them."},
	{engine.ErrUnknownQuery, "The workflow answers the queries its code registers with workflow.SetQueryHandler, and __stack_trace (\"heddle workflow stack\")."},
	{engine.ErrWorkflowExists, "--reuse-policy allow-after-terminal (the default) starts a new run once the last one closed; return-existing returns the open one."},
	{engine.ErrUnknownReview, "\"heddle task list\" lists the review tasks."},
}

// wfHintedError is an error with the next thing to try, on a line of its own.
type wfHintedError struct {
	err  error
	hint string
}

func (e *wfHintedError) Error() string { return e.err.Error() + "\n" + e.hint }
func (e *wfHintedError) Unwrap() error { return e.err }

// wfShortError is the innermost words of a network error ("connect:
// connection refused"), not the whole chain of the request that failed.
func wfShortError(err error) string {
	var op *net.OpError
	var ue *url.Error
	switch {
	case errors.As(err, &op):
		return op.Err.Error()
	case errors.As(err, &ue):
		return ue.Err.Error()
	}
	return err.Error()
}

// wfCheckAddr refuses the addresses people give by mistake: a port alone,
// or the web console's address instead of the node's.
func wfCheckAddr(a string) error {
	if _, err := strconv.ParseUint(a, 10, 16); err == nil {
		return usagef("--addr %q is a port alone: write host:port, such as 127.0.0.1:%s", a, a)
	}
	if u, err := url.Parse(a); err == nil && u.Host != "" && (strings.TrimSuffix(u.Path, "/") == "/ui" || strings.HasPrefix(u.Path, "/ui/")) {
		return usagef("--addr %q is the web console's address: give the node's, %s://%s", a, u.Scheme, u.Host)
	}
	return nil
}
