package metrics

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxQueues is how many task queues the engine's job families label
// by name when Options.MaxQueues is 0.
const DefaultMaxQueues = 100

// OtherQueue is the queue label of the engine's job families for the jobs
// of every task queue beyond the first Options.MaxQueues (a queue that is
// itself named "_other" shares it).
const OtherQueue = "_other"

// Options tunes a Metrics. The zero value is valid: each field's zero
// takes the default its comment gives.
type Options struct {
	// MaxQueues bounds the values of the queue label of the engine's job
	// families (heddle_engine_jobs and heddle_engine_jobs_closed_total),
	// which clients choose: the first MaxQueues task queues this Metrics
	// counts a job of keep their own label for its life, and the jobs of
	// every other queue are counted under queue="_other" (OtherQueue).
	// 0 means DefaultMaxQueues; it must not be negative.
	MaxQueues int
	// Sharded is for a node of a sharded cluster (docs/sharding.md): the
	// families of one engine and its Raft group (heddle_engine_*, and
	// heddle_raft_* but for heddle_raft_op_seconds and
	// heddle_raft_events_total, which hashicorp/raft reports for the whole
	// process) are not registered here but by each shard's Metrics, which
	// ForShard makes, with a shard label. False (the zero value): one
	// engine or one Raft group, no shard label.
	Sharded bool
}

// Validate reports an invalid field.
func (o Options) Validate() error {
	if o.MaxQueues < 0 {
		return fmt.Errorf("metrics: Options.MaxQueues %d is negative", o.MaxQueues)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.MaxQueues == 0 {
		o.MaxQueues = DefaultMaxQueues
	}
	return o
}

// JobChange is a change of the engine's job counts of one status and task
// queue: Open moves the count of open jobs (heddle_engine_jobs, up or
// down), Closed adds jobs that reached that terminal status
// (heddle_engine_jobs_closed_total).
type JobChange struct {
	Status string
	Queue  string
	Open   int64
	Closed int64
}

// JobsChanged records changes of the engine's job counts, all at once (the
// engine's Meter hands over what one commit changed).
func (m *Metrics) JobsChanged(cs []JobChange) {
	if m == nil || len(cs) == 0 {
		return
	}
	j := m.jobCounts
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cs {
		j.add(c)
	}
}

// JobsAdd moves the count of open jobs in status on queue by delta.
func (m *Metrics) JobsAdd(status, queue string, delta float64) {
	if m == nil {
		return
	}
	m.jobCounts.mu.Lock()
	defer m.jobCounts.mu.Unlock()
	m.jobCounts.add(JobChange{Status: status, Queue: queue, Open: int64(delta)})
}

// JobClosed records a job of queue that reached the terminal status.
func (m *Metrics) JobClosed(status, queue string) {
	if m == nil {
		return
	}
	m.jobCounts.mu.Lock()
	defer m.jobCounts.mu.Unlock()
	m.jobCounts.add(JobChange{Status: status, Queue: queue, Closed: 1})
}

// jobCounts holds and exports the engine's job families by status and
// task queue. They are counted here rather than in Prometheus vectors so
// that their series stay bounded whatever queue names clients send: the
// queue label takes at most maxQueues names and OtherQueue, and a queue's
// open-job series are exported only while it has an open job (a queue with
// nothing left has none). So the two families hold at most
// (maxQueues+1) × (the engine's statuses) series.
type jobCounts struct {
	openDesc, closedDesc *prometheus.Desc
	maxQueues            int

	mu sync.Mutex
	// named are the queues labelled by their own name: the first
	// maxQueues counted, for the life of the Metrics, so that a queue's
	// closed-job counter never moves to another label.
	named  map[string]struct{}
	open   map[jobKey]int64  // open jobs by status and label
	queued map[string]int64  // open jobs by label, every status together
	closed map[jobKey]uint64 // closed jobs by terminal status and label
}

type jobKey struct{ status, queue string }

func newJobCounts(maxQueues int) *jobCounts {
	c := &jobCounts{maxQueues: maxQueues, named: map[string]struct{}{}, open: map[jobKey]int64{},
		queued: map[string]int64{}, closed: map[jobKey]uint64{}}
	for _, f := range families {
		switch f.Name {
		case EngineJobs:
			c.openDesc = prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		case EngineJobsClosed:
			c.closedDesc = prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		}
	}
	return c
}

func (c *jobCounts) owns(name string) bool { return name == EngineJobs || name == EngineJobsClosed }

// label returns the queue label of queue's jobs. c.mu must be held.
func (c *jobCounts) label(queue string) string {
	if _, ok := c.named[queue]; ok {
		return queue
	}
	if !utf8.ValidString(queue) {
		// A label value must be UTF-8 (Prometheus refuses it otherwise),
		// and a queue name is whatever bytes a client sent.
		queue = strings.ToValidUTF8(queue, "\uFFFD")
		if _, ok := c.named[queue]; ok {
			return queue
		}
	}
	if len(c.named) < c.maxQueues {
		c.named[queue] = struct{}{}
		return queue
	}
	return OtherQueue
}

// add records one change. c.mu must be held.
func (c *jobCounts) add(ch JobChange) {
	if ch.Open == 0 && ch.Closed == 0 {
		return
	}
	q := c.label(ch.Queue)
	k := jobKey{ch.Status, q}
	if ch.Open != 0 {
		c.open[k] += ch.Open
		c.queued[q] += ch.Open
	}
	if ch.Closed > 0 {
		c.closed[k] += uint64(ch.Closed)
	}
}

// Describe implements prometheus.Collector.
func (c *jobCounts) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.openDesc
	ch <- c.closedDesc
}

// Collect implements prometheus.Collector. It forgets the open-job counts
// of the queues with nothing left, so their series go.
func (c *jobCounts) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	out := make([]prometheus.Metric, 0, len(c.open)+len(c.closed))
	emit := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, k jobKey) {
		// The labels are UTF-8 (label makes sure), so this cannot fail.
		if m, err := prometheus.NewConstMetric(desc, t, v, k.status, k.queue); err == nil {
			out = append(out, m)
		}
	}
	for k, n := range c.open {
		if c.queued[k.queue] == 0 {
			delete(c.open, k)
			continue
		}
		emit(c.openDesc, prometheus.GaugeValue, float64(n), k)
	}
	maps.DeleteFunc(c.queued, func(_ string, n int64) bool { return n == 0 })
	for k, n := range c.closed {
		emit(c.closedDesc, prometheus.CounterValue, float64(n), k)
	}
	c.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}
