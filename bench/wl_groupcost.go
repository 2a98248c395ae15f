package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// idleWindow is how long groupcost measures the backend doing nothing.
const idleWindow = 3 * time.Second

// cutAfter is how long groupcost's long polls wait before they are cut:
// long enough for every node to have parked the poll.
const cutAfter = 5 * time.Millisecond

// runGroupCost measures two inputs of the scaling model
// (docs/sharding.md, "The scaling model") that the workflow workloads
// cannot separate: what a Raft group replica costs while nothing happens
// (its heartbeats and timers), and what one empty claim poll costs a
// node. The backend idles for idleWindow with no worker and no client,
// and the process's CPU over that window is divided by the group
// replicas it runs (three per group; the embedded engine counts as one).
// Then 32 pollers send N long polls (ClaimWait, as a worker does) of a
// queue that never has work, each cut after cutAfter: on a sharded cluster
// each is a poll of every node (the client's fan-out) that is cut and then
// recalled, which is what a worker's claim costs each node that did not
// answer it; on a cluster of one group a poll of the leader. The CPU of
// those polls over the polls the nodes served is the cost of one cut poll,
// client and node together, as both run in this process. Last, N claims
// that do not wait (Claim): each proposes an empty claim to every shard a
// polled node leads (a Raft entry each), unlike a long poll, which first
// looks at the shard's ready index.
func runGroupCost(r *runner) error {
	if err := r.open("groupcost"); err != nil {
		return err
	}
	replicas, nodes := 1, 1
	switch {
	case len(r.b.hosts) > 0:
		nodes = len(r.b.hosts)
		// Every node holds a replica of the metadata group and of each shard
		// (three nodes, three replicas).
		replicas = nodes * (r.b.hosts[0].ShardCount() + 1)
	case len(r.b.nodes) > 0:
		// A cluster of one group: three replicas, and a claim polls the
		// leader alone.
		replicas = len(r.b.nodes)
	}
	ctx := context.Background()
	// One claim first, so that the client has learnt the cluster's shape
	// (a sharded client asks for the shard map once) before anything is
	// measured.
	if _, err := r.b.svc.Claim(ctx, emptyClaim(-1)); err != nil {
		return err
	}
	r.logf("idling for %v", idleWindow)
	cpu0, t0 := processCPU(), time.Now()
	time.Sleep(idleWindow) // the measurement is of this window itself, not a wait for an event
	idle := processCPU() - cpu0
	idleCores := idle.Seconds() / time.Since(t0).Seconds()

	polls, err := r.timed("polls", func(i int) error {
		pctx, cancel := context.WithTimeout(ctx, cutAfter)
		defer cancel()
		jobs, err := r.b.svc.ClaimWait(pctx, emptyClaim(i))
		switch {
		case len(jobs) > 0:
			return fmt.Errorf("bench: the empty queue's poll %d took %d jobs", i, len(jobs))
		case err != nil && pctx.Err() == nil:
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The recalls of the last cut polls follow them by half a second. The
	// idle cost runs on meanwhile and is counted in, not taken out: it is
	// a few percent of the polls' at the default N, and taking out an
	// estimate of it could leave a small run's figure at nothing.
	time.Sleep(time.Second)
	pollCPU := processCPU() - polls.cpu0

	t, err := r.timed("claims", func(i int) error {
		jobs, err := r.b.svc.Claim(ctx, emptyClaim(r.n+i))
		if err == nil && len(jobs) > 0 {
			err = fmt.Errorf("bench: the empty queue's claim %d took %d jobs", i, len(jobs))
		}
		return err
	})
	if err != nil {
		return err
	}
	claimCPU := t.cpu
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	res := r.res
	res.Figure = "empty claims/s"
	res.Value = float64(r.n) / t.elapsed.Seconds()
	res.Ceiling = ceil.WritesPerS
	res.CeilingBasis = fmt.Sprintf("%s writes/s: an empty claim writes nothing, so the ratio says how many polls cost the time of one write", ceil.Kind)
	res.RatioToCeiling = res.Value / res.Ceiling
	res.CPUMSPerUnit = float64(t.cpu) / float64(time.Millisecond) / float64(r.n)
	res.Extra["cut_poll_cpu_ms"] = float64(pollCPU) / float64(time.Millisecond) / float64(r.n*nodes)
	res.Extra["empty_claim_cpu_ms"] = float64(claimCPU) / float64(time.Millisecond) / float64(r.n*nodes)
	res.Extra["nodes_polled_per_claim"] = float64(nodes)
	res.Extra["group_replicas"] = float64(replicas)
	res.Extra["idle_cpu_cores"] = idleCores
	res.Extra["idle_cpu_cores_per_group_replica"] = idleCores / float64(replicas)
	r.samples(t.lat, "one empty claim (a poll of every node on a sharded cluster)", t.m, t.elapsed)
	return nil
}

// emptyClaim is the i-th claim of a queue no workflow ever uses.
func emptyClaim(i int) engine.Claim {
	return engine.Claim{Header: engine.Header{RequestID: fmt.Sprintf("groupcost-%d", i)},
		Queue: "groupcost-empty", Owner: "bench", Max: 1, LeaseMS: 30_000}
}
