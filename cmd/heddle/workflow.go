package main

// This file is "heddle workflow", the operator's command for the workflows of
// a running node or cluster. It talks to the HTTP API only (never to a
// database directory), so the same binary manages a local dev node and a
// remote cluster alike. Each verb lives in its own workflow_<verb>.go file;
// this one holds the table that dispatches them, so adding a verb is one
// entry here.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
)

// wfVerb is one subcommand of "heddle workflow".
type wfVerb struct {
	name    string
	summary string
	// run parses args (everything after the verb) and does the work. It
	// returns a *wfUsageError for bad input (exit 2), errWFHelp after -h
	// (exit 0), a wfExitError for an outcome that is not an error but must
	// not exit 0, and any other error for a failure (exit 1).
	run func(ctx context.Context, io wfIO, args []string) error
}

// wfIO is where a verb writes: the result on out, diagnostics on err.
type wfIO struct {
	out, err io.Writer
	// verb is "workflow start" etc., for the messages and usage lines.
	verb string
}

func wfVerbs() []wfVerb {
	return []wfVerb{
		{"start", "start a workflow run (optionally wait for its result)", runWFStart},
		{"list", "list workflow runs, filtered by status, type or queue", runWFList},
		{"describe", "show one run: status, type, queue, attempt, times, result or failure", runWFDescribe},
		{"history", "print a run's event history as a timeline", runWFHistory},
		{"signal", "send a signal to a run", runWFSignal},
		{"cancel", "ask a run to cancel itself (its workflow code decides how to end)", runWFCancel},
		{"terminate", "end a run at once as Cancelled, without running workflow code", runWFTerminate},
	}
}

// runWorkflowCommand is "heddle workflow".
func runWorkflowCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		wfUsage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		wfUsage(stdout)
		return 0
	}
	for _, v := range wfVerbs() {
		if v.name != args[0] {
			continue
		}
		// Ctrl-C ends a long wait (start --wait) through its context, so
		// the deferred cleanups run and the exit code says it was cut short.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		wio := wfIO{out: stdout, err: stderr, verb: "workflow " + v.name}
		return wfExitCode(wio, v.run(ctx, wio, args[1:]))
	}
	fmt.Fprintf(stderr, "heddle workflow: unknown subcommand %q\n\n", args[0])
	wfUsage(stderr)
	return 2
}

// wfUsage lists the verbs and the flags they share.
func wfUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage:\n  heddle workflow <subcommand> [flags]\n\n")
	b.WriteString("Manages the workflows of a heddle node or cluster through its HTTP API.\n\nSubcommands:\n")
	for _, v := range wfVerbs() {
		fmt.Fprintf(&b, "  %-10s %s\n", v.name, v.summary)
	}
	b.WriteString("\nEvery subcommand takes:\n" +
		"  --addr host:port[,host:port...]  node HTTP addresses (default $HEDDLE_ADDR, else " + wfDefaultAddr + ")\n" +
		"  --token T                        bearer token of the API (default $HEDDLE_TOKEN)\n" +
		"  --json                           print one JSON document instead of text\n" +
		"  --retry-timeout D                how long to retry unreachable nodes (default " + wfDefaultRetry.String() + ")\n" +
		"\nAn ID argument is a workflow id, or a numeric job (run) id.\n" +
		"Run \"heddle workflow <subcommand> -h\" for its flags.\n")
	io.WriteString(w, b.String())
}
