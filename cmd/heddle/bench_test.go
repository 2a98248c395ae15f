package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/bench"
)

func TestBenchFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{}, "--workload"},
		{[]string{"--workload", "warp"}, "--workload"},
		{[]string{"--workload", "seq3,warp"}, "--workload"},
		{[]string{"--workload", "seq3", "--mode", "cloud"}, "--mode"},
		{[]string{"--workload", "seq3", "--n", "0"}, "--n"},
		{[]string{"--workload", "seq3", "--n", "-5"}, "--n"},
		{[]string{"--workload", "scale", "--finished", "-1"}, "--finished"},
		{[]string{"--workload", "seq3", "--mode", "cluster", "--shards", "0"}, "--shards"},
		{[]string{"--workload", "seq3", "--mode", "cluster", "--shards", "1,x"}, "--shards"},
		{[]string{"--workload", "seq3", "--shards", "2"}, "--shards: the embedded mode is one shard"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"bench"}, c.args...), &stdout, &stderr)
		if code != 2 {
			t.Errorf("heddle bench %v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(stderr.String(), c.flag) {
			t.Errorf("heddle bench %v: stderr does not name %s:\n%s", c.args, c.flag, stderr.String())
		}
	}
}

func TestBenchHelpListsWorkloads(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"seq3", "idle", "scale", "--finished", "several minutes"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help does not mention %q:\n%s", want, stdout.String())
		}
	}
}

// TestBenchWritesJSONAndPlot runs the smallest workload end to end through
// the command and checks the files it writes.
func TestBenchWritesJSONAndPlot(t *testing.T) {
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.svg")
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--workload", "seq3,start", "--n", "10", "--ceiling-duration", "100ms",
		"--dir", dir, "--json", js, "--plot", svg}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "ratio") {
		t.Errorf("stdout has no ratio:\n%s", stdout.String())
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines, want one per workload:\n%s", len(lines), b)
	}
	for i, want := range []string{"seq3", "start"} {
		var obj map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["workload"] != want || obj["n"] != float64(10) {
			t.Errorf("line %d: workload %v n %v", i, obj["workload"], obj["n"])
		}
	}
	s, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(s, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(s), []byte("</svg>")) {
		t.Errorf("the plot is not an SVG document:\n%.200s", s)
	}
}

// The hidden --cpuprofile writes a Go CPU profile of the run: a
// gzip-compressed profile (runtime/pprof's format), which go tool pprof
// reads.
func TestBenchCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--workload", "start", "--n", "10", "--ceiling-duration", "100ms",
		"--dir", dir, "--cpuprofile", prof}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpuprofile wrote %d bytes that are not a gzip-compressed profile", len(b))
	}
	code = run([]string{"bench", "--workload", "start", "--n", "10", "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "p")}, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "--cpuprofile") {
		t.Errorf("an unwritable --cpuprofile: exit %d, stderr %q", code, stderr.String())
	}
}

// -o jsonl prints each workload's result as one JSON line on stdout, the
// lines --json writes to a file.
func TestBenchOutputJSONL(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--workload", "start", "--n", "10", "--ceiling-duration", "100ms",
		"--dir", t.TempDir(), "-o", "jsonl"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	var obj map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &obj) != nil || obj["workload"] != "start" || obj["n"] != float64(10) {
		t.Errorf("bench -o jsonl printed:\n%s", stdout.String())
	}
}

// The k-th run with mutual TLS is held against the k-th without, and
// several pairs are summed up by their geometric mean.
func TestBenchMTLSRatios(t *testing.T) {
	r := func(mode string, v float64) *bench.Result {
		return &bench.Result{Workload: "seq3", Mode: mode, Value: v, Figure: "workflows/s"}
	}
	var out bytes.Buffer
	err := printMTLSRatios(&out, []*bench.Result{r(bench.ModeCluster, 400), r(bench.ModeClusterMTLS, 200),
		r(bench.ModeCluster, 100), r(bench.ModeClusterMTLS, 200), r(bench.ModeEmbedded, 9000)})
	if err != nil {
		t.Fatal(err)
	}
	want := "seq3: cluster-mtls / cluster = 0.500 (200 / 400 workflows/s)\n" +
		"seq3: cluster-mtls / cluster = 2.000 (200 / 100 workflows/s)\n" +
		"seq3: cluster-mtls / cluster = 1.000, the geometric mean of 2 pairs\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// heddle bench model prints the docs' table from its defaults, recomputes
// it from the flags, and refuses what it cannot model by name.
func TestBenchModel(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "model"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var want strings.Builder
	rows, err := bench.Scale(bench.DefaultScalingInputs, []int{3, 9, 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.WriteScalingTable(&want, bench.DefaultScalingInputs, rows); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != want.String() {
		t.Errorf("heddle bench model printed\n%s\nwant\n%s", stdout.String(), want.String())
	}
	// The docs show the defaults' table as the command prints it.
	doc, err := os.ReadFile("../../docs/sharding.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), want.String()) {
		t.Errorf("docs/sharding.md does not hold the table `heddle bench model` prints:\n%s", want.String())
	}
	stdout.Reset()
	if code := run([]string{"bench", "model", "--machines", "3,6", "--cut-poll-ms", "0"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "| 6 |") || strings.Contains(stdout.String(), "| 9 |") {
		t.Errorf("--machines 3,6 printed\n%s", stdout.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--machines", "0"}, "--machines"},
		{[]string{"--machines", "3,x"}, "--machines"},
		{[]string{"--cpu-ms", "-1"}, "CPUMSPerWorkflow"},
		{[]string{"--cut-poll-ms", "100"}, "cost more than the whole workflow"},
	} {
		stderr.Reset()
		if code := run(append([]string{"bench", "model"}, c.args...), &stdout, &stderr); code != 2 {
			t.Errorf("heddle bench model %v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("heddle bench model %v: stderr does not name %s:\n%s", c.args, c.want, stderr.String())
		}
	}
}

// --starters sets how many starters a workload runs, and its ceiling's
// writers beside them; a count that is not positive is refused.
func TestBenchStarters(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--workload", "start", "--n", "10", "--ceiling-duration", "100ms", "--starters", "3",
		"--dir", t.TempDir(), "-o", "jsonl"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var res bench.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.CeilingLoop.Concurrency != 3 {
		t.Fatalf("bench --starters 3 printed (%v):\n%s\nwant a ceiling of 3 writers", err, stdout.String())
	}
	stderr.Reset()
	if code := run([]string{"bench", "--workload", "start", "--starters", "0"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "--starters") {
		t.Errorf("--starters 0: exit %d, stderr %q; want it refused, naming the flag", code, stderr.String())
	}
}
