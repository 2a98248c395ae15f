package machine_test

import (
	"fmt"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// BenchmarkFireSchedules measures the FireSchedules sweeps over n schedules
// falling due together, each starting its run, applied in memory through
// the log (no sync); a sweep stops at its write budget, so a thousand take
// several. It reports the time per schedule fired.
func BenchmarkFireSchedules(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("schedules=%d", n), func(b *testing.B) {
			h := newHarness(b)
			h.now = schedT0
			for i := range n {
				h.must(&engine.CreateSchedule{ID: fmt.Sprintf("s%05d", i), Spec: everySpec(60_000), Action: testAction,
					Policy: engine.SchedulePolicy{Overlap: engine.OverlapAllowAll}})
			}
			next := (schedT0/60_000 + 1) * 60_000
			b.ResetTimer()
			for i := range b.N {
				h.now = next + int64(i)*60_000
				fired := 0
				for more := true; more; {
					res := h.must(&engine.FireSchedules{Max: n}).(*engine.SweepResult)
					fired, more = fired+len(res.Jobs), res.More
				}
				if fired != n {
					b.Fatalf("fired %d of %d", fired, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1000, "µs/schedule")
		})
	}
}
