package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Result is one workload's run: its headline figure, the ceiling measured
// in the same run in the same unit, their ratio, and the machine it ran on.
type Result struct {
	Workload string `json:"workload"`
	Mode     string `json:"mode"`
	N        int    `json:"n"`
	// Figure names the headline figure and its unit ("workflows/s",
	// "p99 lateness ms"); Value is the figure.
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	// WorkflowsPerS and ActivitiesPerS are set by the workloads where they
	// apply (nil otherwise, and left out of the JSON).
	WorkflowsPerS  *float64 `json:"workflows_per_s,omitempty"`
	ActivitiesPerS *float64 `json:"activities_per_s,omitempty"`
	// LatencyMS summarises Samples; LatencyOf says what one sample is.
	LatencyMS LatencyMS `json:"latency_ms"`
	LatencyOf string    `json:"latency_of"`
	// Ceiling is the raw loop's result in the unit of Value, and
	// RatioToCeiling is Value / Ceiling: below 1 for a throughput (the
	// share of the ceiling reached), above 1 for a latency or a size (how
	// many times the ceiling's). CeilingBasis says how Ceiling was derived
	// from the loop.
	Ceiling        float64 `json:"ceiling"`
	RatioToCeiling float64 `json:"ratio_to_ceiling"`
	CeilingBasis   string  `json:"ceiling_basis"`
	CeilingLoop    Ceiling `json:"ceiling_loop"`
	// CommandsPerUnit is how many commands the workload's clients and
	// workers issued per unit of Value's numerator (per workflow, per
	// start, per cycle), as counted in this run.
	CommandsPerUnit float64 `json:"commands_per_unit,omitempty"`
	// QueueViewOff: the run's engine or nodes kept no task queue view
	// (Options.NoQueueView).
	QueueViewOff bool `json:"queue_view_off,omitempty"`
	// Shards is the shard count of a sharded cluster's run (Options.Shards);
	// absent for a cluster of one group.
	Shards int `json:"shards,omitempty"`
	// CPUMSPerUnit is the CPU time (user and system) the whole process
	// spent during the measured phase, over its units: the nodes, the
	// workers and the clients together, as they share the process.
	CPUMSPerUnit float64 `json:"cpu_ms_per_unit,omitempty"`
	// Extra holds the workload's further figures, named with their units.
	Extra    map[string]float64 `json:"extra,omitempty"`
	ElapsedS float64            `json:"elapsed_s"`

	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit"`
	// PeakRSSBytes is the peak resident set of this process (VmHWM), which
	// holds every node, worker and client of the run; PeakRSSScope says
	// whether it was reset at the start of the workload or is the
	// process's peak since it started.
	PeakRSSBytes int64  `json:"peak_rss_bytes"`
	PeakRSSScope string `json:"peak_rss_scope"`
	StartedAt    string `json:"started_at"`

	// Samples are the latencies (sorted) and Timeline the completions per
	// bucket of BucketS seconds, for the plot.
	Samples  []time.Duration `json:"-"`
	Timeline []float64       `json:"-"`
	BucketS  float64         `json:"-"`
}

// WriteJSON writes results as JSON Lines: one object per workload, each on
// its own line, so a single workload's file is one JSON object.
func WriteJSON(w io.Writer, results []*Result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func ptr(v float64) *float64 { return &v }

// commit is the revision the binary was built from: the vcs.revision Go
// stamps into builds of a checkout, or, for test binaries and go run,
// which carry none, what git says of the working directory.
func commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "-dirty"
			}
			return rev
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func stampMachine(r *Result) {
	r.Cores = runtime.NumCPU()
	r.GoVersion = runtime.Version()
	r.Commit = commit()
}

// resetPeakRSS asks Linux to reset this process's VmHWM to its current
// resident set (clear_refs 5), so the peak read after a workload is that
// workload's. It reports whether that worked.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSSBytes is the process's peak resident set: VmHWM from
// /proc/self/status, or getrusage's ru_maxrss (kilobytes on Linux) where
// /proc is missing.
func peakRSSBytes() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb << 10
					}
				}
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		return int64(ru.Maxrss) << 10
	}
	return 0
}

// processCPU is the user and system time this process has used, every
// goroutine's (0 where getrusage fails). On a shared machine the CPU a
// unit of work costs moves far less with the load than its wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
