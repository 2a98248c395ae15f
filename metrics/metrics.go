package metrics

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds heddle's metric families. Its methods are safe for
// concurrent use and do nothing on a nil *Metrics.
type Metrics struct {
	handler http.Handler

	counters   map[string]*prometheus.CounterVec
	gauges     map[string]*prometheus.GaugeVec
	histograms map[string]*prometheus.HistogramVec

	// The engine's families, looked up once.
	commands, staleAttempts, reclaims, commits, syncs *prometheus.CounterVec
	applySeconds, commitSeconds, batchCommands        *prometheus.HistogramVec
	timerLateness, schedulerLag                       *prometheus.HistogramVec
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
	if reg == nil {
		return nil, errors.New("metrics: New needs a prometheus.Registerer")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	m := &Metrics{counters: map[string]*prometheus.CounterVec{}, gauges: map[string]*prometheus.GaugeVec{},
		histograms: map[string]*prometheus.HistogramVec{}, jobCounts: newJobCounts(o.MaxQueues)}
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
	}
	cs = append(cs, raft, m.jobCounts)
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

// NewRegistry returns a fresh registry holding heddle's families and the Go
// runtime's and the process's collectors, and the Metrics recording into
// it: what a heddle server serves on /metrics.
func NewRegistry() (*Metrics, *prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, err
	}
	m, err := New(reg)
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
