package worker_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
)

// TestResourcesAcrossShards: the resource pool lives on shard 0 of four;
// a run on every shard takes a browser for its step (BrowseFlow), three of
// them leasing across shards. Browser b1 crashes every try, so a step that
// gets it is switched to another and never leased b1 again (its avoid-list
// travels with its next ask). Every run ends on a good browser, the pool
// ends with every unit back, and the shards verify clean.
func TestResourcesAcrossShards(t *testing.T) {
	const shards = 4
	svc, hosts := openShardedCluster(t, shards)
	addResources(t, svc, "browser", 1, "b1", "b2", "b3")
	w := startWorkerOn(t, svc, "res", worker.Options{})
	w.RegisterWorkflow(BrowseFlow)
	w.RegisterActivity(Browse)
	c := client.New(svc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var runs []client.WorkflowRun
	for k := range shards {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: idOn("browse-", k, shards), TaskQueue: "res"}, BrowseFlow, fmt.Sprintf("site-%d", k))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	good := regexp.MustCompile(`^site-\d on (b[23]) \(label (b[23]), try ([12])\)$`)
	for _, run := range runs {
		var got string
		if err := run.Get(ctx, &got); err != nil {
			t.Fatalf("%s: %v", run.GetID(), err)
		}
		m := good.FindStringSubmatch(got)
		if m == nil || m[1] != m[2] {
			t.Fatalf("%s: result %q, want a good browser with its own label", run.GetID(), got)
		}
		steps, err := svc.Steps(ctx, engine.Target{WorkflowID: run.GetID()})
		if err != nil {
			t.Fatal(err)
		}
		// A second try means the first met b1, which the step then avoids.
		if len(steps) != 1 || steps[0].State != engine.StepSucceeded || (m[3] == "2") != slices.Equal(steps[0].Avoid, []string{"b1"}) {
			t.Fatalf("%s: steps %+v after %q", run.GetID(), steps, got)
		}
	}
	// A step on another shard gives its unit back through its shard's
	// outbox, so the release lands on the pool's shard after the run has
	// ended. The pool is read once every delivery has landed.
	verifyQuietShards(ctx, t, hosts, shards)
	rs, err := svc.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.Holders) != 0 {
			t.Fatalf("resource %s still holds %+v", r.ID, r.Holders)
		}
	}
}
