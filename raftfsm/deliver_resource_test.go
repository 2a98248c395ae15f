package raftfsm

import (
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// TestCrossShardResourceLeasedOnce: a step of a run on shard 1 needs a
// unit of the resource pool, which lives on shard 0. Its ask goes through
// shard 1's outbox; the one unit is leased to it on shard 0 and the grant
// comes back in the answer. Each is run with the source shard's leader
// (shard 1's) killed after the pool applied the ask and before the
// acknowledgement, with the pool's leader killed after it applied the ask
// and before it answered, and with every delivery between the two failing
// until healed. Each ends with the step leased on that unit once (one
// step_leased event, the pool listing it once), and, once the step
// succeeds, the unit back in the pool; VerifyShard and VerifyAcrossShards
// are clean throughout.
func TestCrossShardResourceLeasedOnce(t *testing.T) {
	for _, fault := range []string{"source", "target", "partition"} {
		t.Run(fault, func(t *testing.T) { crossShardResource(t, fault) })
	}
}

func crossShardResource(t *testing.T, fault string) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders() // n1 leads shard 0 (the pool's), n2 shard 1
	ctx := context.Background()
	_, eng0 := c.shardLeader(0)
	if _, err := eng0.AddResource(ctx, engine.AddResource{ID: "gpu-1", Capabilities: []string{"gpu"}, Capacity: 1,
		Labels: map[string]string{"zone": "a"}}); err != nil {
		t.Fatal(err)
	}
	ref := c.runningOn(1, keyOn("render-", 1, 2), "render", "renders")

	// The asks of shard 1 meet the fault; the grants of shard 0 do not.
	f := c.injectDeliveryFault(fault, func(d *engine.Deliver) bool { return d.Source == 1 })

	lease := func() (*engine.StepResult, error) {
		_, eng1 := c.shardLeader(1)
		return eng1.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "s1", Name: "Render", LeaseMS: 600_000,
			Capabilities: []string{"gpu"}, Start: true})
	}
	res, err := lease()
	if err != nil || res.Granted || !res.Queued {
		t.Fatalf("the first lease: %+v %v, want the step queued while it asks shard 0", res, err)
	}
	switch fault {
	case "source", "target":
		<-f.hit
		if fault == "source" {
			c.kill("n2")
		}
	case "partition":
		for range 3 {
			<-f.refused // the deliverer tried, and tries again after its backoff
		}
		close(f.heal)
	}

	// The worker leases the step again until the grant has reached it.
	c.await("the step leased on the pool's unit", func() bool {
		res, err = lease()
		return err == nil && res.Granted
	})
	if res.Resource != "gpu-1" || res.Labels["zone"] != "a" || res.StepAttempt != 1 {
		t.Fatalf("the lease: %+v, want try 1 on gpu-1 with its labels", res)
	}
	c.await("no entry pending", func() bool { return c.nothingPending(ctx) })
	_, eng1 := c.shardLeader(1)
	if n := countEvents(t, eng1, ref.Job, engine.EventStepLeased); n != 1 {
		t.Fatalf("the run's history has %d step_leased events, want 1", n)
	}
	holders := func() []engine.ResourceHolder {
		_, eng0 := c.shardLeader(0)
		rs, err := eng0.Resources(ctx)
		if err != nil || len(rs) != 1 {
			t.Fatalf("the pool: %v %v", rs, err)
		}
		return rs[0].Holders
	}
	if h := holders(); len(h) != 1 || h[0].Job != ref.Job || h[0].Step != "s1" || h[0].StepAttempt != 1 {
		t.Fatalf("gpu-1 is held by %+v, want try 1 of step s1 of job %d once", h, ref.Job)
	}
	c.verifyShards()
	c.verifyAcross()

	// The step succeeds: its unit goes back to the pool.
	if _, err := eng1.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: "s1", Type: engine.EventActivityCompleted,
		StepAttempt: 1, Payload: []byte(`"ok"`)}); err != nil {
		t.Fatal(err)
	}
	c.await("the unit back in the pool, and nothing pending", func() bool {
		return c.nothingPending(ctx) && len(holders()) == 0
	})
	if err := eng0View(c, ctx); err != nil {
		t.Fatal(err)
	}
	c.verifyShards()
	c.verifyAcross()
}

// eng0View checks that the pool's shard keeps no record of the unit a
// step of shard 1 gave back.
func eng0View(c *testHosts, ctx context.Context) error {
	_, eng0 := c.shardLeader(0)
	return eng0.View(ctx, func(r *storage.Reader) error {
		n := 0
		err := r.Scan(storage.RemoteUnitPrefix, nil, true, func([]byte, []byte) (bool, error) { n++; return true, nil })
		if err == nil && n != 0 {
			err = errors.New("the pool's shard still keeps a remote unit record")
		}
		return err
	})
}
