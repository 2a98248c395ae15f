package metrics

import (
	"bytes"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/internal/metricstest"
)

// describing is a Registerer that forwards to a registry and keeps the
// name of every metric the collectors registered on it describe.
type describing struct {
	*prometheus.Registry
	names map[string]bool
}

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		d.names[descName(desc)] = true
	}
	return d.Registry.Register(c)
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// descName reads a Desc's metric name from its description (a Desc has no
// accessor for it).
func descName(d *prometheus.Desc) string {
	m := fqName.FindStringSubmatch(d.String())
	if m == nil {
		return ""
	}
	return m[1]
}

// RegisteredNames returns the name of every metric New registers.
func registeredNames(t *testing.T) map[string]bool {
	t.Helper()
	d := &describing{Registry: prometheus.NewRegistry(), names: map[string]bool{}}
	if _, err := New(d); err != nil {
		t.Fatal(err)
	}
	return d.names
}

var (
	validName  = regexp.MustCompile(`^heddle_(engine|raft|worker|http)_[a-z_]+$`)
	validLabel = regexp.MustCompile(`^[a-z_]+$`)
)

// The table is the registry: every family is registered under its name,
// nothing else is, and the names follow Prometheus' conventions.
func TestFamiliesAreWhatIsRegistered(t *testing.T) {
	names := registeredNames(t)
	seen := map[string]bool{}
	for _, f := range Families() {
		switch {
		case seen[f.Name]:
			t.Errorf("%s is listed twice", f.Name)
		case !names[f.Name]:
			t.Errorf("%s is listed but not registered", f.Name)
		case !validName.MatchString(f.Name):
			t.Errorf("%s is not named heddle_<part>_<what>", f.Name)
		case f.Type == "counter" && !strings.HasSuffix(f.Name, "_total"):
			t.Errorf("counter %s does not end in _total", f.Name)
		case f.Type != "counter" && strings.HasSuffix(f.Name, "_total"):
			t.Errorf("%s %s ends in _total", f.Type, f.Name)
		case f.Type == "histogram" && len(f.buckets) == 0:
			t.Errorf("histogram %s has no buckets", f.Name)
		case f.Help == "" || !strings.HasSuffix(f.Help, "."):
			t.Errorf("%s: help %q is not a sentence", f.Name, f.Help)
		}
		for _, l := range f.Labels {
			if !validLabel.MatchString(l) || l == "job" || l == "workflow_id" || l == "step" || l == "run_id" {
				t.Errorf("%s: label %q is not a bounded, snake_case label", f.Name, l)
			}
		}
		seen[f.Name] = true
	}
	for n := range names {
		if !seen[n] {
			t.Errorf("%s is registered but not in the table (and so not in the docs)", n)
		}
	}
}

func TestNewRefusesNilAndDuplicates(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil {
		t.Fatal("a second Metrics on the same registry was accepted")
	}
	// Several nodes in one process share a registry under a node label.
	if _, err := New(prometheus.WrapRegistererWith(prometheus.Labels{"node": "n2"}, prometheus.NewRegistry())); err != nil {
		t.Fatal(err)
	}
}

// Every method of a nil Metrics does nothing, so that components hold a
// nil *Metrics when none was configured.
func TestNilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	m.Command("CreateJob", "ok", time.Millisecond)
	m.Commit(3, time.Millisecond, true)
	m.Sync()
	m.JobsAdd("Queued", "q", 1)
	m.JobClosed("Completed", "q")
	m.Reclaims(2)
	m.StaleAttempt("Complete")
	m.TimerLateness(time.Second)
	m.SchedulerLag("timers", time.Second)
	m.OutboxPending("1", 3)
	m.OutboxAcknowledged("1")
	m.LeaderChange()
	m.SetRaftSource(func() RaftStats { return RaftStats{} })
	m.BridgeRaft()()
	m.Turn("q", "W", time.Second)
	m.TurnError("q")
	m.Activity("q", "A", "completed", time.Second)
	m.CacheLookup("q", true)
	m.Replay("q", 10)
	m.Nondeterminism("q", "W")
	m.HTTPStarted()
	m.HTTPDone("GET /healthz", 200, time.Millisecond)
	if m.Handler() != nil {
		t.Fatal("a nil Metrics has a handler")
	}
}

