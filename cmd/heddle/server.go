package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

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

// untilSignal returns a context ended by SIGINT or SIGTERM.
func untilSignal() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runServerCommand runs one cluster node until it is signalled.
func runServerCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "", "this node's id, unique in the cluster and kept for its life (required)")
	dir := fs.String("dir", "", "this node's data directory (required); restart with the same one to rejoin")
	raftAddr := fs.String("raft-addr", "127.0.0.1:7234", "host:port for Raft traffic between nodes")
	httpAddr := fs.String("http-addr", "127.0.0.1:7233", "host:port for the HTTP API")
	bootstrap := fs.Bool("bootstrap", false, "start a new cluster with this node as its first member")
	join := fs.String("join", "", "HTTP address(es) of any member to join through (comma-separated)")
	token := fs.String("token", os.Getenv("HEDDLE_TOKEN"), "bearer token the API requires (default $HEDDLE_TOKEN; empty: none)")
	grace := fs.Duration("failover-grace", 5*time.Second, "how long a new leader waits before reclaiming expired leases")
	verbose := fs.Bool("v", false, "print Raft's warnings")
	chaosProxy := fs.String("chaos-proxy", "", "for the chaos suite: open Raft connections through this fault-injecting proxy")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: heddle server --id ID --dir D [--bootstrap | --join ADDR] [flags]\n\n"+
			"Runs one node of a heddle cluster: a Raft member with the HTTP API.\n"+
			"Start the first node with --bootstrap, the others with --join pointing at it.\n\n")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	switch {
	case *id == "":
		fmt.Fprintln(stderr, "heddle server: --id is required")
		return 2
	case *dir == "":
		fmt.Fprintln(stderr, "heddle server: --dir is required")
		return 2
	case *bootstrap && *join != "":
		fmt.Fprintln(stderr, "heddle server: --bootstrap and --join exclude each other")
		return 2
	}
	ctx, stop := untilSignal()
	defer stop()
	var logOut io.Writer
	if *verbose {
		logOut = stderr
	}
	n, err := startNode(ctx, nodeOptions{id: *id, dir: *dir, raftAddr: *raftAddr, httpAddr: *httpAddr,
		bootstrap: *bootstrap, join: splitAddrs(*join), token: *token, grace: *grace, logOut: logOut, chaosProxy: *chaosProxy})
	if err != nil {
		fmt.Fprintf(stderr, "heddle server: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "heddle server %s: http=%s raft=%s dir=%s\n", *id, n.api.addr(), n.node.RaftAddr(), *dir)
	select {
	case <-ctx.Done():
	case err := <-n.api.done:
		fmt.Fprintf(stderr, "heddle server: HTTP API stopped: %v\n", err)
	}
	n.close()
	fmt.Fprintf(stdout, "heddle server %s: stopped\n", *id)
	return 0
}

// runDevCommand runs one embedded engine with the HTTP API: the simplest
// server, for development and for remote workers on one machine.
func runDevCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "database directory (default: a temporary one, removed at exit)")
	httpAddr := fs.String("http-addr", "127.0.0.1:7233", "host:port for the HTTP API")
	token := fs.String("token", os.Getenv("HEDDLE_TOKEN"), "bearer token the API requires (default $HEDDLE_TOKEN; empty: none)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: heddle dev [--dir D] [--http-addr A]\n\n"+
			"Runs one embedded heddle (no Raft) serving the HTTP API.\n\n")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	d := *dir
	if d == "" {
		tmp, err := os.MkdirTemp("", "heddle-dev-")
		if err != nil {
			fmt.Fprintf(stderr, "heddle dev: %v\n", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		d = tmp
	}
	ctx, stop := untilSignal()
	defer stop()
	ln, err := listen(*httpAddr)
	if err != nil {
		fmt.Fprintf(stderr, "heddle dev: %v\n", err)
		return 1
	}
	e, err := engine.Open(engine.Config{Dir: d})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "heddle dev: %v\n", err)
		return 1
	}
	defer e.Close()
	api, err := serveAPI(ln, httpapi.ServerConfig{Service: e, AuthToken: *token})
	if err != nil {
		fmt.Fprintf(stderr, "heddle dev: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "heddle dev: http=%s dir=%s\n", api.addr(), d)
	select {
	case <-ctx.Done():
	case err := <-api.done:
		fmt.Fprintf(stderr, "heddle dev: HTTP API stopped: %v\n", err)
	}
	api.close()
	fmt.Fprintln(stdout, "heddle dev: stopped")
	return 0
}
