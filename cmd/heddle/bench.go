package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/heddlewf/heddle/bench"
)

// runBenchCommand runs benchmark workloads (package bench) and prints each
// one's figure, the ceiling measured in the same run, and their ratio.
func runBenchCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workload := fs.String("workload", "", "the workload to run: "+strings.Join(bench.Workloads(), ", ")+
		"; several separated by commas, or \"all\" (required)")
	mode := fs.String("mode", bench.ModeEmbedded, "embedded (one durable engine in this process) or cluster (three Raft nodes on 127.0.0.1, reached over HTTP)")
	n := fs.Int("n", 0, "the size of the workload (default: the workload's own, listed below)")
	finished := fs.Int("finished", bench.DefaultFinished, "scale: finished jobs stored before the second measurement; building 1,000,000 takes several minutes\n"+
		"(embedded: written straight into the store, then compacted; cluster: through Raft, much slower, so use 200000 there)")
	jsonPath := fs.String("json", "", "write the results to this file, one JSON object per workload per line")
	plotPath := fs.String("plot", "", "write an SVG of throughput over time and a latency histogram per workload to this file")
	ceiling := fs.Duration("ceiling-duration", 2*time.Second, "how long each ceiling loop runs")
	dir := fs.String("dir", "", "parent directory of the run's temporary data directories (default: the system's temp directory)")
	quiet := fs.Bool("quiet", false, "draw no progress bar (none is drawn when stderr is not a terminal)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: heddle bench --workload NAME [--mode embedded|cluster] [--n N] [--json FILE] [--plot FILE]\n\n"+
			"Each workload reports its figure, a ceiling measured in the same run with the same payload size and concurrency\n"+
			"(embedded: raw synced Badger batch writes; cluster: a bare hashicorp/raft + Badger apply loop on three nodes),\n"+
			"and their ratio. Workloads (default n in brackets):\n")
		for _, name := range bench.Workloads() {
			summary, defN, _ := bench.Describe(name)
			fmt.Fprintf(fs.Output(), "  %-7s [%d] %s\n", name, defN, summary)
		}
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	names, err := benchWorkloads(*workload)
	if err != nil {
		fmt.Fprintf(stderr, "heddle bench: --workload: %v\n", err)
		return 2
	}
	switch {
	case *mode != bench.ModeEmbedded && *mode != bench.ModeCluster:
		fmt.Fprintf(stderr, "heddle bench: --mode %q is neither embedded nor cluster\n", *mode)
		return 2
	case set["n"] && *n <= 0:
		fmt.Fprintf(stderr, "heddle bench: --n %d must be positive\n", *n)
		return 2
	case *finished < 0:
		fmt.Fprintf(stderr, "heddle bench: --finished %d must not be negative\n", *finished)
		return 2
	case *ceiling <= 0:
		fmt.Fprintf(stderr, "heddle bench: --ceiling-duration %v must be positive\n", *ceiling)
		return 2
	}
	var bar io.Writer
	if !*quiet && benchIsTerminal(stderr) {
		bar = stderr
	}
	var results []*bench.Result
	for _, name := range names {
		res, err := bench.Run(bench.Options{Workload: name, Mode: *mode, N: *n, Finished: *finished, Dir: *dir,
			CeilingDuration: *ceiling, Progress: bar})
		if err != nil {
			fmt.Fprintf(stderr, "heddle bench: %v\n", err)
			return 1
		}
		printBenchResult(stdout, res)
		results = append(results, res)
	}
	if *jsonPath != "" {
		if err := writeBenchFile(*jsonPath, func(w io.Writer) error { return bench.WriteJSON(w, results) }); err != nil {
			fmt.Fprintf(stderr, "heddle bench: --json: %v\n", err)
			return 1
		}
	}
	if *plotPath != "" {
		if err := writeBenchFile(*plotPath, func(w io.Writer) error { return bench.WriteSVG(w, results) }); err != nil {
			fmt.Fprintf(stderr, "heddle bench: --plot: %v\n", err)
			return 1
		}
	}
	return 0
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
func printBenchResult(w io.Writer, r *bench.Result) {
	fmt.Fprintf(w, "%s (%s) n=%d: %.4g %s; ceiling %.4g; ratio %.3f\n", r.Workload, r.Mode, r.N, r.Value, r.Figure, r.Ceiling, r.RatioToCeiling)
	fmt.Fprintf(w, "  ceiling: %s (%d-byte writes, %d writers: %.0f writes/s, p50 %.2f ms, p99 %.2f ms)\n", r.CeilingBasis,
		r.CeilingLoop.PayloadBytes, r.CeilingLoop.Concurrency, r.CeilingLoop.WritesPerS, r.CeilingLoop.LatencyMS.P50, r.CeilingLoop.LatencyMS.P99)
	if r.WorkflowsPerS != nil {
		fmt.Fprintf(w, "  workflows/s %.4g", *r.WorkflowsPerS)
		if r.ActivitiesPerS != nil {
			fmt.Fprintf(w, ", activities/s %.4g", *r.ActivitiesPerS)
		}
		fmt.Fprintln(w)
	} else if r.ActivitiesPerS != nil {
		fmt.Fprintf(w, "  activities/s %.4g\n", *r.ActivitiesPerS)
	}
	fmt.Fprintf(w, "  latency (%s): p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.LatencyOf, r.LatencyMS.P50, r.LatencyMS.P99, r.LatencyMS.Max)
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
		fmt.Fprintf(w, "  %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "  %.1f s; peak RSS %.0f MiB (%s); %d cores, %s, commit %.12s\n", r.ElapsedS,
		float64(r.PeakRSSBytes)/(1<<20), r.PeakRSSScope, r.Cores, r.GoVersion, r.Commit)
}

// benchIsTerminal reports whether w is a character device (a terminal), where
// a progress bar redrawn with carriage returns reads well; in a file or a
// pipe it would be noise.
func benchIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
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
		f.Close()
		return err
	}
	return f.Close()
}
