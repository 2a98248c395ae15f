package main

// This file is "heddle server", one node of a Raft cluster, and "heddle
// dev", one embedded engine without Raft; both serve the HTTP API until
// they are signalled.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/metrics"
	"github.com/spf13/cobra"
)

// untilSignal returns a context ended by SIGINT or SIGTERM.
func untilSignal() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// tokenUsage is the help of every --token flag a server takes.
const tokenUsage = "a bearer `token` the API accepts, with the admin role (default $HEDDLE_TOKEN; with neither it nor --token-file the API asks for no token)"

func newServerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server --id ID --dir DIR [--bootstrap | --join ADDR | --shards S --peers PEERS | --shards S --join ADDR]",
		Short: "run one node of a cluster (Raft and the HTTP API)",
		Long: "Runs one node of a heddle cluster: a Raft member with the HTTP API, and the web UI\n" +
			"at /ui/ on the same address. Start the first node with --bootstrap, the others with\n" +
			"--join pointing at it. A node of a sharded cluster is started instead with --shards and\n" +
			"--peers, the same on every node (docs/sharding.md); restarted, it reads them from --dir. A new\n" +
			"node joins a sharded cluster with --shards (the cluster's count) and --join; it holds no shard\n" +
			"until one moves to it (heddle cluster move-shard).",
		Args: noArgs,
	}
	fs := cmd.Flags()
	var o nodeOptions
	var join string
	var verbose bool
	obs := addObserveFlags(fs, "info")
	fs.StringVar(&o.id, "id", "", "this node's `id`, unique in the cluster and kept for its life (required)")
	fs.StringVar(&o.dir, "dir", "", "this node's data `directory` (required); restart with the same one to rejoin")
	fs.StringVar(&o.raftAddr, "raft-addr", defaultRaftAddr, "`host:port` for Raft traffic between nodes")
	fs.StringVar(&o.httpAddr, "http-addr", defaultHTTPAddr, "`host:port` for the HTTP API")
	fs.BoolVar(&o.bootstrap, "bootstrap", false, "start a new cluster with this node as its first member")
	fs.StringVar(&join, "join", "", "HTTP `addresses` of any members to join through, comma-separated")
	var peers string
	fs.IntVar(&o.shards, "shards", 0, "a sharded cluster's shard count `S` (1 to 4096, fixed when it is created); with --peers")
	fs.IntVar(&o.replicas, "replicas", 0, "a sharded cluster's replicas `R` of each shard (default min(3, nodes))")
	fs.StringVar(&peers, "peers", "", "a sharded cluster's nodes, the same on every node: `PEERS` as id=raft-addr/http-addr, comma-separated")
	var sf secFlags
	addSecFlags(fs, &sf, true)
	fs.DurationVar(&o.grace, "failover-grace", 5*time.Second, "how long a new leader waits before reclaiming expired leases")
	fs.BoolVarP(&verbose, "verbose", "v", false, "the same as --log-level debug")
	fs.BoolVar(&verbose, "v", false, "the same as --verbose")
	_ = fs.MarkHidden("v") // the spelling before --verbose
	fs.StringVar(&o.chaosProxy, "chaos-proxy", "", "for the chaos suite: open Raft connections through this fault-injecting proxy at `host:port`")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch {
		case o.id == "":
			return usagef("--id is required")
		case o.dir == "":
			return usagef("--dir is required")
		case o.bootstrap && join != "":
			return usagef("--bootstrap and --join exclude each other")
		case peers != "" && (o.bootstrap || join != ""):
			return usagef("--peers starts a sharded cluster, which needs neither --bootstrap nor --join (a new node joins with --shards and --join)")
		case peers != "" && o.shards == 0:
			return usagef("--peers needs --shards")
		case o.shards != 0 && peers == "" && join == "" && !hasPlacement(o.dir):
			return usagef("--shards needs --peers (a new cluster) or --join (a new node of one), unless --dir holds a node of a sharded cluster")
		}
		if peers != "" {
			var err error
			if o.peers, err = parsePeers(peers); err != nil {
				return err
			}
		}
		stdout, stderr := newPrinter(cmd.OutOrStdout()), newPrinter(cmd.ErrOrStderr())
		if verbose && !cmd.Flags().Changed("log-level") {
			obs.logLevel = "debug"
		}
		log, err := obs.logger(stderr)
		if err != nil {
			return err
		}
		if obs.pprofAddr != "" {
			if err := checkPprofAddr(obs.pprofAddr); err != nil {
				return err
			}
		}
		ctx, stop := untilSignal()
		defer stop()
		o.join = splitAddrs(join)
		if o.sec, err = sf.load(o.id); err != nil {
			return err
		}
		if err := o.sec.checkExposure(o.httpAddr, o.raftAddr); err != nil {
			return err
		}
		o.logger = log.With("node_id", o.id)
		n, err := startNode(ctx, o)
		if err != nil {
			return err
		}
		pp, err := startPprof(obs.pprofAddr, o.logger)
		if err != nil {
			return errors.Join(err, n.close())
		}
		defer pp.close()
		o.logger.Info("serving", "http", n.api.addr(), "raft", n.raftAddr(), "dir", o.dir)
		// A line that could not be printed does not stop a serving node;
		// it makes the exit status say so once the node has stopped.
		stdout.printf("heddle server %s: http=%s raft=%s dir=%s ui=%s\n", o.id, n.api.addr(), n.raftAddr(), o.dir, n.api.uiURL())
		select {
		case <-ctx.Done():
		case err := <-n.api.done:
			stderr.printf("heddle server: HTTP API stopped: %v\n", err)
		}
		if err := n.close(); err != nil {
			return err
		}
		stdout.printf("heddle server %s: stopped\n", o.id)
		return errors.Join(stdout.err(), stderr.err())
	}
	return cmd
}

