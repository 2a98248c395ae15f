package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// batchBenchRate is the rate the batchterminate workload gives its batch:
// far above what the engine reaches, so that the figure is the engine's
// capacity rather than the rate limit (a batch that names none runs at
// embedded.DefaultBatchRunsPerSecond).
const batchBenchRate = 10_000_000

// runBatchTerminate: N runs started (untimed) on a queue no worker serves,
// then one batch that terminates every run its query matches, from the
// start of the batch until it completed. The figure is runs terminated a
// second. The commands a run costs are its Terminate and its share of the
// batch's page records (one AdvanceBatch a page of 100); the batch's
// runner proposes them inside the node, so they are counted here rather
// than by the client.
func runBatchTerminate(r *runner) error {
	if err := r.open("batchterminate"); err != nil {
		return err
	}
	ctx := context.Background()
	bar := r.bar("starts", r.n)
	m := newMeter(bar)
	err := spread(r.n, r.starters, func(i int) error {
		_, err := r.b.svc.Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("batch-%d", i), Type: "BatchBench", Queue: "nobody"})
		m.done()
		return err
	})
	bar.finish()
	if err != nil {
		return err
	}
	bs, ok := r.b.svc.Service.(engine.BatchService)
	if !ok {
		return fmt.Errorf("bench: the %s backend runs no batch operations", r.opts.Mode)
	}
	r.logf("terminating %d runs with one batch", r.n)
	start := time.Now()
	res, err := bs.StartBatch(ctx, engine.StartBatch{ID: "bench", BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate,
		Query: `WorkflowType = "BatchBench"`, Reason: "bench", RunsPerSecond: batchBenchRate}})
	if err != nil {
		return err
	}
	if res.Batch.Total != uint64(r.n) {
		return fmt.Errorf("bench: the batch matched %d runs, want %d", res.Batch.Total, r.n)
	}
	bar = r.bar("terminated", r.n)
	var b *engine.Batch
	shown := 0
	for {
		if b, err = bs.DescribeBatch(ctx, "bench"); err != nil {
			return err
		}
		if n := int(b.Done + b.Failed); n > shown {
			bar.add(n - shown)
			shown = n
		}
		if b.State != engine.BatchRunning {
			break
		}
		time.Sleep(5 * time.Millisecond) // a bench's progress look, not a test's wait
	}
	elapsed := time.Since(start)
	bar.finish()
	if b.State != engine.BatchCompleted || b.Done != uint64(r.n) || b.Failed != 0 {
		return errors.New("bench: the batch ended " + b.State.String() + fmt.Sprintf(" with %d done and %d failed of %d", b.Done, b.Failed, r.n))
	}
	commands := int64(r.n) + int64(r.n+99)/100 + 2 // the terminates, the page records, the start and the last record
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	r.throughput("runs/s terminated by one batch", r.n, elapsed, commands, ceil)
	r.res.Extra["default_batch_runs_per_s"] = embedded.DefaultBatchRunsPerSecond
	r.res.Extra["batch_rate_given"] = batchBenchRate
	return nil
}
