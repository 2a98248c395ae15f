package main

// This file holds what every "heddle workflow" verb shares: the connection
// and output flags, argument parsing that lets flags follow the positional
// arguments (operators type "describe order-1 --json"; the standard flag
// package alone stops at the first argument), and the mapping of outcomes to
// exit codes: 2 for bad input, 1 for a failure, 0 otherwise.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// wfDefaultAddr is the node asked when neither --addr nor $HEDDLE_ADDR says.
const wfDefaultAddr = "127.0.0.1:7233"

// wfDefaultRetry is how long a command keeps trying nodes that do not answer
// (or a cluster electing a leader) before it reports the failure: long
// enough for a leader election, short enough that a typo in --addr does not
// look like a hang.
const wfDefaultRetry = 10 * time.Second

// wfFlags is one verb's flag set, with the flags every verb has.
type wfFlags struct {
	fs       *flag.FlagSet
	io       wfIO
	synopsis string // the arguments and main flags, after the verb
	about    string // what the verb does, for -h
	addr     string
	token    string
	json     bool
	retry    time.Duration
}

func newWFFlags(wio wfIO, synopsis, about string) *wfFlags {
	f := &wfFlags{fs: flag.NewFlagSet(wio.verb, flag.ContinueOnError), io: wio, synopsis: synopsis, about: about}
	// The flag package's own messages are replaced by parse's, which name
	// the verb and print the usage to stdout for -h and stderr otherwise.
	f.fs.SetOutput(io.Discard)
	f.fs.Usage = func() {}
	addr := os.Getenv("HEDDLE_ADDR")
	if addr == "" {
		addr = wfDefaultAddr
	}
	f.fs.StringVar(&f.addr, "addr", addr, "comma-separated HTTP `addresses` of the nodes to ask (host:port or http(s) URL; $HEDDLE_ADDR)")
	f.fs.StringVar(&f.token, "token", "", "bearer `token` of the HTTP API (default $HEDDLE_TOKEN)")
	f.fs.BoolVar(&f.json, "json", false, "print one JSON document on stdout instead of text")
	f.fs.DurationVar(&f.retry, "retry-timeout", wfDefaultRetry, "how long to keep trying when no node answers or the cluster has no leader")
	return f
}

// usage prints the verb's synopsis, its description and its flags.
func (f *wfFlags) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: heddle %s %s\n\n%s\n\nFlags:\n", f.io.verb, f.synopsis, f.about)
	f.fs.SetOutput(w)
	f.fs.PrintDefaults()
	f.fs.SetOutput(io.Discard)
}

// parse parses args, flags and positional arguments in any order ("--" ends
// the flags), and returns the positional ones, which must be exactly as
// many as names (the names are used in the error for a missing one).
func (f *wfFlags) parse(args []string, names ...string) ([]string, error) {
	pos, err := parseInterleaved(f.fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.usage(f.io.out)
			return nil, errWFHelp
		}
		return nil, wfUsagef("%v", err)
	}
	if len(pos) < len(names) {
		return nil, wfUsagef("missing argument %s", names[len(pos)])
	}
	if len(pos) > len(names) {
		return nil, wfUsagef("unexpected argument %q", pos[len(names)])
	}
	return pos, nil
}

// client returns an API client for --addr and --token.
func (f *wfFlags) client() (*httpapi.Client, error) {
	var addrs []string
	for _, a := range strings.Split(f.addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, wfUsagef("--addr names no address")
	}
	token := f.token
	if token == "" {
		token = os.Getenv("HEDDLE_TOKEN")
	}
	if f.retry <= 0 {
		return nil, wfUsagef("--retry-timeout %v must be positive", f.retry)
	}
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs, Token: token, RetryTimeout: f.retry})
	if err != nil {
		return nil, wfUsagef("--addr %q: %v", f.addr, err)
	}
	return c, nil
}

// wfUsageError is bad input on the command line: exit code 2.
type wfUsageError struct{ msg string }

func (e *wfUsageError) Error() string { return e.msg }

func wfUsagef(format string, a ...any) error {
	return &wfUsageError{msg: fmt.Sprintf(format, a...)}
}

// errWFHelp: -h printed the usage; exit code 0.
var errWFHelp = errors.New("help requested")

// wfExitError ends the command with code after its output was printed, such
// as a workflow that start --wait saw fail.
type wfExitError struct{ code int }

func (e wfExitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// wfExitCode reports err on stderr and returns the exit code it stands for.
func wfExitCode(wio wfIO, err error) int {
	var usage *wfUsageError
	var exit wfExitError
	switch {
	case err == nil, errors.Is(err, errWFHelp):
		return 0
	case errors.As(err, &exit):
		return exit.code
	case errors.As(err, &usage):
		fmt.Fprintf(wio.err, "heddle %s: %s\nRun \"heddle %s -h\" for usage.\n", wio.verb, usage.msg, wio.verb)
		return 2
	}
	fmt.Fprintf(wio.err, "heddle %s: %v\n", wio.verb, err)
	return 1
}

// wfPrintJSON writes v as the command's one JSON document.
func wfPrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
