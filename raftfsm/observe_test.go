package raftfsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// switchboard is the nodes' Raft dialer with a switch per node: a node cut
// off has its connections closed and can neither dial nor be dialled.
type switchboard struct {
	mu    sync.Mutex
	ids   map[string]string // Raft address -> node id
	cut   map[string]bool
	conns map[string][]net.Conn // node id -> connections it is an end of
}

func newSwitchboard() *switchboard {
	return &switchboard{ids: map[string]string{}, cut: map[string]bool{}, conns: map[string][]net.Conn{}}
}

// plug connects node cfg names to the switchboard.
func (sb *switchboard) plug(cfg *Config) {
	sb.mu.Lock()
	sb.ids[cfg.RaftAddr] = cfg.ID
	sb.mu.Unlock()
	cfg.Dial = sb.dialer(cfg.ID)
}

func (sb *switchboard) dialer(from string) func(string, time.Duration) (net.Conn, error) {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		sb.mu.Lock()
		to := sb.ids[addr]
		blocked := sb.cut[from] || sb.cut[to]
		sb.mu.Unlock()
		if blocked {
			return nil, errors.New("switchboard: the link is cut")
		}
		conn, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		sb.mu.Lock()
		sb.conns[from] = append(sb.conns[from], conn)
		sb.conns[to] = append(sb.conns[to], conn)
		sb.mu.Unlock()
		return conn, nil
	}
}

// cutOff isolates node id, or with on false reconnects it.
func (sb *switchboard) cutOff(id string, on bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.cut[id] = on
	if on {
		for _, c := range sb.conns[id] {
			_ = c.Close() // already closed by its other end, at worst
		}
		sb.conns[id] = nil
	}
}

// readyz asks a node's API for /readyz and returns the status code and the
// error name of a refusal.
func readyz(t *testing.T, url string) (int, string) {
	t.Helper()
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	err = cl.Ready(context.Background())
	var re *httpapi.RemoteError
	switch {
	case err == nil:
		return http.StatusOK, ""
	case errors.As(err, &re):
		return re.Status, re.Body.Name
	}
	t.Fatalf("/readyz did not answer: %v", err)
	return 0, ""
}

