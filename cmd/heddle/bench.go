package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/bench"
	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// newBenchCommand is "heddle bench": benchmark workloads (package bench),
// each one's figure, the ceiling measured in the same run, and their ratio.
func newBenchCommand() *cobra.Command {
	var long strings.Builder
	long.WriteString("Each workload reports its figure, a ceiling measured in the same run with the same\n" +
		"payload size and concurrency (embedded: raw synced Badger batch writes; cluster: a\n" +
		"bare hashicorp/raft + Badger apply loop on three nodes), and their ratio.\n\n" +
		"Workloads (default n in brackets):\n")
	for _, name := range bench.Workloads() {
		summary, defN, _ := bench.Describe(name)
		fmt.Fprintf(&long, "  %-7s [%d] %s\n", name, defN, summary)
	}
	cmd := &cobra.Command{
		Use:   "bench --workload NAME [--mode embedded|cluster|cluster-mtls] [--n N] [--json FILE] [--plot FILE]",
		Short: "run a benchmark workload next to a ceiling measured in the same run; JSON and SVG output",
		Long:  strings.TrimRight(long.String(), "\n"),
		Args:  noArgs,
	}
	fs := cmd.Flags()
	var (
		workload, mode, jsonPath, plotPath, dir string
		n, finished, starters                   int
		ceiling                                 time.Duration
		quiet, noQueueView                      bool
		shardList, cpuProfile                   string
	)
	fs.StringVar(&workload, "workload", "", "the `workloads` to run: "+strings.Join(bench.Workloads(), ", ")+
		"; several separated by commas, or \"all\" (required)")
	fs.StringVar(&mode, "mode", bench.ModeEmbedded, "embedded (one durable engine in this process), cluster (three Raft nodes on 127.0.0.1, reached over HTTP)\n"+
		"or cluster-mtls (the same with mutual TLS between the nodes and TLS to the API); several `modes` separated by commas run one after\n"+
		"the other, and each workload run in both cluster modes prints the ratio of its cluster-mtls figure to its cluster one")
	fs.IntVar(&n, "n", 0, "the size of the workload (default: the workload's own, listed above)")
	fs.IntVar(&starters, "starters", bench.DefaultStarters, "how many goroutines start workflows at once and wait for them, in the workloads with starters, and the ceiling's\n"+
		"writers beside them: a closed loop, whose throughput is the starters over the latency, so raise it to measure a backend's capacity")
	fs.IntVar(&finished, "finished", bench.DefaultFinished, "scale: finished jobs stored before the second measurement; building 1,000,000 takes several minutes\n"+
		"(embedded: written straight into the store, then compacted; cluster: through Raft, much slower, so use 200000 there)")
	fs.StringVar(&jsonPath, "json", "", "write the results to this `file`, one JSON object per workload per line")
	fs.StringVar(&plotPath, "plot", "", "write an SVG of throughput over time and a latency histogram per workload to this `file`")
	fs.DurationVar(&ceiling, "ceiling-duration", 2*time.Second, "how long each ceiling loop runs")
	fs.StringVar(&dir, "dir", "", "parent `directory` of the run's temporary data directories (default: the system's temp directory)")
	fs.BoolVar(&quiet, "quiet", false, "draw no progress bar (none is drawn when stderr is not a terminal)")
	fs.BoolVar(&noQueueView, "no-queue-view", false, "turn the task queue view (pollers, rates) off in the engine or nodes; the queueview workload compares\n"+
		"on and off in one run by itself")
	fs.StringVar(&shardList, "shards", "", "run the cluster modes as sharded clusters of these shard `counts` (comma-separated, e.g. 1,2,4,8; 1 is a cluster\n"+
		"of one Raft group), each set against as many bare Raft groups in parallel; the table then compares each count with the first")
	// -o prints the results on stdout; --json, here older than -o, names a
	// file, so only -o/--output is defined.
	format := new(outputFormat)
	*format = formatTable
	fs.VarP(formatValue{format}, "output", "o", "output `format` of the results on stdout: table, json (one document) or jsonl (one JSON object per workload)")
	// --cpuprofile is for finding where a workload's CPU goes (docs/sharding.md,
	// "Measured"); hidden, as it is an engineer's tool, not an operator's.
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole run to this `file`")
	_ = fs.MarkHidden("cpuprofile")
	completeOutput(cmd)
	cmd.AddCommand(newBenchModelCommand())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		names, err := benchWorkloads(workload)
		if err != nil {
			return usagef("--workload: %v", err)
		}
		modes := splitAddrs(mode)
		for _, m := range modes {
			if !slices.Contains(bench.Modes(), m) {
				return usagef("--mode %q is not one of %s", m, strings.Join(bench.Modes(), ", "))
			}
		}
		switch {
		case len(modes) == 0:
			return usagef("--mode names no mode")
		case fs.Changed("n") && n <= 0:
			return usagef("--n %d must be positive", n)
		case starters <= 0:
			return usagef("--starters %d must be positive", starters)
		case finished < 0:
			return usagef("--finished %d must not be negative", finished)
		case ceiling <= 0:
			return usagef("--ceiling-duration %v must be positive", ceiling)
		}
		shardCounts := []int{0}
		if shardList != "" {
			if shardCounts, err = parseShardCounts(shardList); err != nil {
				return usagef("--shards: %v", err)
			}
			for _, m := range modes {
				if m == bench.ModeEmbedded && slices.ContainsFunc(shardCounts, func(s int) bool { return s > 1 }) {
					return usagef("--shards: the embedded mode is one shard; shard counts above 1 need --mode cluster or cluster-mtls")
				}
			}
		}
		if cpuProfile != "" {
			f, err := os.Create(cpuProfile)
			if err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return errors.Join(fmt.Errorf("--cpuprofile: %w", err), f.Close())
			}
			defer func() {
				pprof.StopCPUProfile()
				_ = f.Close()
			}()
		}
		var bar io.Writer
		if !quiet && benchIsTerminal(stderr) {
			bar = stderr
		}
		results := []*bench.Result{}
		for _, name := range names {
			for _, mode := range modes {
				for _, shards := range shardCounts {
					res, err := bench.Run(bench.Options{Workload: name, Mode: mode, N: n, Finished: finished, Dir: dir,
						CeilingDuration: ceiling, Progress: bar, NoQueueView: noQueueView, Shards: shards, Starters: starters})
					if err != nil {
						return err
					}
					switch *format {
					case formatTable:
						if err := printBenchResult(stdout, res); err != nil {
							return err
						}
					case formatJSONL:
						if err := bench.WriteJSON(stdout, []*bench.Result{res}); err != nil {
							return err
						}
					}
					results = append(results, res)
				}
			}
		}
		if *format == formatTable {
			if err := printMTLSRatios(stdout, results); err != nil {
				return err
			}
			if len(shardCounts) > 1 {
				if err := printShardRatios(stdout, results); err != nil {
					return err
				}
			}
		}
		if *format == formatJSON {
			if err := printDoc(stdout, formatJSON, results); err != nil {
				return err
			}
		}
		if jsonPath != "" {
			if err := writeBenchFile(jsonPath, func(w io.Writer) error { return bench.WriteJSON(w, results) }); err != nil {
				return fmt.Errorf("--json: %w", err)
			}
		}
		if plotPath != "" {
			if err := writeBenchFile(plotPath, func(w io.Writer) error { return bench.WriteSVG(w, results) }); err != nil {
				return fmt.Errorf("--plot: %w", err)
			}
		}
		return nil
	}
	return cmd
}