// What the handler serves parses with the Prometheus text parser and holds
// what was recorded.
func TestExpositionParses(t *testing.T) {
	m, _, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m.Command("CreateJob", "ok", 40*time.Microsecond)
	m.JobsAdd("Queued", "orders", 3)
	m.JobsAdd("Queued", "orders", -1)
	m.Activity("orders", "Charge", "failed", 20*time.Millisecond)
	m.HTTPStarted()
	m.HTTPDone("POST /v1/jobs", 200, 3*time.Millisecond)
	m.SetRaftSource(func() RaftStats {
		return RaftStats{IsLeader: true, Term: 4, CommitIndex: 90, AppliedIndex: 88, LastIndex: 91, LogEntries: 40, SnapshotBytes: 1 << 20}
	})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	fs, err := metricstest.Scrape(srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{EngineCommands, []string{"kind", "CreateJob", "outcome", "ok"}, 1},
		{EngineApplySeconds, []string{"kind", "CreateJob"}, 1},
		{EngineJobs, []string{"status", "Queued", "queue", "orders"}, 2},
		{EngineSyncs, nil, 0},
		{WorkerActivities, []string{"queue", "orders", "activity_type", "Charge", "outcome", "failed"}, 1},
		{HTTPRequests, []string{"route", "POST /v1/jobs", "code", "200"}, 1},
		{HTTPInFlight, nil, 0},
		{RaftIsLeader, nil, 1},
		{RaftTerm, nil, 4},
		{RaftAppliedIndex, nil, 88},
		{RaftLogEntries, nil, 40},
		{RaftSnapshotBytes, nil, 1 << 20},
		{RaftLastContact, nil, 0},
	}
	for _, c := range checks {
		if got := fs.Value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{EngineSyncs, EngineCommits, HTTPInFlight, "go_goroutines", "process_cpu_seconds_total"} {
		if fs[name] == nil {
			t.Errorf("%s is not exported before anything happened", name)
		}
	}
	// Without a source the Raft gauges are left out (an embedded engine).
	m.SetRaftSource(nil)
	if fs, err = metricstest.Scrape(srv.Client(), srv.URL); err != nil || fs[RaftTerm] != nil {
		t.Fatalf("without a Raft source: %v, %s present: %v", err, RaftTerm, fs[RaftTerm] != nil)
	}
}

// hashicorp/raft's go-metrics reach the first Metrics that bridges them,
// the allowed keys only, and none after it let go.
func TestRaftBridge(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	release := m.BridgeRaft()
	s := raftSink{}
	s.AddSample([]string{"raft", "commitTime"}, 12.5)
	s.AddSample([]string{"raft", "replication", "appendEntries", "rpc", "peer-7"}, 3) // a peer's id: dropped
	s.IncrCounter([]string{"raft", "state", "leader"}, 1)
	s.IncrCounter([]string{"consul", "rpc"}, 1) // not Raft's
	s.SetGauge([]string{"raft", "peers"}, 2)    // read from the node instead
	release()
	s.IncrCounter([]string{"raft", "state", "leader"}, 1) // nobody bridges now
	fs, err := metricstest.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Value(RaftOpSeconds, "op", "commitTime"); got != 1 {
		t.Errorf("commitTime samples: %v, want 1", got)
	}
	if got := fs.Sum(RaftOpSeconds, "op", "commitTime"); got != 0.0125 {
		t.Errorf("commitTime: %v s, want 0.0125", got)
	}
	ops := fs.LabelValues(RaftOpSeconds, "op")
	events := fs.LabelValues(RaftEvents, "event")
	sort.Strings(events)
	if len(ops) != 1 || strings.Join(events, ",") != "state.leader" || fs.Value(RaftEvents, "event", "state.leader") != 1 {
		t.Errorf("bridged ops %v and events %v (state.leader %v): want commitTime and state.leader once", ops, events,
			fs.Value(RaftEvents, "event", "state.leader"))
	}
}

// The exposition of a fresh registry, before anything happened, is text a
// scraper accepts.
func TestFreshExpositionParses(t *testing.T) {
	m, err := New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	fs, err := metricstest.Parse(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("a fresh exposition does not parse: %v", err)
	}
	if fs[EngineCommits] == nil || fs[WorkerTurnSeconds] != nil {
		t.Fatalf("a fresh exposition shows %s: %v, %s: %v; want the unlabelled families only",
			EngineCommits, fs[EngineCommits] != nil, WorkerTurnSeconds, fs[WorkerTurnSeconds] != nil)
	}
}
