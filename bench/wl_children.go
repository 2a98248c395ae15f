package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
)

// runChildren: N parent workflows, each starting one child (one no-op
// activity) and waiting for it, from 32 starters; twice on one backend.
// First every child shares its parent's shard (their workflow ids share a
// hash tag, docs/sharding.md); then half the children are named so that
// they land on another shard, which a sharded cluster delivers through
// its outbox (the parent's shard creates the child on the child's, and the
// child's end comes back the same way). The headline is the second run's
// workflows/s (a parent and its child count as one); extras set it against
// the first: the within-shard figures and their ratio, and each run's
// latency. On one group or embedded the two runs differ only in names.
func runChildren(r *runner) error {
	if err := r.open("children"); err != nil {
		return err
	}
	if _, err := r.worker(queue, 0, nil); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	shards := max(r.opts.Shards, 1)
	start := func(round string, across func(i int) bool) (timedRun, int, error) {
		crossed := 0
		t, err := r.timed(round, func(i int) error {
			parent := fmt.Sprintf("%s-{%d}", round, i)
			child := fmt.Sprintf("%s-{%d}-child", round, i)
			if across(i) {
				child = elsewhere(fmt.Sprintf("%s-%d-child-", round, i), engine.ShardOfKey(parent, shards), shards)
			}
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: parent, TaskQueue: queue}, ParentOfOne, child)
			if err == nil {
				err = run.Get(ctx, nil)
			}
			return err
		})
		for i := range r.n {
			if across(i) {
				crossed++
			}
		}
		return t, crossed, err
	}
	within, _, err := start("within", func(int) bool { return false })
	if err != nil {
		return err
	}
	mixed, crossed, err := start("half", func(i int) bool { return i%2 == 0 })
	if err != nil {
		return err
	}
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	r.throughput("workflows/s", r.n, mixed.elapsed, mixed.commands, ceil)
	r.res.WorkflowsPerS = ptr(r.res.Value)
	r.res.CPUMSPerUnit = float64(mixed.cpu) / float64(time.Millisecond) / float64(r.n)
	r.samples(mixed.lat, "start to result of a parent whose child is on another shard half the time", mixed.m, mixed.elapsed)
	withinPerS := float64(r.n) / within.elapsed.Seconds()
	wl := Summarize(within.lat)
	r.res.Extra["within_shard_workflows_per_s"] = withinPerS
	r.res.Extra["half_across_over_within"] = r.res.Value / withinPerS
	r.res.Extra["within_shard_p50_ms"], r.res.Extra["within_shard_p99_ms"] = wl.P50, wl.P99
	r.res.Extra["within_shard_cpu_ms_per_workflow"] = float64(within.cpu) / float64(time.Millisecond) / float64(r.n)
	r.res.Extra["children_across_shards"] = float64(crossed)
	return nil
}

// elsewhere returns a workflow id starting with prefix that routes to a
// shard other than not (with one shard, any).
func elsewhere(prefix string, not, shards int) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		if shards == 1 || engine.ShardOfKey(id, shards) != not {
			return id
		}
	}
}