// newDevCommand is "heddle dev": one embedded engine with the HTTP API,
// the simplest server, for development and for remote workers on one
// machine.
func newDevCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev [--dir DIR] [--http-addr ADDR]",
		Short: "run one embedded heddle with the HTTP API",
		Long:  "Runs one embedded heddle (no Raft) serving the HTTP API, and the web UI at /ui/.",
		Args:  noArgs,
	}
	fs := cmd.Flags()
	var dir, httpAddr string
	fs.StringVar(&dir, "dir", "", "database `directory` (default: a temporary one, removed at exit)")
	fs.StringVar(&httpAddr, "http-addr", defaultHTTPAddr, "`host:port` for the HTTP API")
	var sf secFlags
	addSecFlags(fs, &sf, false)
	obs := addObserveFlags(fs, "info")
	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		stdout, stderr := newPrinter(cmd.OutOrStdout()), newPrinter(cmd.ErrOrStderr())
		log, err := obs.logger(stderr)
		if err != nil {
			return err
		}
		if obs.pprofAddr != "" {
			if err := checkPprofAddr(obs.pprofAddr); err != nil {
				return err
			}
		}
		sec, err := sf.load("")
		if err != nil {
			return err
		}
		if err := sec.checkExposure(httpAddr, ""); err != nil {
			return err
		}
		if dir == "" {
			tmp, mkErr := os.MkdirTemp("", "heddle-dev-")
			if mkErr != nil {
				return mkErr
			}
			defer func() {
				if rerr := os.RemoveAll(tmp); rerr != nil {
					err = errors.Join(err, fmt.Errorf("removing the temporary directory: %w", rerr))
				}
			}()
			dir = tmp
		}
		ctx, stop := untilSignal()
		defer stop()
		d, err := startDev(embedded.Config{Dir: dir}, httpAddr, sec, log)
		if err != nil {
			return err
		}
		pp, err := startPprof(obs.pprofAddr, log)
		if err != nil {
			return errors.Join(err, d.close())
		}
		defer pp.close()
		log.Info("serving", "http", d.api.addr(), "dir", dir)
		// As for "heddle server": a failed print is reported at the end.
		stdout.printf("heddle dev: http=%s dir=%s ui=%s\n", d.api.addr(), dir, d.api.uiURL())
		select {
		case <-ctx.Done():
		case err := <-d.api.done:
			stderr.printf("heddle dev: HTTP API stopped: %v\n", err)
		}
		if err := d.close(); err != nil {
			return err
		}
		stdout.println("heddle dev: stopped")
		return errors.Join(stdout.err(), stderr.err())
	}
	return cmd
}

// devServer is what "heddle dev" runs: an engine and its HTTP API.
type devServer struct {
	engine *embedded.Engine
	api    *apiServer
}

// startDev opens the engine cfg describes and serves its API on httpAddr,
// secured as sec says (nil: plain HTTP, open to all), with its metrics on
// /metrics and its logs (Badger's included) to log (nil: none). The tests
// of the workflow commands start the same server.
func startDev(cfg embedded.Config, httpAddr string, sec *security, log *slog.Logger) (*devServer, error) {
	if sec == nil {
		sec = &security{}
	}
	if log == nil {
		log = discardLogger()
	}
	m, _, err := metrics.NewRegistry()
	if err != nil {
		return nil, err
	}
	ln, err := listen(httpAddr)
	if err != nil {
		return nil, err
	}
	cfg.Metrics, cfg.Logger = m, log
	e, err := embedded.Open(cfg)
	if err != nil {
		return nil, errors.Join(err, ln.Close())
	}
	api, err := serveAPI(ln, sec.apply(httpapi.ServerConfig{Service: e, Metrics: m, Logger: log}), sec, httpAddr, nil)
	if err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return &devServer{engine: e, api: api}, nil
}

// close stops the API, then the engine, and reports what failed.
func (d *devServer) close() error {
	return errors.Join(d.api.close(), d.engine.Close())
}
