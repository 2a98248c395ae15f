// Command heddle is heddle's binary: a server node, an embedded dev node,
// cluster administration, the operator's workflow commands over the HTTP
// API, and the demo of the SDK.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand of the binary. The dispatcher stays a table so
// that adding a subcommand is one entry, and "heddle help" lists them all.
type command struct {
	name    string
	summary string
	// run executes the subcommand with the arguments after its name and
	// returns the process exit code.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order usage prints them.
func commands() []command {
	return []command{
		{"demo", "run the SDK demo: order sagas, a retry, a timer, a signal, a child, compensation, recovery", runDemoCommand},
		{"server", "run one node of a cluster (Raft and the HTTP API)", runServerCommand},
		{"dev", "run one embedded heddle with the HTTP API", runDevCommand},
		{"worker", "run a remote worker for the example workflow Greet", runWorkerCommand},
		{"cluster", "status, remove, transfer-leader, or up (a local cluster)", runClusterCommand},
		{"workflow", "start, list, describe, history, signal, cancel or terminate workflows on a node or cluster", runWorkflowCommand},
		{"chaos", "kill, pause and partition a local cluster under load, then check nothing was lost or done twice", runChaosCommand},
		{"bench", "run a benchmark workload next to a ceiling measured in the same run; JSON and SVG output", runBenchCommand},
		{"help", "print this help, or the help of one command", runHelp},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args to a subcommand. It exists apart from main so that
// tests can drive the binary without starting a process.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	if c, ok := lookup(args[0]); ok {
		return c.run(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "heddle: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage prints the list of subcommands.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("heddle is a durable workflow engine embedded over BadgerDB.\n\n")
	b.WriteString("Usage:\n  heddle <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun \"heddle help <command>\" for the flags of a command.\n")
	io.WriteString(w, b.String())
}

// runHelp prints the general usage, or a command's flags when it is named.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	if c, ok := lookup(args[0]); ok && c.name != "help" {
		// Every command prints its own flags on -h, so help defers to it.
		return c.run([]string{"-h"}, stdout, stdout)
	}
	fmt.Fprintf(stderr, "heddle help: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// parseFlags parses a subcommand's flags and turns the outcome into an exit
// code: -1 to go on, 0 after -h, 2 after a usage error.
func parseFlags(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "heddle %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return 2
	}
	return -1
}

// parseInterleaved parses args into fs with flags and positional arguments
// in any order ("--" ends the flags), as people type them ("remove n3
// --addr A"); the standard flag package alone stops at the first
// positional argument. It returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
