package bench

import (
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 1) of sorted, by the
// nearest-rank method: the smallest sample that at least a fraction p of
// the samples do not exceed. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// Nearest rank is ceil(p*n); the small epsilon keeps 0.5*100 at rank 50
	// despite floating point.
	rank := int(p*float64(len(sorted)) - 1e-9)
	rank = min(max(rank, 0), len(sorted)-1)
	return sorted[rank]
}

// LatencyMS is the summary of a set of latencies, in milliseconds.
type LatencyMS struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Summarize sorts lat in place and returns its p50, p99 and maximum.
func Summarize(lat []time.Duration) LatencyMS {
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if len(lat) == 0 {
		return LatencyMS{}
	}
	return LatencyMS{P50: ms(Percentile(lat, 0.50)), P99: ms(Percentile(lat, 0.99)), Max: ms(lat[len(lat)-1])}
}
