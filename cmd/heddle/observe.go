package main

// This file holds what the commands that run a server share to be seen
// from outside: structured logs on stderr (--log-format, --log-level), the
// metrics registry each engine or node serves on /metrics, and pprof on a
// loopback address of its own (--pprof-addr).

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/slogbridge"
)

// observeFlags are the logging and profiling flags of server, dev and
// cluster up.
type observeFlags struct {
	logFormat, logLevel, pprofAddr string
}

// addObserveFlags adds them to fs, with level the default of --log-level.
func addObserveFlags(fs *pflag.FlagSet, level string) *observeFlags {
	f := &observeFlags{}
	fs.StringVar(&f.logFormat, "log-format", "text", "`format` of the logs on stderr: text or json")
	fs.StringVar(&f.logLevel, "log-level", level, "lowest `level` logged: trace, debug, info, warn or error")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "serve Go's pprof profiles on this loopback `host:port` (none by default)")
	return f
}

// logLevels are the names --log-level takes; trace is go-hclog's Trace and
// Badger's Debugf.
var logLevels = map[string]slog.Level{
	"trace": slogbridge.LevelTrace, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError,
}

// logger returns the logger the flags describe, writing to w.
func (f *observeFlags) logger(w io.Writer) (*slog.Logger, error) {
	level, ok := logLevels[strings.ToLower(f.logLevel)]
	if !ok {
		return nil, usagef("--log-level %q: want trace, debug, info, warn or error", f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(f.logFormat) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: want text or json", f.logFormat)
}

// checkPprofAddr refuses a --pprof-addr that is not a loopback address:
// profiles show the program's memory and stacks, so they are never
// offered beyond this machine.
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--pprof-addr %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usagef("--pprof-addr %q: pprof listens on a loopback address only (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// pprofServer serves net/http/pprof on its own listener.
type pprofServer struct {
	srv *http.Server
	ln  net.Listener
}

// startPprof serves pprof on addr, which checkPprofAddr accepted; an empty
// addr serves nothing (nil).
func startPprof(addr string, log *slog.Logger) (*pprofServer, error) {
	if addr == "" {
		return nil, nil
	}
	if err := checkPprofAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// Loopback as it is, it answers to this machine's names only, as the
	// API does (see security.hostGuard): a web page could otherwise read
	// the profiles through a name of its own that resolves to 127.0.0.1.
	host, _, _ := net.SplitHostPort(addr) // checkPprofAddr split it
	guard := httpapi.NewHostGuard(host)
	p := &pprofServer{ln: ln, srv: &http.Server{Handler: guard.Handler(mux), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof stopped", "error", err)
		}
	}()
	log.Info("serving pprof", "addr", ln.Addr().String())
	return p, nil
}

func (p *pprofServer) addr() string { return p.ln.Addr().String() }

func (p *pprofServer) close() {
	if p != nil {
		// Profiles in progress are cut short; nothing else is served here.
		_ = p.srv.Close()
	}
}

// discardLogger is the logger of servers started without one (tests).
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
