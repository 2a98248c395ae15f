package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"

	"testing"
	"time"
)

// tinyN sizes every workload so the whole suite takes seconds.
var tinyN = map[string]int{"seq3": 20, "start": 50, "timer": 10, "fanout": 20, "signal": 10,
	"replay": 40, "scale": 20, "idle": 100, "race": 10, "cancel": 6, "observe": 20, "queueview": 20, "resources": 20, "batchterminate": 50, "groupcost": 50, "children": 20}

func tinyRun(t *testing.T, workload, mode string) *Result {
	t.Helper()
	res, err := Run(Options{Workload: workload, Mode: mode, N: tinyN[workload], Finished: 300,
		Dir: t.TempDir(), CeilingDuration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestWorkloadsEmbedded(t *testing.T) {
	for _, name := range Workloads() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkResult(t, tinyRun(t, name, ModeEmbedded))
		})
	}
}

// TestWorkloadsCluster runs the workloads against three Raft nodes; each
// starts its own cluster and a bare Raft ceiling, a few seconds apiece, so
// -short keeps two of them.
func TestWorkloadsCluster(t *testing.T) {
	for _, name := range Workloads() {
		if testing.Short() && name != "seq3" && name != "scale" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkResult(t, tinyRun(t, name, ModeCluster))
		})
	}
}

// The secured cluster runs seq3 like the plain one: mutual TLS between the
// nodes and TLS to the API change the cost, not the outcome.
func TestSeq3ClusterMTLS(t *testing.T) {
	res := tinyRun(t, "seq3", ModeClusterMTLS)
	if res.Mode != ModeClusterMTLS {
		t.Fatalf("mode %q", res.Mode)
	}
	checkResult(t, res)
}

// throughputWorkloads report workflows per second; activityWorkloads also
// activities per second.
var (
	workflowWorkloads = map[string]bool{"seq3": true, "children": true, "start": true, "timer": true, "fanout": true, "idle": true, "observe": true, "queueview": true}
	activityWorkloads = map[string]bool{"seq3": true, "fanout": true, "observe": true, "queueview": true}
)

func checkResult(t *testing.T, res *Result) {
	t.Helper()
	var js bytes.Buffer
	if err := WriteJSON(&js, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(js.Bytes(), &obj); err != nil {
		t.Fatalf("the JSON is not one object: %v\n%s", err, js.String())
	}
	required := []string{"workload", "mode", "n", "figure", "value", "latency_ms", "ceiling", "ratio_to_ceiling",
		"ceiling_loop", "cores", "go_version", "commit", "peak_rss_bytes"}
	if workflowWorkloads[res.Workload] {
		required = append(required, "workflows_per_s")
	}
	if activityWorkloads[res.Workload] {
		required = append(required, "activities_per_s")
	}
	for _, k := range required {
		if _, ok := obj[k]; !ok {
			t.Errorf("the JSON has no %q:\n%s", k, js.String())
		}
	}
	lat, _ := obj["latency_ms"].(map[string]any)
	for _, k := range []string{"p50", "p99", "max"} {
		if _, ok := lat[k].(float64); !ok {
			t.Errorf("latency_ms has no number %q: %v", k, obj["latency_ms"])
		}
	}
	if obj["workload"] != res.Workload || obj["mode"] != res.Mode || obj["n"] != float64(res.N) {
		t.Errorf("workload/mode/n = %v/%v/%v, want %s/%s/%d", obj["workload"], obj["mode"], obj["n"], res.Workload, res.Mode, res.N)
	}
	if res.Value <= 0 || math.IsInf(res.Value, 0) || math.IsNaN(res.Value) {
		t.Errorf("figure %s = %v, want a positive number", res.Figure, res.Value)
	}
	if res.Ceiling <= 0 || math.IsInf(res.Ceiling, 0) {
		t.Errorf("ceiling = %v, want a positive number", res.Ceiling)
	}
	if want := res.Value / res.Ceiling; math.Abs(res.RatioToCeiling-want) > 1e-9*want {
		t.Errorf("ratio_to_ceiling = %v, want figure/ceiling = %v", res.RatioToCeiling, want)
	}
	if res.WorkflowsPerS != nil && *res.WorkflowsPerS <= 0 {
		t.Errorf("workflows_per_s = %v", *res.WorkflowsPerS)
	}
	if res.ActivitiesPerS != nil && *res.ActivitiesPerS <= 0 {
		t.Errorf("activities_per_s = %v", *res.ActivitiesPerS)
	}
	l := res.LatencyMS
	if !(l.P50 >= 0 && l.P50 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latency p50 %v <= p99 %v <= max %v does not hold", l.P50, l.P99, l.Max)
	}
	if res.CeilingLoop.Writes <= 0 || res.CeilingLoop.WritesPerS <= 0 {
		t.Errorf("the ceiling loop wrote nothing: %+v", res.CeilingLoop)
	}
	if res.Cores <= 0 || res.GoVersion == "" || res.Commit == "" || res.PeakRSSBytes <= 0 {
		t.Errorf("machine fields: cores %d, go %q, commit %q, peak RSS %d", res.Cores, res.GoVersion, res.Commit, res.PeakRSSBytes)
	}
	if res.Workload == "resources" {
		// Every step waited for a unit, and the longest wait is at least
		// the mean.
		if f := res.Extra["fairness_max_over_mean"]; !(f >= 1) || res.Extra["wait_mean_ms"] <= 0 || res.Extra["units"] != resourceUnits {
			t.Errorf("resources extras: %v", res.Extra)
		}
	}
	if res.Workload == "batchterminate" && res.Extra["default_batch_runs_per_s"] <= 0 {
		t.Errorf("batchterminate extras: %v", res.Extra)
	}
	if res.Workload == "queueview" {
		on, off := res.Extra["view_on_workflows_per_s"], res.Extra["view_off_workflows_per_s"]
		if !(on > 0) || !(off > 0) || res.Extra["rounds"] < 1 || math.IsNaN(res.Extra["queue_view_overhead_pct"]) {
			t.Errorf("queueview extras: %v", res.Extra)
		}
	}
	if n := res.Extra["worker_errors"]; n > 0 {
		t.Logf("%v worker errors (reported, not fatal)", n)
	}
	var svg bytes.Buffer
	if err := WriteSVG(&svg, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg.Bytes())
}

// checkXML parses the whole document and checks its root is an svg.
func checkXML(t *testing.T, doc []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("the SVG's root element is %q", root)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	cases := []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.5, 7 * time.Millisecond},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2), 0.5, 1 * time.Millisecond},
		{ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 1, 4 * time.Millisecond},
		{ms(hundred...), 0.5, 50 * time.Millisecond},
		{ms(hundred...), 0.99, 99 * time.Millisecond},
		{ms(hundred...), 1, 100 * time.Millisecond},
		{ms(hundred...), 0.001, 1 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
		}
	}
	s := Summarize(ms(5, 1, 9, 3))
	if s != (LatencyMS{P50: 3, P99: 9, Max: 9}) {
		t.Errorf("Summarize = %+v", s)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{Workload: "nope"}, {Workload: "seq3", Mode: "cloud"}, {Workload: "seq3", N: -1},
		{Workload: "seq3", Mode: ModeEmbedded, Shards: 2}, {Workload: "seq3", Mode: ModeCluster, Shards: -1}, {Workload: "seq3", Mode: ModeCluster, Shards: 5000}} {
		if _, err := Run(o); err == nil {
			t.Errorf("Run(%+v) succeeded", o)
		}
	}
}

