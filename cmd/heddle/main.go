// Command heddle is heddle's binary: a server node, an embedded dev node,
// cluster administration, the operator's workflow commands over the HTTP
// API, and the demo of the SDK.
package main

// The command tree is built with spf13/cobra (and its spf13/pflag flags),
// the library Temporal's CLI uses: one help style for every command, GNU
// "--flag" spelling with one-letter short forms, flags before or after the
// arguments, and shell completion, without code of our own for each.

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Default ports. Temporal's dev server takes 7233 (its frontend) and 8233
// (its web UI), and people who try heddle often run both, so heddle's HTTP
// API listens on 7280 and a node's Raft on the port after it.
// "cluster up" gives node i the ports base+2(i-1) and the one after, base
// being defaultHTTPPort.
const (
	defaultHTTPPort = 7280
	// defaultAddr is the node clients ask when neither --addr nor
	// $HEDDLE_ADDR names one.
	defaultAddr     = "127.0.0.1:7280"
	defaultHTTPAddr = defaultAddr
	defaultRaftAddr = "127.0.0.1:7281"
)

func init() {
	// Commands are listed in the order they are added, which puts the first
	// steps (demo) before administration, not in alphabetical order.
	cobra.EnableCommandSorting = false
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the binary with args and returns its exit status: 0 on success,
// 2 for bad input on the command line, 1 for a failure. It exists apart
// from main so that tests drive the binary without starting a process; it
// builds a fresh command tree each time, since flags hold state.
//
// Everything the commands print, cobra's help included, goes through
// printers, so that a command whose output could not be written fails
// even when it did not check the write itself (cobra does not).
func run(args []string, stdout, stderr io.Writer) int {
	out, diag := newPrinter(stdout), newPrinter(stderr)
	root := newRootCommand(out, diag)
	root.SetArgs(respellLegacyFlags(root, args))
	cmd, err := root.ExecuteContextC(context.Background())
	if err == nil {
		err = errors.Join(out.err(), diag.err())
	}
	return exitStatus(cmd, err, diag)
}

// newRootCommand builds the command tree, writing results on stdout and
// diagnostics on stderr.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "heddle",
		Short: "heddle is a durable workflow engine embedded over BadgerDB",
		Long: "heddle is a durable workflow engine embedded over BadgerDB. This binary runs its\n" +
			"demo, a dev server, cluster nodes and a worker, and manages workflows over the\n" +
			"HTTP API of a node or cluster.",
		Version:       versionText(readVersion()),
		Args:          unknownCommandArgs,
		RunE:          missingCommand,
		SilenceErrors: true, // exitStatus reports errors, in one format
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}")
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{msg: err.Error() + suggestFlag(cmd, err)}
	})
	root.AddCommand(
		newDemoCommand(),
		newServerCommand(),
		newDevCommand(),
		newWorkerCommand(),
		newClusterCommand(),
		newCertCommand(),
		newTokenCommand(),
		newWorkflowCommand(),
		newStepCommand(),
		newActivityCommand(),
		newResourceCommand(),
		newScheduleCommand(),
		newTaskQueueCommand(),
		newBatchCommand(),
		newChaosCommand(),
		newReviewCommand(),
		newBenchCommand(),
		newRepairCommand(),
		newVerifyCommand(),
		newVersionCommand(),
	)
	// Both are added now rather than when cobra first executes, so the tree
	// is whole for the help of every command (and for the tests that walk it).
	root.InitDefaultCompletionCmd()
	adoptCobraCommands(childNamed(root, "completion"))
	root.SetHelpCommand(newHelpCommand(root))
	root.InitDefaultHelpCmd()
	reportUnknownCommandsFirst(root)
	return root
}

// reportUnknownCommandsFirst lets every command with subcommands take flags
// it does not know, so that a word naming no subcommand is reported as the
// unknown command it is ("heddle workflow exec --type X" would otherwise
// say "unknown flag: --type", as the flags are parsed before the word is
// looked at). Its subcommands still refuse unknown flags.
func reportUnknownCommandsFirst(cmd *cobra.Command) {
	if !cmd.HasSubCommands() {
		return
	}
	cmd.FParseErrWhitelist.UnknownFlags = true
	for _, c := range cmd.Commands() {
		reportUnknownCommandsFirst(c)
	}
}

// adoptCobraCommands makes the commands cobra builds (completion and its
// subcommands) behave as heddle's own: bad arguments exit 2 with the usage
// line, and summaries start in lower case, so the lists of commands read
// alike.
func adoptCobraCommands(cmd *cobra.Command) {
	if cmd == nil {
		return
	}
	if s := cmd.Short; s != "" {
		cmd.Short = strings.ToLower(s[:1]) + s[1:]
	}
	if cmd.HasSubCommands() {
		cmd.Args, cmd.RunE = unknownCommandArgs, missingCommand
	} else {
		cmd.Args = noArgs
	}
	for _, c := range cmd.Commands() {
		adoptCobraCommands(c)
	}
}