// benchWorkloads turns --workload into the workloads to run.
func benchWorkloads(arg string) ([]string, error) {
	if arg == "" {
		return nil, fmt.Errorf("required (one of %s, or all)", strings.Join(bench.Workloads(), ", "))
	}
	if arg == "all" {
		return bench.Workloads(), nil
	}
	var out []string
	for _, name := range strings.Split(arg, ",") {
		name = strings.TrimSpace(name)
		if _, _, ok := bench.Describe(name); !ok {
			return nil, fmt.Errorf("unknown workload %q (one of %s, or all)", name, strings.Join(bench.Workloads(), ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// printBenchResult prints one workload's figures as a short block a person reads.
func printBenchResult(w io.Writer, r *bench.Result) error {
	p := newPrinter(w)
	mode := r.Mode
	if r.Shards > 1 {
		mode += fmt.Sprintf(", %d shards", r.Shards)
	}
	p.printf("%s (%s) n=%d: %.4g %s; ceiling %.4g; ratio %.3f\n", r.Workload, mode, r.N, r.Value, r.Figure, r.Ceiling, r.RatioToCeiling)
	p.printf("  ceiling: %s (%d-byte writes, %d writers: %.0f writes/s, p50 %.2f ms, p99 %.2f ms)\n", r.CeilingBasis,
		r.CeilingLoop.PayloadBytes, r.CeilingLoop.Concurrency, r.CeilingLoop.WritesPerS, r.CeilingLoop.LatencyMS.P50, r.CeilingLoop.LatencyMS.P99)
	if r.WorkflowsPerS != nil {
		p.printf("  workflows/s %.4g", *r.WorkflowsPerS)
		if r.ActivitiesPerS != nil {
			p.printf(", activities/s %.4g", *r.ActivitiesPerS)
		}
		p.println()
	} else if r.ActivitiesPerS != nil {
		p.printf("  activities/s %.4g\n", *r.ActivitiesPerS)
	}
	p.printf("  latency (%s): p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.LatencyOf, r.LatencyMS.P50, r.LatencyMS.P99, r.LatencyMS.Max)
	if r.CPUMSPerUnit > 0 {
		p.printf("  CPU %.3f ms per unit (the whole process: nodes, workers, clients)\n", r.CPUMSPerUnit)
	}
	if len(r.Extra) > 0 {
		keys := make([]string, 0, len(r.Extra))
		for k := range r.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %.4g", k, r.Extra[k])
		}
		p.printf("  %s\n", strings.Join(parts, ", "))
	}
	p.printf("  %.1f s; peak RSS %.0f MiB (%s); %d cores, %s, commit %.12s\n", r.ElapsedS,
		float64(r.PeakRSSBytes)/(1<<20), r.PeakRSSScope, r.Cores, r.GoVersion, r.Commit)
	return p.err()
}

// parseShardCounts reads --shards: shard counts, comma-separated.
func parseShardCounts(arg string) ([]int, error) {
	var out []int
	for _, f := range splitAddrs(arg) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > engine.MaxShards {
			return nil, fmt.Errorf("%q is not a shard count in [1, %d]", f, engine.MaxShards)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("names no shard count")
	}
	return out, nil
}

// printShardRatios sets each workload's run of each shard count against
// its first run in the same mode: throughput and CPU per unit.
func printShardRatios(w io.Writer, results []*bench.Result) error {
	p := newPrinter(w)
	first := map[string]*bench.Result{}
	for _, r := range results {
		key := r.Workload + "/" + r.Mode
		base, ok := first[key]
		if !ok {
			first[key] = r
			continue
		}
		if base.Value <= 0 || base.CPUMSPerUnit <= 0 {
			continue
		}
		p.printf("%s (%s): %d shards / %d: %s %.2fx (%.4g / %.4g), CPU per unit %.2fx (%.3f / %.3f ms)\n", r.Workload, r.Mode,
			max(r.Shards, 1), max(base.Shards, 1), r.Figure, r.Value/base.Value, r.Value, base.Value,
			r.CPUMSPerUnit/base.CPUMSPerUnit, r.CPUMSPerUnit, base.CPUMSPerUnit)
	}
	return p.err()
}

// benchIsTerminal reports whether w is a character device (a terminal), where
// a progress bar redrawn with carriage returns reads well; in a file or a
// pipe it would be noise.
func benchIsTerminal(w io.Writer) bool {
	f, ok := unwrapPrinter(w).(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writeBenchFile writes path through fill, reporting a failed close.
func writeBenchFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// printMTLSRatios prints, for each workload run in both cluster modes, the
// ratio of its figure with mutual TLS to its figure without: the k-th run
// with against the k-th without, and, with several pairs, their geometric
// mean. Alternating the modes (--mode cluster,cluster-mtls,cluster,...)
// spreads the machine's changing load over both.
func printMTLSRatios(w io.Writer, results []*bench.Result) error {
	p := newPrinter(w)
	byWorkload := map[string][2][]*bench.Result{}
	var order []string
	for _, r := range results {
		k := -1
		switch r.Mode {
		case bench.ModeCluster:
			k = 0
		case bench.ModeClusterMTLS:
			k = 1
		}
		if k < 0 {
			continue
		}
		pair, seen := byWorkload[r.Workload]
		if !seen {
			order = append(order, r.Workload)
		}
		pair[k] = append(pair[k], r)
		byWorkload[r.Workload] = pair
	}
	for _, name := range order {
		pair := byWorkload[name]
		n, logSum := 0, 0.0
		for i := range min(len(pair[0]), len(pair[1])) {
			plain, sec := pair[0][i], pair[1][i]
			if plain.Value <= 0 || sec.Value <= 0 {
				continue // a run that measured nothing has no ratio
			}
			n++
			ratio := sec.Value / plain.Value
			logSum += math.Log(ratio)
			p.printf("%s: cluster-mtls / cluster = %.3f (%.4g / %.4g %s)\n", name, ratio, sec.Value, plain.Value, sec.Figure)
		}
		if n > 1 {
			p.printf("%s: cluster-mtls / cluster = %.3f, the geometric mean of %d pairs\n", name, math.Exp(logSum/float64(n)), n)
		}
	}
	return p.err()
}