// A follower cut off from the leader stops being ready (503 not_ready on
// /readyz) while the others stay ready, and is ready again once it hears
// from a leader. /healthz answers throughout: the process is alive.
func TestReadyzFalseOnFollowerCutOff(t *testing.T) {
	sb := newSwitchboard()
	c := newTestCluster(t, 3, sb.plug)
	urls := map[string]string{}
	for id, n := range c.live() {
		api, err := httpapi.NewServer(httpapi.ServerConfig{Service: n.Engine(), Cluster: n, AuthToken: "secret"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		urls[id] = srv.URL
	}
	leader := c.leader().ID()
	var follower string
	for id := range c.live() {
		if id != leader {
			follower = id
			break
		}
	}
	for id, u := range urls {
		if code, name := readyz(t, u); code != http.StatusOK {
			t.Fatalf("%s before the cut: /readyz %d %s", id, code, name)
		}
	}

	sb.cutOff(follower, true)
	c.eventually(follower+" not ready", func() bool {
		code, name := readyz(t, urls[follower])
		return code == http.StatusServiceUnavailable && name == "not_ready"
	})
	if err := c.live()[follower].Ready(context.Background()); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Ready of the cut-off follower: %v", err)
	}
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{urls[follower]}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Live(context.Background()); err != nil {
		t.Fatalf("/healthz of the cut-off follower: %v", err)
	}
	// The two that still form a majority have a leader and stay ready.
	c.eventually("the majority ready", func() bool {
		for id, u := range urls {
			if id == follower {
				continue
			}
			if code, _ := readyz(t, u); code != http.StatusOK {
				return false
			}
		}
		return true
	})

	sb.cutOff(follower, false)
	c.eventually(follower+" ready again", func() bool {
		code, _ := readyz(t, urls[follower])
		return code == http.StatusOK
	})
}

// Each node exports its own Raft gauges and the engine's metrics, measured
// on every node as it applies the log.
func TestNodeMetrics(t *testing.T) {
	regs := map[string]*prometheus.Registry{}
	c := newTestCluster(t, 3, func(cfg *Config) {
		if regs[cfg.ID] == nil {
			reg := prometheus.NewRegistry()
			m, err := metrics.New(reg)
			if err != nil {
				t.Fatal(err)
			}
			regs[cfg.ID] = reg
			cfg.Metrics = m
		}
	})
	l := c.leader()
	for range 5 {
		if _, err := l.Engine().Create(context.Background(), engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitConverged()
	leaders := 0.0
	for id, reg := range regs {
		fs, err := metricstest.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		n := c.live()[id]
		leaders += fs.Value(metrics.RaftIsLeader)
		checks := []struct {
			what      string
			got, want float64
		}{
			{"open jobs", fs.Value(metrics.EngineJobs, "status", "Queued", "queue", "q"), 5},
			{"creates applied", fs.Value(metrics.EngineCommands, "kind", "CreateJob", "outcome", "ok"), 5},
			{"applied index", fs.Value(metrics.RaftAppliedIndex), float64(n.fsm.Applied())},
			{"term", fs.Value(metrics.RaftTerm), float64(n.raft.CurrentTerm())},
		}
		for _, ch := range checks {
			if ch.got != ch.want {
				t.Errorf("%s: %s %v, want %v", id, ch.what, ch.got, ch.want)
			}
		}
		if fs.Value(metrics.RaftLeaderChanges) < 1 || fs.Value(metrics.RaftLogEntries) < 1 || fs.Value(metrics.RaftCommitIndex) < 5 {
			t.Errorf("%s: leader changes %v, log entries %v, commit index %v", id, fs.Value(metrics.RaftLeaderChanges),
				fs.Value(metrics.RaftLogEntries), fs.Value(metrics.RaftCommitIndex))
		}
		if fs.Value(metrics.EngineSyncs) != 0 {
			t.Errorf("%s: %v syncs before any snapshot (the Raft log is the durable record)", id, fs.Value(metrics.EngineSyncs))
		}
	}
	if leaders != 1 {
		t.Errorf("%v nodes report being the leader, want 1", leaders)
	}
	// hashicorp/raft's own numbers reach the first node's registry.
	fs, err := metricstest.Gather(regs["n1"])
	if err != nil {
		t.Fatal(err)
	}
	if fs.Value(metrics.RaftEvents, "event", "apply") < 5 || fs.Value(metrics.RaftOpSeconds, "op", "commitTime") < 1 {
		t.Errorf("bridged from go-metrics: apply %v, commitTime samples %v",
			fs.Value(metrics.RaftEvents, "event", "apply"), fs.Value(metrics.RaftOpSeconds, "op", "commitTime"))
	}
}

// Every node of a cluster bounds the queue label of the job families as
// it applies the log: jobs on 60 queues leave at most MaxQueues+1 label
// values on each, every job still counted, and no open-job series for a
// named queue whose jobs all ended.
func TestNodeMetricsBoundTheQueues(t *testing.T) {
	const maxQueues, queues = 3, 60
	regs := map[string]*prometheus.Registry{}
	c := newTestCluster(t, 3, func(cfg *Config) {
		if regs[cfg.ID] == nil {
			reg := prometheus.NewRegistry()
			m, err := metrics.NewWithOptions(reg, metrics.Options{MaxQueues: maxQueues})
			if err != nil {
				t.Fatal(err)
			}
			regs[cfg.ID] = reg
			cfg.Metrics = m
		}
	})
	ctx := context.Background()
	l := c.leader()
	name := func(i int) string { return fmt.Sprintf("q%02d", i) }
	for i := range queues {
		if _, err := l.Engine().Create(ctx, engine.CreateJob{Type: "t", Queue: name(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < queues; i += 2 {
		jobs, err := l.Engine().Claim(ctx, engine.Claim{Queue: name(i), Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim on %s: %d jobs, %v", name(i), len(jobs), err)
		}
		if _, err := l.Engine().Complete(ctx, engine.Complete{LeaseRef: jobs[0].Lease()}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitConverged()
	for id, reg := range regs {
		fs, err := metricstest.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		labels := map[string]bool{}
		for _, fam := range []string{metrics.EngineJobs, metrics.EngineJobsClosed} {
			for _, q := range fs.LabelValues(fam, "queue") {
				labels[q] = true
			}
		}
		if len(labels) > maxQueues+1 {
			t.Errorf("%s: the job families carry %d queue labels, over %d: %v", id, len(labels), maxQueues+1, labels)
		}
		checks := []struct {
			what      string
			got, want float64
		}{
			{"open jobs", fs.Value(metrics.EngineJobs), queues / 2},
			{"closed jobs", fs.Value(metrics.EngineJobsClosed), queues / 2},
			{"series of q00, whose job completed", float64(fs.Series(metrics.EngineJobs, "queue", name(0))), 0},
			{"open jobs of q01", fs.Value(metrics.EngineJobs, "queue", name(1)), 1},
			{"open jobs counted as _other (all but q01's)", fs.Value(metrics.EngineJobs, "queue", metrics.OtherQueue), queues/2 - 1},
		}
		for _, ch := range checks {
			if ch.got != ch.want {
				t.Errorf("%s: %s %v, want %v", id, ch.what, ch.got, ch.want)
			}
		}
	}
}

// A snapshot restore replaces the open-job gauge with the snapshot's.
func TestRestoreRecountsOpenJobs(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	src := newTestFSM(t, storage.Options{NoSync: true})
	src.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(3, 1)...)})
	var snap bytes.Buffer
	if _, err := src.db.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	f := newTestFSM(t, storage.Options{NoSync: true})
	f.meter = embedded.NewMeter(m)
	other := &engine.CreateJob{Header: engine.Header{NowMS: 1000}, Type: "t", Queue: "other"}
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, other)})
	gauge := func(queue string) float64 {
		fs, err := metricstest.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		return fs.Value(metrics.EngineJobs, "status", "Queued", "queue", queue)
	}
	if gauge("other") != 1 || gauge("q") != 0 {
		t.Fatalf("before the restore: other %v, q %v", gauge("other"), gauge("q"))
	}
	if err := f.Restore(nopCloser{bytes.NewReader(snap.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if gauge("other") != 0 || gauge("q") != 3 {
		t.Fatalf("after the restore: other %v, q %v; want 0 and 3", gauge("other"), gauge("q"))
	}
}
