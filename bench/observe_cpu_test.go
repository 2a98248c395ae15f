//go:build unix

package bench

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkObservedSeq3 runs b.N seq3 workflows on a fresh embedded
// engine with nothing observed, with metrics, and with metrics and
// tracing, as the observe workload does, and reports the CPU time the
// whole process spent a workflow (cpu-µs/wf: user and system, every
// goroutine's, Badger's included) beside the wall time. Throughput on a
// shared machine moves with its load; the CPU a workflow costs moves far
// less, so this is the steadier measure of what observing costs. Each
// run of it measures the three settings one after another; run it several
// times and compare the medians (-count repeats each setting in a row, so
// a machine slowing down would favour one setting).
//
//	for i in 1 2 3 4 5 6; do go test ./bench -run X -bench ObservedSeq3 -benchtime 3000x; done
func BenchmarkObservedSeq3(b *testing.B) {
	for _, s := range observeSettings {
		b.Run(s.name, func(b *testing.B) {
			r := &runner{opts: Options{Mode: ModeEmbedded}, root: b.TempDir(), n: b.N,
				res: &Result{Extra: map[string]float64{}}}
			obs := observation{name: s.name, metrics: s.metrics, regs: &registries{}}
			var tp *sdktrace.TracerProvider
			if s.tracing {
				tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				obs.tracer = tp
			}
			before := cpuTime(b)
			b.ResetTimer()
			_, err := r.observedSeq3(obs, fmt.Sprintf("%s, %d workflows", s.name, b.N))
			b.StopTimer()
			cpu := cpuTime(b) - before
			if tp != nil {
				err = errors.Join(err, tp.Shutdown(context.Background()))
			}
			if err != nil {
				b.Fatal(err)
			}
			if n := r.workerErrors.Load(); n > 0 {
				b.Fatalf("%d turns ended with an error", n)
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/wf")
		})
	}
}

// cpuTime is the user and system time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
