package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A sharded node's Metrics registers its own families (HTTP, the worker's,
// Raft's process-wide timings) without a shard label, and each shard's
// Metrics registers the engine's and the Raft group's with shard=k: the
// series of two shards are told apart, and no engine series is left
// without its shard.
func TestShardMetricsCarryTheirShard(t *testing.T) {
	reg := prometheus.NewRegistry()
	node, err := NewWithOptions(reg, Options{Sharded: true})
	if err != nil {
		t.Fatal(err)
	}
	s0, err := node.ForShard("0")
	if err != nil {
		t.Fatal(err)
	}
	s1, err := node.ForShard("1")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := node.ForShard("0"); err != nil || again != s0 {
		t.Fatalf("ForShard(0) again: %p, %v; want the same Metrics %p", again, err, s0)
	}
	s0.Command("CreateJob", "ok", time.Millisecond)
	s1.Command("CreateJob", "ok", time.Millisecond)
	s1.Command("CreateJob", "ok", time.Millisecond)
	s1.SetRaftSource(func() RaftStats { return RaftStats{IsLeader: true, Term: 3} })
	node.HTTPDone("GET /v1/jobs", 200, time.Millisecond)

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	shardOf := func(m *dto.Metric) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == "shard" {
				return l.GetValue()
			}
		}
		return ""
	}
	commands := map[string]float64{}
	var sawHTTP, sawLeader bool
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch name := f.GetName(); {
			case name == EngineCommands:
				commands[shardOf(m)] += m.GetCounter().GetValue()
			case name == RaftIsLeader:
				sawLeader = shardOf(m) == "1" && m.GetGauge().GetValue() == 1
			case name == HTTPRequests:
				sawHTTP = true
				if shardOf(m) != "" {
					t.Errorf("%s has a shard label", name)
				}
			case strings.HasPrefix(name, "heddle_engine_") && shardOf(m) == "":
				t.Errorf("%s has a series without its shard", name)
			}
		}
	}
	if commands["0"] != 1 || commands["1"] != 2 || commands[""] != 0 {
		t.Errorf("commands by shard %v, want 1 on shard 0, 2 on shard 1, none unlabelled", commands)
	}
	if !sawHTTP || !sawLeader {
		t.Errorf("HTTP series %v, shard 1's leader gauge %v: want both", sawHTTP, sawLeader)
	}

	// Only a sharded node's Metrics makes shards' Metrics.
	plain, err := New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.ForShard("0"); err == nil {
		t.Error("ForShard on the Metrics of one engine made a shard's")
	}
}
