package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The steps' recording (docs/state-machines.md §3). No label names a step
// or a run: their number is unbounded. States are the seed's names
// ("RUNNING"); capabilities are those a step requires, comma-joined in the
// order the workflow code gives them, or "none".

// StepTransitions records n transitions of steps from one state to
// another.
func (m *Metrics) StepTransitions(from, to string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.stepTransitions.WithLabelValues(from, to).Add(float64(n))
}

// StepsAdd moves the count of steps in state by delta.
func (m *Metrics) StepsAdd(state string, delta float64) {
	if m == nil || delta == 0 {
		return
	}
	m.stepsByState.WithLabelValues(state).Add(delta)
}

// StepTransitionsCounter returns the series StepTransitions counts for
// from and to (see CommandSeries).
func (m *Metrics) StepTransitionsCounter(from, to string) prometheus.Counter {
	if m == nil {
		return nil
	}
	return m.stepTransitions.WithLabelValues(from, to)
}

// StepsGauge returns the series StepsAdd moves for state (see
// CommandSeries).
func (m *Metrics) StepsGauge(state string) prometheus.Gauge {
	if m == nil {
		return nil
	}
	return m.stepsByState.WithLabelValues(state)
}

// StepDone records a step that ended ("succeeded" or "failed") took after
// its workflow issued it.
func (m *Metrics) StepDone(capability, status string, took time.Duration) {
	if m == nil {
		return
	}
	m.stepSeconds.WithLabelValues(capabilityLabel(capability), status).Observe(max(took, 0).Seconds())
}

// StepRetry records a try of a step that failed and will be retried.
func (m *Metrics) StepRetry(capability string) {
	if m == nil {
		return
	}
	m.stepRetries.WithLabelValues(capabilityLabel(capability)).Inc()
}

func capabilityLabel(c string) string {
	if c == "" {
		return "none"
	}
	return c
}
