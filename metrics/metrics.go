package metrics

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds heddle's metric families. Its methods are safe for
// concurrent use and do nothing on a nil *Metrics.
type Metrics struct {
	handler http.Handler
	// reg is the registerer New was given, scope which families this
	// Metrics registers on it, and opts its options.
	reg   prometheus.Registerer
	scope scope
	opts  Options
	// shards are the Metrics ForShard made, by shard name.
	shardsMu sync.Mutex
	shards   map[string]*Metrics

	counters   map[string]*prometheus.CounterVec
	gauges     map[string]*prometheus.GaugeVec
	histograms map[string]*prometheus.HistogramVec

	// The engine's families, looked up once.
	commands, staleAttempts, reclaims, commits, syncs *prometheus.CounterVec
	applySeconds, commitSeconds, batchCommands        *prometheus.HistogramVec
	timerLateness, schedulerLag                       *prometheus.HistogramVec
	outboxPending                                     *prometheus.GaugeVec
	outboxAcked                                       *prometheus.CounterVec
	// jobCounts holds the job families by status and queue.
	jobCounts *jobCounts
	// The series of the engine's families without labels, resolved once.
	commitsC, syncsC, reclaimsC                    prometheus.Counter
	commitSecondsO, batchCommandsO, timerLatenessO prometheus.Observer

	// The Raft node's.
	leaderChanges, raftEvents *prometheus.CounterVec
	raftOps                   *prometheus.HistogramVec
	raftSource                atomic.Pointer[func() RaftStats]

	// The worker's.
	turnSeconds, activitySeconds                            *prometheus.HistogramVec
	turnErrors, activities, cacheHits, cacheMisses, replays *prometheus.CounterVec
	replayedEvents, nondeterminism                          *prometheus.CounterVec

	// The steps'.
	stepTransitions, stepRetries *prometheus.CounterVec
	stepSeconds                  *prometheus.HistogramVec
	stepsByState                 *prometheus.GaugeVec

	// The HTTP API's.
	httpRequests *prometheus.CounterVec
	httpSeconds  *prometheus.HistogramVec
	httpInFlight *prometheus.GaugeVec
}

// New registers every family (see Families) on reg and returns the
// Metrics that records them, with the default Options. It fails when reg
// is nil or refuses a family (one of the same name is already registered:
// use one Metrics per registry).
func New(reg prometheus.Registerer) (*Metrics, error) {
	return NewWithOptions(reg, Options{})
}

// NewWithOptions is New with Options.
func NewWithOptions(reg prometheus.Registerer, o Options) (*Metrics, error) {
	sc := scopeAll
	if o.Sharded {
		sc = scopeNode
	}
	return newScoped(reg, o, sc)
}

// scope says which families a Metrics registers: every family (one
// engine or group), a sharded node's own (scopeNode), or one shard's
// (scopeShard). A Metrics builds every family either way, so that
// recording into one it does not register costs nothing and breaks
// nothing; only what it registers is exported.
type scope uint8

const (
	scopeAll scope = iota
	scopeNode
	scopeShard
)

// shardScoped reports whether the family name belongs to one shard: an
// engine's and its Raft group's, but for the two that hashicorp/raft
// reports for the whole process.
func shardScoped(name string) bool {
	switch {
	case name == RaftOpSeconds || name == RaftEvents:
		return false
	case strings.HasPrefix(name, "heddle_engine_"), strings.HasPrefix(name, "heddle_raft_"):
		return true
	}
	return false
}

// registers reports whether a Metrics of scope s registers family name.
func (s scope) registers(name string) bool {
	switch s {
	case scopeNode:
		return !shardScoped(name)
	case scopeShard:
		return shardScoped(name)
	}
	return true
}

func newScoped(reg prometheus.Registerer, o Options, sc scope) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: New needs a prometheus.Registerer")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	m := &Metrics{counters: map[string]*prometheus.CounterVec{}, gauges: map[string]*prometheus.GaugeVec{},
		histograms: map[string]*prometheus.HistogramVec{}, jobCounts: newJobCounts(o.MaxQueues),
		reg: reg, scope: sc, opts: o}
	raft := newRaftCollector(m)
	var cs []prometheus.Collector
	for _, f := range families {
		if raft.owns(f.Name) || m.jobCounts.owns(f.Name) {
			continue
		}
		switch f.Type {
		// Families without labels are shown from the start, at zero, so a
		// dashboard tells "nothing happened" from "not scraped".
		case "counter":
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.Name, Help: f.Help}, f.Labels)
			if len(f.Labels) == 0 {
				v.WithLabelValues()
			}
			m.counters[f.Name] = v
			cs = append(cs, v)
		case "gauge":
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name, Help: f.Help}, f.Labels)
			if len(f.Labels) == 0 {
				v.WithLabelValues()
			}
			m.gauges[f.Name] = v
			cs = append(cs, v)
		case "histogram":
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: f.Name, Help: f.Help, Buckets: f.buckets}, f.Labels)
			if len(f.Labels) == 0 {
				v.WithLabelValues()
			}
			m.histograms[f.Name] = v
			cs = append(cs, v)
		default:
			return nil, fmt.Errorf("metrics: family %s has unknown type %q", f.Name, f.Type)
		}
		if !sc.registers(f.Name) {
			cs = cs[:len(cs)-1] // built, not registered
		}
	}
	if sc != scopeNode {
		cs = append(cs, raft, m.jobCounts)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: registering: %w", err)
		}
	}
	m.bind()
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	}
	return m, nil
}

