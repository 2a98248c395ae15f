package httpapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// TestQueriesOfRunsOnEveryShard: on a sharded cluster, a query of a run
// on any shard, sent to any node, reaches the worker serving the run's
// queue and answers. The broker lives on the metadata group's leader,
// which leads one shard of the four here; before, it resolved the run
// with a Describe that answered not-leader for the other shards, the two
// leaders sent the query back and forth, and it timed out (found by a
// probe: queries, and the updates that ride on them, failed for three
// runs in four).
func TestQueriesOfRunsOnEveryShard(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	worker := c.client()
	served := make(chan error, 1)
	go func() {
		served <- worker.ServeQueries(ctx, "q", func(_ context.Context, workflowID, _, queryType string, _ []byte) ([]byte, error) {
			return []byte(`"` + queryType + ` of ` + workflowID + `"`), nil
		})
	}()
	cl := c.client()
	for k := range shards {
		wf := wfOn("queried-", k, shards)
		if _, err := cl.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"n1", "n2", "n3"} {
			qctx, qcancel := context.WithTimeout(ctx, 15*time.Second)
			got, err := c.client(id).Query(qctx, wf, "", "state", nil)
			qcancel()
			if want := `"state of ` + wf + `"`; err != nil || string(got) != want {
				t.Fatalf("a query of %s (shard %d, led by %s) through %s: %s, %v; want %s", wf, k, c.leaderOf(k), id, got, err, want)
			}
		}
	}
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("ServeQueries ended with %v, want the cancellation of its context", err)
	}
}
