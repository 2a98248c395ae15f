package metrics

import "time"

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
	m.commits.WithLabelValues().Inc()
	m.commitSeconds.WithLabelValues().Observe(took.Seconds())
	m.batchCommands.WithLabelValues().Observe(float64(commands))
	if synced {
		m.syncs.WithLabelValues().Inc()
	}
}

// Sync records a sync of the database outside a commit (a Raft node's
// before a snapshot).
func (m *Metrics) Sync() {
	if m == nil {
		return
	}
	m.syncs.WithLabelValues().Inc()
}

// JobsAdd moves the count of open jobs in status on queue by delta.
func (m *Metrics) JobsAdd(status, queue string, delta float64) {
	if m == nil {
		return
	}
	m.jobs.WithLabelValues(status, queue).Add(delta)
}

// JobClosed records a job of queue that reached the terminal status.
func (m *Metrics) JobClosed(status, queue string) {
	if m == nil {
		return
	}
	m.jobsClosed.WithLabelValues(status, queue).Inc()
}

// Reclaims records n jobs taken back after their lease expired.
func (m *Metrics) Reclaims(n int) {
	if m == nil || n == 0 {
		return
	}
	m.reclaims.WithLabelValues().Add(float64(n))
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
	m.timerLateness.WithLabelValues().Observe(late.Seconds())
}

// SchedulerLag records how long after the earliest due time the scheduler
// proposed a sweep ("timers", "leases" or "delayed").
func (m *Metrics) SchedulerLag(sweep string, lag time.Duration) {
	if m == nil {
		return
	}
	m.schedulerLag.WithLabelValues(sweep).Observe(lag.Seconds())
}
