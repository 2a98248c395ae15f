package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The resources workload: N steps contending for K units of a resource
// pool (docs/state-machines.md §3). Each workflow runs one activity that
// requires the "unit" capability and holds its unit for resourceHold; the
// pool has resourceUnits units on two resources, far fewer than the 32
// workflows in flight, so the steps queue for them, first come first
// served.
const (
	resourceUnits = 4
	resourceHold  = 2 * time.Millisecond
)

// UseUnit runs on a unit of the pool: the activity "Hold" stamps when it
// started and holds the unit.
func UseUnit(ctx workflow.Context, i int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RequiredCapabilities: []string{"unit"}})
	return workflow.ExecuteActivity(ctx, "Hold", i).Get(ctx, nil)
}

// runResources: N workflows from 32 concurrent starters, each running one
// step on a unit. The figure is steps/s against the storage ceiling; the
// wait of a step is from its workflow's start to the start of its
// activity on a unit, and fairness is the longest wait over the mean. A
// second ceiling, the pool's own, is K units held resourceHold each:
// occupancy_ratio is the share of it reached.
func runResources(r *runner) error {
	if err := r.open("resources"); err != nil {
		return err
	}
	ctx := context.Background()
	for _, id := range []string{"unit-a", "unit-b"} {
		if _, err := r.b.svc.AddResource(ctx, engine.AddResource{ID: id, Capabilities: []string{"unit"}, Capacity: resourceUnits / 2}); err != nil {
			return err
		}
	}
	started := make([]time.Time, r.n)
	ran := make([]time.Time, r.n)
	var mu sync.Mutex
	hold := func(ctx context.Context, i int) error {
		mu.Lock()
		ran[i] = time.Now()
		mu.Unlock()
		select {
		case <-time.After(resourceHold):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if _, err := r.worker(queue, 0, map[string]any{"Hold": hold}); err != nil {
		return err
	}
	c := r.client()
	t, err := r.timed("steps", func(i int) error {
		mu.Lock()
		started[i] = time.Now()
		mu.Unlock()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("resources-%d", i), TaskQueue: queue}, UseUnit, i)
		if err == nil {
			err = run.Get(ctx, nil)
		}
		return err
	})
	if err != nil {
		return err
	}
	waits := make([]time.Duration, r.n)
	var sum time.Duration
	for i := range waits {
		waits[i] = ran[i].Sub(started[i])
		sum += waits[i]
	}
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	r.throughput("steps/s", r.n, t.elapsed, t.commands, ceil)
	r.res.WorkflowsPerS = ptr(r.res.Value)
	r.samples(t.lat, "start to result of one workflow (its one step on a unit)", t.m, t.elapsed)
	mean := sum / time.Duration(r.n)
	slices.Sort(waits)
	ws := Summarize(waits)
	occupancy := float64(resourceUnits) / resourceHold.Seconds()
	r.res.Extra["units"] = resourceUnits
	r.res.Extra["hold_ms"] = float64(resourceHold) / float64(time.Millisecond)
	r.res.Extra["wait_mean_ms"] = float64(mean) / float64(time.Millisecond)
	r.res.Extra["wait_p50_ms"] = ws.P50
	r.res.Extra["wait_p99_ms"] = ws.P99
	r.res.Extra["wait_max_ms"] = float64(waits[len(waits)-1]) / float64(time.Millisecond)
	r.res.Extra["fairness_max_over_mean"] = float64(waits[len(waits)-1]) / float64(max(mean, 1))
	r.res.Extra["occupancy_ceiling_steps_per_s"] = occupancy
	r.res.Extra["occupancy_ratio"] = r.res.Value / occupancy
	return nil
}
