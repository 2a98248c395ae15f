package metrics

import "time"

// The worker's recording. workflowType and activityType are registered
// names (the worker passes "unregistered" for any other), so they stay
// bounded by the code.

// Turn records one workflow turn of queue and how long it took.
func (m *Metrics) Turn(queue, workflowType string, took time.Duration) {
	if m == nil {
		return
	}
	m.turnSeconds.WithLabelValues(queue, workflowType).Observe(took.Seconds())
}

// TurnError records a turn of queue that ended with an error in the worker.
func (m *Metrics) TurnError(queue string) {
	if m == nil {
		return
	}
	m.turnErrors.WithLabelValues(queue).Inc()
}

// Activity records one try of an activity: its outcome ("completed",
// "failed", "benign" for a failure the activity marked as expected,
// "timeout" or "canceled") and how long it took.
func (m *Metrics) Activity(queue, activityType, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.activities.WithLabelValues(queue, activityType, outcome).Inc()
	m.activitySeconds.WithLabelValues(queue, activityType).Observe(took.Seconds())
}

// CacheLookup records whether a turn of queue found its execution cached.
func (m *Metrics) CacheLookup(queue string, hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.cacheHits.WithLabelValues(queue).Inc()
	} else {
		m.cacheMisses.WithLabelValues(queue).Inc()
	}
}

// Replay records a turn of queue that replays a history of events events.
func (m *Metrics) Replay(queue string, events uint64) {
	if m == nil {
		return
	}
	m.replays.WithLabelValues(queue).Inc()
	m.replayedEvents.WithLabelValues(queue).Add(float64(events))
}

// Nondeterminism records a run of workflowType stopped by a mismatch
// between its code and its history.
func (m *Metrics) Nondeterminism(queue, workflowType string) {
	if m == nil {
		return
	}
	m.nondeterminism.WithLabelValues(queue, workflowType).Inc()
}
