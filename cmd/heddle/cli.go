package main

// This file holds what every command shares: the exit statuses (2 for bad
// input on the command line, 1 for a failure), the checks of positional
// arguments, the help template and command, the defaults that come from
// the environment, and the respelling of the single-dash long flags the
// binary accepted before it used pflag.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError is bad input on the command line: exit status 2, with the
// usage line (or, for a missing command, the list of commands).
type usageError struct {
	msg string
	// listCommands: print the command's whole usage, with its
	// subcommands, instead of the one usage line.
	listCommands bool
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// exitError ends the command with code after its output was printed and
// its reason said, such as a workflow that start --wait saw fail.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitStatus reports err on stderr, naming the command that failed, and
// returns the exit status it stands for.
func exitStatus(cmd *cobra.Command, err error, stderr io.Writer) int {
	var exit exitError
	var usage *usageError
	var msg string
	code := 1
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	case errors.As(err, &usage):
		msg = fmt.Sprintf("%s: %s\n", cmd.CommandPath(), usage.msg)
		if usage.listCommands {
			msg += "\n" + cmd.UsageString()
		} else {
			msg += fmt.Sprintf("Usage: %s\nRun \"%s --help\" for more.\n", usageLine(cmd), cmd.CommandPath())
		}
		code = 2
	default:
		msg = fmt.Sprintf("%s: %v\n", cmd.CommandPath(), err)
	}
	// The status already says the command failed; a message that cannot
	// be written on stderr has nowhere else to go.
	_, _ = io.WriteString(stderr, msg)
	return code
}

// usageLine is the one-line synopsis of cmd, as its help prints it.
func usageLine(cmd *cobra.Command) string {
	if cmd.HasAvailableSubCommands() {
		return cmd.CommandPath() + " <command> [flags]"
	}
	return cmd.UseLine()
}

// usageTemplate is cobra's default usage template with one synopsis line
// for a command with subcommands (which is runnable, to report a missing
// or unknown subcommand, but takes no arguments of its own) and without
// command groups, which heddle does not use.
const usageTemplate = `Usage:{{if .HasAvailableSubCommands}}
  {{.CommandPath}} <command> [flags]{{else}}
  {{.UseLine}}{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Run "{{.CommandPath}} <command> --help" for the flags of a command.{{end}}
`

// unknownCommandArgs is the Args of a command with subcommands: cobra
// hands it the first word that named no subcommand. "help" is let through
// to missingCommand, so "heddle workflow help" works as it always did.
func unknownCommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 || (len(args) == 1 && args[0] == "help") {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &usageError{msg: msg, listCommands: true}
}

// missingCommand is the RunE of a command with subcommands, run when none
// was named: the list of subcommands on stderr, exit status 2.
func missingCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 1 && args[0] == "help" {
		return cmd.Help()
	}
	return &usageError{msg: "missing command", listCommands: true}
}

// noArgs is the Args of a command that takes flags only.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// wantArgs checks that args are exactly as many as names (which name the
// missing one in the error) and returns them.
func wantArgs(args []string, names ...string) ([]string, error) {
	if len(args) < len(names) {
		return nil, usagef("missing argument %s", names[len(args)])
	}
	if len(args) > len(names) {
		return nil, usagef("unexpected argument %q", args[len(names)])
	}
	return args, nil
}

// exactArgs is the Args of a command that takes the named arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		_, err := wantArgs(args, names...)
		return err
	}
}

// newHelpCommand is "heddle help [command...]". It replaces cobra's own,
// which answers an unknown command with exit status 0.
func newHelpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "print this help, or the help of a command",
		Long:  "Prints heddle's help, or the help of the command named, such as \"heddle help workflow start\".",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, c := range target.Commands() {
				if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil {
				return &usageError{msg: err.Error()}
			}
			if len(rest) > 0 {
				return usagef("unknown command %q", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

// envDefault is value, or when it is empty $name, or when that is empty
// def. Defaults from the environment are resolved when a command runs, not
// when its flags are defined, so that help shows the same text everywhere
// (and never a token).
func envDefault(value, name, def string) string {
	if value != "" {
		return value
	}
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// splitAddrs parses a comma-separated address list, dropping blanks.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// respellLegacyFlags turns the single-dash long flags the binary took when
// it used Go's flag package ("-dir D", "-json") into pflag's spelling
// ("--dir D"), so that scripts written for it keep working. pflag reads
// "-dir" as the short flags -d -i -r. Only a word that names a long flag of
// the command it follows is respelled; values and everything after "--"
// are left alone.
func respellLegacyFlags(root *cobra.Command, args []string) []string {
	cmd, i := root, 0
	for ; i < len(args); i++ {
		next := childNamed(cmd, args[i])
		if next == nil {
			break
		}
		cmd = next
	}
	cmd.InitDefaultHelpFlag() // also merges the inherited flags into Flags()
	fs := cmd.Flags()
	// Never nil: cobra reads os.Args when given no slice at all.
	out := append(make([]string, 0, len(args)), args[:i]...)
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) >= 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if fs.Lookup(name) != nil && (len(name) > 1 || fs.ShorthandLookup(name) == nil) {
				a = "-" + a
			}
		}
		out = append(out, a)
		if takesNextArg(fs, a) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// childNamed returns cmd's subcommand called name (or aliased so), hidden
// ones included, or nil.
func childNamed(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// takesNextArg reports whether the flag word a is followed by its value
// as the next word, as pflag parses it.
func takesNextArg(fs *pflag.FlagSet, a string) bool {
	switch {
	case strings.HasPrefix(a, "--"):
		if strings.Contains(a, "=") {
			return false
		}
		f := fs.Lookup(a[2:])
		return f != nil && f.NoOptDefVal == ""
	case len(a) >= 2 && a[0] == '-':
		// A group of short flags: the first that takes a value takes the
		// rest of the word, or the next word when it is last.
		for j := 1; j < len(a); j++ {
			f := fs.ShorthandLookup(a[j : j+1])
			if f == nil {
				return false
			}
			if f.NoOptDefVal == "" {
				return j == len(a)-1
			}
		}
	}
	return false
}

// suggestFlag is "; did you mean --type?" for an unknown long flag that is
// near one cmd has: a typo ("--stauts") or another tool's name of it
// ("--workflow-type"); "" when none is near.
func suggestFlag(cmd *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok || name == "" {
		return ""
	}
	best, bestDist := "", 3 // at most two edits away
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		d := editDistance(name, f.Name)
		if len(f.Name) >= 4 && (strings.HasSuffix(name, "-"+f.Name) || strings.HasPrefix(name, f.Name+"-")) ||
			len(name) >= 3 && strings.HasPrefix(f.Name, name+"-") {
			d = 1 // --workflow-type for --type, --status-name for --status, --run for --run-id
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return "; did you mean --" + best + "?"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
