package metrics

import (
	"strconv"
	"time"
)

// HTTPStarted records a request being answered; call HTTPDone when it is.
func (m *Metrics) HTTPStarted() {
	if m == nil {
		return
	}
	m.httpInFlight.WithLabelValues().Inc()
}

// HTTPDone records an answered request: its route pattern (never the raw
// path, whose ids would make a series each), status code and duration.
func (m *Metrics) HTTPDone(route string, code int, took time.Duration) {
	if m == nil {
		return
	}
	m.httpInFlight.WithLabelValues().Dec()
	m.httpRequests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.httpSeconds.WithLabelValues(route).Observe(took.Seconds())
}