// --no-queue-view runs seq3 with the view off, and the result says so.
func TestSeq3WithoutQueueView(t *testing.T) {
	res, err := Run(Options{Workload: "seq3", N: 20, Dir: t.TempDir(), CeilingDuration: 200 * time.Millisecond, NoQueueView: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.QueueViewOff {
		t.Errorf("queue_view_off not set: %+v", res)
	}
	checkResult(t, res)
}

// seq3 runs on a sharded cluster (docs/sharding.md): its workflows spread
// over the shards, the ceiling is as many bare Raft groups, and the result
// carries the shard count and the CPU each workflow cost.
func TestSeq3ShardedCluster(t *testing.T) {
	res, err := Run(Options{Workload: "seq3", Mode: ModeCluster, Shards: 4, N: 40, Dir: t.TempDir(), CeilingDuration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Shards != 4 || res.CPUMSPerUnit <= 0 || res.CeilingLoop.Kind != "4-groups-raft3-badger-apply" {
		t.Errorf("shards %d, CPU %.3f ms per workflow, ceiling %q: want 4 shards, the CPU, 4 bare groups", res.Shards, res.CPUMSPerUnit, res.CeilingLoop.Kind)
	}
	// Every commit of a node log carries at least one append, and a
	// workflow's commands cost some.
	if a, c := res.Extra["log_appends_per_commit"], res.Extra["log_commits_per_workflow"]; !(a >= 1) || !(c > 0) {
		t.Errorf("log_appends_per_commit %v, log_commits_per_workflow %v: want at least 1, and some", a, c)
	}
	checkResult(t, res)
}

// groupcost on a sharded cluster counts every node's replica of each shard
// and of the metadata group, and polls every node per claim.
func TestGroupCostShardedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a sharded cluster idles for seconds")
	}
	res, err := Run(Options{Workload: "groupcost", Mode: ModeCluster, Shards: 4, N: 40, Dir: t.TempDir(), CeilingDuration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Extra["group_replicas"]; got != 15 {
		t.Errorf("group replicas %v, want 15 (3 nodes × (4 shards + the metadata group))", got)
	}
	if got := res.Extra["nodes_polled_per_claim"]; got != 3 {
		t.Errorf("nodes polled per claim %v, want 3", got)
	}
	for _, k := range []string{"cut_poll_cpu_ms", "empty_claim_cpu_ms", "idle_cpu_cores_per_group_replica"} {
		if v, ok := res.Extra[k]; !ok || v <= 0 {
			t.Errorf("%s = %v (present %v), want a positive figure", k, v, ok)
		}
	}
	checkResult(t, res)
}

// children on a sharded cluster: half the children land on another shard
// and are delivered through the outbox; every parent gets its child's end.
func TestChildrenShardedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a sharded cluster runs twice N parents")
	}
	res, err := Run(Options{Workload: "children", Mode: ModeCluster, Shards: 4, N: 20, Dir: t.TempDir(), CeilingDuration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Extra["children_across_shards"]; got != 10 {
		t.Errorf("children across shards %v, want 10 of 20", got)
	}
	if res.Extra["within_shard_workflows_per_s"] <= 0 || res.Extra["half_across_over_within"] <= 0 {
		t.Errorf("extras %v: want the within-shard figures", res.Extra)
	}
	checkResult(t, res)
}
