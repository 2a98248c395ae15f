package worker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Worker benchmarks, on a durable (synced) engine; with
// HEDDLE_SDK_BACKEND=http through the HTTP API, and with =cluster against a
// three-node Raft cluster on loopback reached over HTTP:
//
//	BenchmarkSeq3                  b.N workflows of three sequential no-op activities, started by
//	                               32 concurrent starters that each wait for their result; reports
//	                               workflows/s, activities/s and p50/p99 start-to-result latency
//	BenchmarkResumeCached/events=N the turn a signal triggers (signal → the workflow finishes) of a
//	                               cached workflow whose history already has about N events

// BenchNoop is a no-op activity.
func BenchNoop(context.Context) error { return nil }

// BenchSeq3 runs three no-op activities in sequence.
func BenchSeq3(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for range 3 {
		if err := workflow.ExecuteActivity(ctx, BenchNoop).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// BenchResume runs n no-op activities, then waits for the signal "go" and
// returns its value.
func BenchResume(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for range n {
		if err := workflow.ExecuteActivity(ctx, BenchNoop).Get(ctx, nil); err != nil {
			return 0, err
		}
	}
	var v int
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	return v, nil
}

func benchEngine(b *testing.B) (*embedded.Engine, worker.Worker) {
	b.Helper()
	old := worker.SetVerifyOwnEvents(false) // measure the worker as it ships
	b.Cleanup(func() { worker.SetVerifyOwnEvents(old) })
	var e *embedded.Engine
	if overCluster() {
		// Three Raft nodes on loopback; the worker and the clients reach
		// them over HTTP (HEDDLE_SDK_BACKEND=cluster).
		e = openCluster(b)
	} else {
		var err error
		if e, err = embedded.Open(embedded.Config{Dir: b.TempDir()}); err != nil {
			b.Fatal(err)
		}
	}
	var errs atomic.Int64
	w := worker.New(client.New(service(b, e)), "bench", worker.Options{MaxConcurrentJobs: 256, OnError: func(engine.JobID, error) { errs.Add(1) }})
	w.RegisterWorkflow(BenchSeq3)
	w.RegisterWorkflow(BenchResume)
	w.RegisterActivity(BenchNoop)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stopOK(b, w)
		if !overCluster() { // the cluster's own cleanup closes its nodes
			closeOK(b, e)
		}
		if n := errs.Load(); n > 0 {
			b.Errorf("%d worker errors", n)
		}
	})
	return e, w
}

// percentile returns the p-th percentile (0 < p <= 1) of sorted durations, in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

func BenchmarkSeq3(b *testing.B) {
	e, _ := benchEngine(b)
	c := client.New(service(b, e))
	ctx := context.Background()
	const starters = 32
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	b.ResetTimer()
	for range starters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("seq3-%d", i), TaskQueue: "bench"}, BenchSeq3)
				if err == nil {
					err = run.Get(ctx, nil)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	secs := b.Elapsed().Seconds()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/secs, "workflows/s")
	b.ReportMetric(float64(3*b.N)/secs, "activities/s")
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
}

func BenchmarkResumeCached(b *testing.B) {
	for _, events := range []int{10, 10000} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			benchResumeCached(b, events)
		})
	}
}

// benchResumeCached builds b.N workflows (concurrently, untimed) that each
// ran enough activities for a history of about events events and wait for
// a signal, then times, one workflow at a time, signal → result.
func benchResumeCached(b *testing.B, events int) {
	e, _ := benchEngine(b)
	c := client.New(service(b, e))
	ctx := context.Background()
	// Each inline activity commits one event; the job's creation, its
	// claim and its wait add three.
	acts := max(events-3, 0)
	runs := make([]client.WorkflowRun, b.N)
	for i := range runs {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("resume-%d", i), TaskQueue: "bench"}, BenchResume, acts)
		if err != nil {
			b.Fatal(err)
		}
		runs[i] = run
	}
	var histLen uint64
	for _, run := range runs {
		for {
			changed := e.Committed()
			j, err := c.DescribeWorkflow(ctx, run.GetID(), "")
			if err != nil {
				b.Fatal(err)
			}
			if j.Status == engine.StatusWaiting {
				histLen += j.LastSeq
				break
			}
			if j.Status.Terminal() {
				b.Fatalf("workflow %s ended with %v before its signal", run.GetID(), j.Status)
			}
			<-changed
		}
	}
	time.Sleep(50 * time.Millisecond) // let the worker put the released executions in its cache
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i, run := range runs {
		t0 := time.Now()
		if err := c.SignalWorkflow(ctx, run.GetID(), "", "go", i); err != nil {
			b.Fatal(err)
		}
		var got int
		if err := run.Get(ctx, &got); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
		if got != i {
			b.Fatalf("workflow %s returned %d, want %d", run.GetID(), got, i)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(histLen)/float64(b.N), "events")
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
}
