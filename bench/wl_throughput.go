package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/sdk/client"
)

// commandPayloadBytes is the size of one ceiling write: about what one of
// the workloads' commands carries (an encoded command with a small input,
// or the keys and values a create writes), since their own inputs are a
// few bytes.
const commandPayloadBytes = 256

const queue = "bench"

// runSeq3: N workflows of three sequential no-op activities, started by the
// concurrent starters that each wait for their workflow's result.
func runSeq3(r *runner) error {
	if err := r.open("seq3"); err != nil {
		return err
	}
	if _, err := r.worker(queue, 0, nil); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	claims0 := r.b.svc.claims.Load()
	log0 := r.b.nodeLogCounts()
	t, err := r.timed("workflows", func(i int) error {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("seq3-%d", i), TaskQueue: queue}, Seq3)
		if err == nil {
			err = run.Get(ctx, nil)
		}
		return err
	})
	if err != nil {
		return err
	}
	r.res.Extra["claims_per_workflow"] = float64(r.b.svc.claims.Load()-claims0) / float64(r.n)
	if log1 := r.b.nodeLogCounts(); log1.Commits > log0.Commits {
		// A sharded cluster's node logs: how many appends (of all of a
		// node's groups) one commit and sync carried, over the nodes.
		r.res.Extra["log_appends_per_commit"] = float64(log1.Appends-log0.Appends) / float64(log1.Commits-log0.Commits)
		r.res.Extra["log_commits_per_workflow"] = float64(log1.Commits-log0.Commits) / float64(r.n)
	}
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	r.throughput("workflows/s", r.n, t.elapsed, t.commands, ceil)
	r.res.WorkflowsPerS = ptr(r.res.Value)
	r.res.ActivitiesPerS = ptr(3 * float64(r.n) / t.elapsed.Seconds())
	r.res.CPUMSPerUnit = float64(t.cpu) / float64(time.Millisecond) / float64(r.n)
	r.samples(t.lat, "start to result of one workflow", t.m, t.elapsed)
	return nil
}

// runStart: N starts by 32 concurrent starters with no worker running, so
// each start is one create and nothing else competes with it.
func runStart(r *runner) error {
	if err := r.open("start"); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	t, err := r.timed("starts", func(i int) error {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("start-%d", i), TaskQueue: queue}, Seq3)
		return err
	})
	if err != nil {
		return err
	}
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	r.throughput("starts/s", r.n, t.elapsed, t.commands, ceil)
	r.res.WorkflowsPerS = ptr(r.res.Value)
	r.samples(t.lat, "one start (the create's round trip)", t.m, t.elapsed)
	return nil
}

// timedRun is what timed measured: each operation's latency, the meter of
// completions over time, the wall time and the commands the run issued.
type timedRun struct {
	lat      []time.Duration
	m        *meter
	start    time.Time
	cpu0     time.Duration // processCPU at start
	elapsed  time.Duration
	commands int64
	// cpu is the process's CPU time during the run (processCPU).
	cpu time.Duration
}

// timed runs op for i in [0, r.n) from the concurrent starters behind a
// progress bar, timing each call and counting the commands they cost.
func (r *runner) timed(what string, op func(i int) error) (timedRun, error) {
	t := timedRun{lat: make([]time.Duration, r.n)}
	bar := r.bar(what, r.n)
	t.m = newMeter(bar)
	before := r.b.svc.commands.Load()
	t.cpu0 = processCPU()
	t.start = time.Now()
	err := spread(r.n, r.starters, func(i int) error {
		t0 := time.Now()
		if err := op(i); err != nil {
			return err
		}
		t.lat[i] = time.Since(t0)
		t.m.done()
		return nil
	})
	t.elapsed = time.Since(t.start)
	t.cpu = processCPU() - t.cpu0
	bar.finish()
	t.commands = r.b.svc.commands.Load() - before
	return t, err
}

// fanoutReps is how many fan-out workflows run, one after another, so the
// latency has more than one sample.
const fanoutReps = 3

// runFanout: one workflow running N no-op activities in parallel and
// joining them, three times in a row.
func runFanout(r *runner) error {
	if err := r.open("fanout"); err != nil {
		return err
	}
	bar := r.bar("activities", fanoutReps*r.n)
	m := newMeter(bar)
	// Noop is registered again under its own name, as a closure that
	// counts, so the timeline shows activities as they run.
	counted := func(context.Context) error { m.done(); return nil }
	if _, err := r.worker(queue, 0, map[string]any{"Noop": counted}); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	var lat []time.Duration
	before := r.b.svc.commands.Load()
	start := time.Now()
	for rep := range fanoutReps {
		t0 := time.Now()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("fanout-%d", rep), TaskQueue: queue}, Fanout, r.n)
		if err == nil {
			err = run.Get(ctx, nil)
		}
		if err != nil {
			bar.finish()
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	bar.finish()
	commands := r.b.svc.commands.Load() - before
	ceil, err := r.ceiling(commandPayloadBytes, r.n, 0)
	if err != nil {
		return err
	}
	r.throughput("activities/s", fanoutReps*r.n, elapsed, commands, ceil)
	r.res.ActivitiesPerS = ptr(r.res.Value)
	r.res.WorkflowsPerS = ptr(fanoutReps / elapsed.Seconds())
	r.samples(lat, "start to result of one fan-out workflow", m, elapsed)
	return nil
}
