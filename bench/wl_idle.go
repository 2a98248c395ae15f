package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
)

// runIdle: N workflows started by 32 starters, each then waiting on a
// signal; once none is queued or running, the heap in use and the disk
// the backend's directories take are measured again, and their growth is
// divided by N. The heap is this whole process's, workers' cache included
// (in a cluster, three nodes' worth of state for one workflow).
func runIdle(r *runner) error {
	if err := r.open("idle"); err != nil {
		return err
	}
	if _, err := r.worker(queue, 0, nil); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	heapBefore := heapInUse()
	diskBefore := duBytes(r.b.dirs...)
	before := r.b.svc.commands.Load() // through the settling, not just the starts
	t, err := r.timed("workflows", func(i int) error {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("idle-%d", i), TaskQueue: queue}, Idler)
		return err
	})
	if err != nil {
		return err
	}
	if err := waitSettled(ctx, c); err != nil {
		return err
	}
	elapsed := time.Since(t.start)
	commands := r.b.svc.commands.Load() - before
	heapAfter := heapInUse()
	diskAfter := duBytes(r.b.dirs...)
	heapPer := float64(heapAfter-heapBefore) / float64(r.n)
	diskPer := float64(diskAfter-diskBefore) / float64(r.n)
	// The ceiling writes exactly as many payloads as the workload issued
	// commands, so its disk per workflow is what those commands' bytes
	// take in a bare store.
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, int(commands))
	if err != nil {
		return err
	}
	res := r.res
	res.Figure = "disk bytes/workflow"
	res.Value = diskPer
	res.CommandsPerUnit = float64(commands) / float64(r.n)
	res.Ceiling = ceil.DiskBytesPerWrite * res.CommandsPerUnit
	res.CeilingBasis = fmt.Sprintf("du of %s after the same number of %d-byte writes, per workflow", ceil.Kind, commandPayloadBytes)
	res.RatioToCeiling = res.Value / res.Ceiling
	res.WorkflowsPerS = ptr(float64(r.n) / t.elapsed.Seconds())
	res.Extra["heap_inuse_bytes_per_workflow"] = heapPer
	res.Extra["disk_bytes_per_workflow"] = diskPer
	res.Extra["settle_s"] = (elapsed - t.elapsed).Seconds()
	r.samples(t.lat, "one start (the create's round trip)", t.m, t.elapsed)
	return nil
}

// heapInUse is the heap in use after a full collection, so the difference
// of two readings is live data rather than garbage not yet collected.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// waitSettled waits until no job of the queue is queued or running: every
// workflow has reached its wait.
func waitSettled(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		busy := false
		for _, st := range []engine.Status{engine.StatusQueued, engine.StatusRunning} {
			page, err := c.ListWorkflows(ctx, engine.ListQuery{Status: st, Queue: queue, Limit: 1})
			if err != nil {
				return err
			}
			busy = busy || len(page.Jobs) > 0
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("idle workflows still queued or running after 30 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
