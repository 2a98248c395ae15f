package main

// This file is "heddle chaos", the chaos suite's command, and the hidden
// "heddle chaos worker", the worker process the suite starts and kills.

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/chaos"
	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

func newChaosCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chaos [--seed N] [--duration D] [--dir DIR] [--shards S] [--embedded [--kills N]]",
		Short: "kill, pause and partition a local cluster under load, then check nothing was lost or done twice",
		Long: "Builds heddle, starts three server processes behind a fault-injecting proxy and\n" +
			"worker processes, kills, pauses and partitions them under load, then checks that\n" +
			"nothing acknowledged was lost or done twice. Exits 0 only when every check passes.\n" +
			"With -o json or jsonl the summary goes to stdout as JSON and the report to stderr.",
		Args: noArgs,
	}
	fs := cmd.Flags()
	var (
		seed     uint64
		duration time.Duration
		dir      string
		embedded bool
		kills    int
		shards   int
	)
	fs.Uint64Var(&seed, "seed", 0, "the `seed` every fault and workload choice derives from (0: from the clock); replay a failing run with its seed")
	fs.DurationVar(&duration, "duration", 60*time.Second, "how long faults are injected (cluster scenario)")
	format := addOutputFlags(fs)
	completeOutput(cmd)
	fs.StringVar(&dir, "dir", "", "keep the nodes' data and every log under this `directory` (default: a temporary one, removed after a passing run)")
	fs.BoolVar(&embedded, "embedded", false, "run the embedded scenario: one process on one Badger directory, killed --kills times")
	fs.IntVar(&kills, "kills", 100, "SIGKILLs of the embedded scenario")
	fs.IntVar(&shards, "shards", 0, "run the cluster scenario on a sharded cluster of `S` shards (docs/sharding.md); 0: one Raft group")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if seed == 0 {
			seed = uint64(time.Now().UnixNano())
		}
		// The seed replays a failing run: a run whose seed could not be
		// said is not worth starting.
		if _, err := fmt.Fprintf(stderr, "heddle chaos: seed %d\n", seed); err != nil {
			return err
		}
		ctx, stop := untilSignal()
		defer stop()
		switch {
		case shards < 0 || shards > engine.MaxShards:
			return usagef("--shards %d is not in [0, %d]", shards, engine.MaxShards)
		case shards > 0 && embedded:
			return usagef("--shards runs the cluster scenario; the embedded one is one shard")
		}
		opts := chaos.Options{Seed: seed, Duration: duration, Dir: dir, Log: stderr, Kills: kills, Shards: shards}
		run := chaos.RunCluster
		if embedded {
			run = chaos.RunEmbedded
		}
		sum, det, err := run(ctx, opts)
		if err != nil {
			return err
		}
		if *format == formatTable {
			if err := chaos.Print(stdout, sum, det); err != nil {
				return err
			}
		} else {
			if err := printDoc(stdout, *format, sum); err != nil {
				return err
			}
			if err := chaos.Print(stderr, sum, det); err != nil {
				return err
			}
		}
		if !sum.OK() {
			return exitError{code: 1}
		}
		return nil
	}
	cmd.AddCommand(newChaosWorkerCommand())
	return cmd
}

// newChaosWorkerCommand is one worker process of the chaos workload.
func newChaosWorkerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "worker --addr ADDRS --name NAME --dir DIR",
		Short:  "one worker process of the chaos workload (started by the suite)",
		Args:   noArgs,
		Hidden: true,
	}
	fs := cmd.Flags()
	var addr, name, dir, tlsCA string
	fs.StringVar(&addr, "addr", "", "the nodes' HTTP `addresses`, comma-separated")
	fs.StringVar(&tlsCA, "tls-ca", "", "PEM `file` of the CA of the nodes' HTTPS API")
	fs.StringVar(&name, "name", "", "this incarnation's `name` (names its logs)")
	fs.StringVar(&dir, "dir", "", "`directory` of the logs")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if addr == "" || name == "" || dir == "" {
			return usagef("--addr, --name and --dir are required")
		}
		ctx, stop := untilSignal()
		defer stop()
		cfg := chaos.WorkerConfig{Addrs: splitAddrs(addr), Name: name, Dir: dir}
		if tlsCA != "" {
			var err error
			if cfg.TLS, err = chaos.ClientTLS(tlsCA); err != nil {
				return err
			}
		}
		err := chaos.RunWorker(ctx, cfg)
		if err != nil && err != context.Canceled {
			return err
		}
		return nil
	}
	return cmd
}
