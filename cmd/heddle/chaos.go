package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/heddlewf/heddle/chaos"
)

// runChaosCommand runs the chaos suite: the three-node scenario, or with
// --embedded the one-process scenario. "heddle chaos worker" is the hidden
// worker process the suite starts and kills.
func runChaosCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "worker" {
		return runChaosWorker(args[1:], stderr)
	}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "the seed every fault and workload choice derives from (0: from the clock); replay a failing run with its seed")
	duration := fs.Duration("duration", 60*time.Second, "how long faults are injected (cluster scenario)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	dir := fs.String("dir", "", "keep the nodes' data and every log under this directory (default: a temporary one, removed after a passing run)")
	embedded := fs.Bool("embedded", false, "run the embedded scenario: one process on one Badger directory, killed --kills times")
	kills := fs.Int("kills", 100, "SIGKILLs of the embedded scenario")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: heddle chaos [--seed N] [--duration D] [--json] [--dir D] [--embedded [--kills N]]\n\n"+
			"Builds heddle, starts three server processes behind a fault-injecting proxy and\n"+
			"worker processes, kills, pauses and partitions them under load, then checks that\n"+
			"nothing acknowledged was lost or done twice. Exits 0 only when every check passes.\n\n")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	fmt.Fprintf(stderr, "heddle chaos: seed %d\n", *seed)
	ctx, stop := untilSignal()
	defer stop()
	opts := chaos.Options{Seed: *seed, Duration: *duration, Dir: *dir, Log: stderr, Kills: *kills}
	run := chaos.RunCluster
	if *embedded {
		run = chaos.RunEmbedded
	}
	sum, det, err := run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "heddle chaos: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(sum)
		fmt.Fprintln(stdout, string(b))
		chaos.Print(stderr, sum, det)
	} else {
		chaos.Print(stdout, sum, det)
	}
	if !sum.OK() {
		return 1
	}
	return 0
}

// runChaosWorker is one worker process of the chaos workload.
func runChaosWorker(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "the nodes' HTTP addresses, comma-separated")
	name := fs.String("name", "", "this incarnation's name (names its logs)")
	dir := fs.String("dir", "", "directory of the logs")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *addr == "" || *name == "" || *dir == "" {
		fmt.Fprintln(stderr, "heddle chaos worker: --addr, --name and --dir are required")
		return 2
	}
	ctx, stop := untilSignal()
	defer stop()
	if err := chaos.RunWorker(ctx, chaos.WorkerConfig{Addrs: splitAddrs(*addr), Name: *name, Dir: *dir}); err != nil && err != context.Canceled {
		fmt.Fprintf(stderr, "heddle chaos worker: %v\n", err)
		return 1
	}
	return 0
}
