package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The engine's recording, called by its log, the Raft state machine and
// the scheduler around engine.Apply (never inside it: Apply stays pure).

// Command records one applied command: its kind, its outcome ("ok" or the
// name of the error that refused it) and how long Apply took.
func (m *Metrics) Command(kind, outcome string, apply time.Duration) {
	if m == nil {
		return
	}
	m.commands.WithLabelValues(kind, outcome).Inc()
	m.applySeconds.WithLabelValues(kind).Observe(apply.Seconds())
}

// Commit records one group commit of commands that wrote something; synced
// says whether it synced the database to disk.
func (m *Metrics) Commit(commands int, took time.Duration, synced bool) {
	if m == nil {
		return
	}
	m.commitsC.Inc()
	m.commitSecondsO.Observe(took.Seconds())
	m.batchCommandsO.Observe(float64(commands))
	if synced {
		m.syncsC.Inc()
	}
}

// Sync records a sync of the database outside a commit (a Raft node's
// before a snapshot).
func (m *Metrics) Sync() {
	if m == nil {
		return
	}
	m.syncsC.Inc()
}

// Reclaims records n jobs taken back after their lease expired.
func (m *Metrics) Reclaims(n int) {
	if m == nil || n == 0 {
		return
	}
	m.reclaimsC.Add(float64(n))
}

// StaleAttempt records a fenced write of a command kind refused as stale.
func (m *Metrics) StaleAttempt(kind string) {
	if m == nil {
		return
	}
	m.staleAttempts.WithLabelValues(kind).Inc()
}

// TimerLateness records how long after its due time a timer fired.
func (m *Metrics) TimerLateness(late time.Duration) {
	if m == nil {
		return
	}
	m.timerLatenessO.Observe(late.Seconds())
}

// SchedulerLag records how long after the earliest due time the scheduler
// proposed a sweep ("timers", "leases" or "delayed").
func (m *Metrics) SchedulerLag(sweep string, lag time.Duration) {
	if m == nil {
		return
	}
	m.schedulerLag.WithLabelValues(sweep).Observe(lag.Seconds())
}

// OutboxPending sets how many outbox entries of this shard for shard
// target are not yet acknowledged.
func (m *Metrics) OutboxPending(target string, n int) {
	if m == nil {
		return
	}
	m.outboxPending.WithLabelValues(target).Set(float64(n))
}

// OutboxAcknowledged counts an outbox entry of this shard for shard target
// that this node delivered and acknowledged.
func (m *Metrics) OutboxAcknowledged(target string) {
	if m == nil {
		return
	}
	m.outboxAcked.WithLabelValues(target).Inc()
}

// The series of one set of labels, for a caller that records into the
// same ones again and again (the engine's Meter, once per command): it
// resolves them once and records with no label lookup. On a nil *Metrics
// they are nil.

// CommandSeries returns the series Command records into for a command of
// kind applied without error: its count and its apply time.
func (m *Metrics) CommandSeries(kind string) (ok prometheus.Counter, apply prometheus.Observer) {
	if m == nil {
		return nil, nil
	}
	return m.commands.WithLabelValues(kind, "ok"), m.applySeconds.WithLabelValues(kind)
}