// ForShard returns the Metrics of shard name (its index in decimal) of a
// sharded node's Metrics (Options.Sharded): the engine's and the Raft
// group's families, registered on m's registerer with the label
// shard=name. It returns the same Metrics for the same name, so a shard
// closed and opened again on the node (a replica moved back) records into
// its series as before.
func (m *Metrics) ForShard(name string) (*Metrics, error) {
	if m == nil {
		return nil, nil
	}
	if m.scope != scopeNode {
		return nil, errors.New("metrics: ForShard needs the Metrics of a sharded node (Options.Sharded)")
	}
	m.shardsMu.Lock()
	defer m.shardsMu.Unlock()
	if s := m.shards[name]; s != nil {
		return s, nil
	}
	s, err := newScoped(prometheus.WrapRegistererWith(prometheus.Labels{"shard": name}, m.reg), m.opts, scopeShard)
	if err != nil {
		return nil, fmt.Errorf("metrics: shard %s: %w", name, err)
	}
	if m.shards == nil {
		m.shards = map[string]*Metrics{}
	}
	m.shards[name] = s
	return s, nil
}

// NewRegistry returns a fresh registry holding heddle's families and the Go
// runtime's and the process's collectors, and the Metrics recording into
// it: what a heddle server serves on /metrics.
func NewRegistry() (*Metrics, *prometheus.Registry, error) {
	return NewRegistryWithOptions(Options{})
}

// NewRegistryWithOptions is NewRegistry with Options.
func NewRegistryWithOptions(o Options) (*Metrics, *prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, err
	}
	m, err := NewWithOptions(reg, o)
	return m, reg, err
}

// Handler serves the registry New was given in the Prometheus exposition
// formats, or is nil when that registerer is not also a
// prometheus.Gatherer (serve the gatherer yourself then).
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return nil
	}
	return m.handler
}

// bind looks each family up once, so recording is one map access less.
func (m *Metrics) bind() {
	c, g, h := m.counters, m.gauges, m.histograms
	m.commands, m.staleAttempts = c[EngineCommands], c[EngineStaleAttempts]
	m.reclaims, m.commits, m.syncs = c[EngineReclaims], c[EngineCommits], c[EngineSyncs]
	m.applySeconds, m.commitSeconds, m.batchCommands = h[EngineApplySeconds], h[EngineCommitSeconds], h[EngineBatchCommands]
	m.timerLateness, m.schedulerLag = h[EngineTimerLateness], h[EngineSchedulerLag]
	m.outboxPending, m.outboxAcked = g[EngineOutboxPending], c[EngineOutboxAcked]
	m.leaderChanges, m.raftEvents, m.raftOps = c[RaftLeaderChanges], c[RaftEvents], h[RaftOpSeconds]
	m.turnSeconds, m.activitySeconds = h[WorkerTurnSeconds], h[WorkerActivitySecs]
	m.turnErrors, m.activities = c[WorkerTurnErrors], c[WorkerActivities]
	m.cacheHits, m.cacheMisses, m.replays = c[WorkerCacheHits], c[WorkerCacheMisses], c[WorkerReplays]
	m.replayedEvents, m.nondeterminism = c[WorkerReplayedEvents], c[WorkerNondeterminism]
	m.httpRequests, m.httpSeconds, m.httpInFlight = c[HTTPRequests], h[HTTPRequestSeconds], g[HTTPInFlight]
	m.stepTransitions, m.stepRetries = c[EngineStepTransitions], c[WorkerStepRetries]
	m.stepSeconds, m.stepsByState = h[WorkerStepSeconds], g[EngineStepsByState]
	m.commitsC, m.syncsC, m.reclaimsC = m.commits.WithLabelValues(), m.syncs.WithLabelValues(), m.reclaims.WithLabelValues()
	m.commitSecondsO, m.batchCommandsO = m.commitSeconds.WithLabelValues(), m.batchCommands.WithLabelValues()
	m.timerLatenessO = m.timerLateness.WithLabelValues()
}
