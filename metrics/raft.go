package metrics

import (
	"strings"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// RaftStats is a Raft node's state at one moment, read at scrape time.
type RaftStats struct {
	IsLeader     bool
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastIndex    uint64
	// LogEntries is how many entries the node's log holds.
	LogEntries uint64
	// SnapshotBytes is the size of the newest snapshot, 0 when none.
	SnapshotBytes int64
	// LastContact is the time since the follower last heard from the
	// leader: 0 on the leader, negative when it never did.
	LastContact time.Duration
}

// SetRaftSource makes the Raft gauges read src at every scrape (a node
// sets it when it opens, and clears it with nil when it closes). Without
// a source those gauges are not exported.
func (m *Metrics) SetRaftSource(src func() RaftStats) {
	if m == nil {
		return
	}
	if src == nil {
		m.raftSource.Store(nil)
		return
	}
	m.raftSource.Store(&src)
}

// LeaderChange records a change of leader the node observed.
func (m *Metrics) LeaderChange() {
	if m == nil {
		return
	}
	m.leaderChanges.WithLabelValues().Inc()
}

// raftCollector exports the Raft gauges from the node's state at scrape
// time: they are the node's own numbers, never worth keeping up to date
// between scrapes.
type raftCollector struct {
	m     *Metrics
	descs map[string]*prometheus.Desc
}

var raftGauges = []string{RaftIsLeader, RaftTerm, RaftCommitIndex, RaftAppliedIndex, RaftLastIndex,
	RaftLogEntries, RaftSnapshotBytes, RaftLastContact}

func newRaftCollector(m *Metrics) *raftCollector {
	c := &raftCollector{m: m, descs: map[string]*prometheus.Desc{}}
	for _, f := range families {
		for _, name := range raftGauges {
			if f.Name == name {
				c.descs[name] = prometheus.NewDesc(name, f.Help, nil, nil)
			}
		}
	}
	return c
}

func (c *raftCollector) owns(name string) bool { return c.descs[name] != nil }

// Describe implements prometheus.Collector.
func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, name := range raftGauges {
		ch <- c.descs[name]
	}
}

// Collect implements prometheus.Collector.
func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.raftSource.Load()
	if src == nil {
		return
	}
	st := (*src)()
	leader := 0.0
	if st.IsLeader {
		leader = 1
	}
	contact := st.LastContact.Seconds()
	if st.LastContact < 0 {
		contact = -1
	}
	for name, v := range map[string]float64{
		RaftIsLeader: leader, RaftTerm: float64(st.Term), RaftCommitIndex: float64(st.CommitIndex),
		RaftAppliedIndex: float64(st.AppliedIndex), RaftLastIndex: float64(st.LastIndex),
		RaftLogEntries: float64(st.LogEntries), RaftSnapshotBytes: float64(st.SnapshotBytes), RaftLastContact: contact,
	} {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v)
	}
}

// hashicorp/raft reports its timings and events through go-metrics'
// process-wide registry. The bridge below is that registry's sink; it
// passes on the keys listed here (with "raft." cut off), and drops the rest:
// the gauges (this package reads them from the node itself), and the keys
// that carry a peer's id in their name, which would make a series per peer.
var (
	raftBridgedOps = map[string]bool{
		"commitTime": true, "leader.dispatchLog": true, "leader.lastContact": true,
		"fsm.apply": true, "fsm.applyBatch": true, "fsm.enqueue": true, "fsm.snapshot": true, "fsm.restore": true,
		"snapshot.create": true, "snapshot.persist": true, "snapshot.takeSnapshot": true,
		"rpc.appendEntries": true, "rpc.appendEntries.storeLogs": true, "rpc.appendEntries.processLogs": true,
		"rpc.requestVote": true, "rpc.installSnapshot": true, "rpc.processHeartbeat": true,
		"replication.appendEntries.rpc": true, "replication.heartbeat": true, "replication.installSnapshot": true,
		"compactLogs": true, "removeOldLogs": true, "candidate.electSelf": true,
	}
	raftBridgedEvents = map[string]bool{
		"apply": true, "barrier": true, "restore": true, "verify_leader": true,
		"state.leader": true, "state.follower": true, "state.candidate": true,
		"transition.heartbeat_timeout": true, "transition.leader_lease_timeout": true,
	}
)

// bridge is the go-metrics sink every Metrics that bridges Raft shares.
// go-metrics has one registry per process, so when several nodes with
// metrics run in one process, Raft's own numbers go to the first of them
// still open.
var bridge struct {
	once    sync.Once
	mu      sync.Mutex
	targets []*Metrics
}

// BridgeRaft makes hashicorp/raft's go-metrics timings and events
// (heddle_raft_op_seconds, heddle_raft_events_total) go to m, until the
// returned release is called. It installs a sink as go-metrics' global
// registry the first time it is called in the process, replacing any
// other: a program with its own go-metrics sink should not enable it.
func (m *Metrics) BridgeRaft() (release func()) {
	// A shard's Metrics registers no family the bridge records: its
	// node's Metrics bridges Raft for the whole process.
	if m == nil || m.scope == scopeShard {
		return func() {}
	}
	bridge.once.Do(func() {
		cfg := gometrics.DefaultConfig("")
		cfg.EnableHostname, cfg.EnableHostnameLabel, cfg.EnableRuntimeMetrics = false, false, false
		cfg.HostName = ""
		// NewGlobal fails only for sink URLs and filters; this config has
		// neither.
		_, _ = gometrics.NewGlobal(cfg, raftSink{})
	})
	bridge.mu.Lock()
	bridge.targets = append(bridge.targets, m)
	bridge.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			bridge.mu.Lock()
			defer bridge.mu.Unlock()
			for i, t := range bridge.targets {
				if t == m {
					bridge.targets = append(bridge.targets[:i:i], bridge.targets[i+1:]...)
					break
				}
			}
		})
	}
}

func bridgeTarget() *Metrics {
	bridge.mu.Lock()
	defer bridge.mu.Unlock()
	if len(bridge.targets) == 0 {
		return nil
	}
	return bridge.targets[0]
}

// raftSink implements go-metrics' MetricSink.
type raftSink struct{}

// raftKey returns the key without its "raft." prefix, or "" for a key
// that is not Raft's.
func raftKey(key []string) string {
	if len(key) < 2 || key[0] != "raft" {
		return ""
	}
	return strings.Join(key[1:], ".")
}

func (raftSink) SetGauge([]string, float32)                              {}
func (raftSink) SetGaugeWithLabels([]string, float32, []gometrics.Label) {}
func (raftSink) EmitKey([]string, float32)                               {}
func (s raftSink) IncrCounter(key []string, val float32)                 { s.incr(key, val) }
func (s raftSink) IncrCounterWithLabels(key []string, val float32, _ []gometrics.Label) {
	s.incr(key, val)
}
func (s raftSink) AddSample(key []string, val float32) { s.sample(key, val) }
func (s raftSink) AddSampleWithLabels(key []string, val float32, _ []gometrics.Label) {
	s.sample(key, val)
}

func (raftSink) incr(key []string, val float32) {
	k := raftKey(key)
	if !raftBridgedEvents[k] {
		return
	}
	if m := bridgeTarget(); m != nil {
		m.raftEvents.WithLabelValues(k).Add(float64(val))
	}
}

// sample takes a timing in milliseconds, go-metrics' default granularity.
func (raftSink) sample(key []string, ms float32) {
	k := raftKey(key)
	if !raftBridgedOps[k] {
		return
	}
	if m := bridgeTarget(); m != nil {
		m.raftOps.WithLabelValues(k).Observe(float64(ms) / 1000)
	}
}
