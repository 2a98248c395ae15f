package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
)

// A run of a type no worker registers, and a run on a queue no worker
// polls, stay Queued: the client says why, names what the workers of the
// queue do run, and what was likely meant. The queue's description lists
// the worker with its identity, build and types. Embedded, over HTTP and
// on the three-node cluster (HEDDLE_SDK_BACKEND).
func TestQueuedReasonOfStuckRuns(t *testing.T) {
	e := open(t)
	startWorker(t, e, "orders", worker.Options{Identity: "shop-1", BuildID: "build-7"})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "typo", TaskQueue: "orders"}, "OrderWorkflw"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "lost", TaskQueue: "ordres"}, OrderWorkflow, "loom", 1); err != nil {
		t.Fatal(err)
	}
	// The worker polls at once; its claim passes the misspelled run over.
	var typo *engine.QueuedReason
	for {
		var err error
		if typo, err = c.DescribeWorkflowQueuedReason(ctx, "typo", ""); err != nil {
			t.Fatal(err)
		}
		if typo.Code == engine.QueuedNoPollerForType {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the misspelled run's reason never named its type: %+v", typo)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !strings.Contains(typo.Message, `no poller of task queue "orders" serves workflow type "OrderWorkflw"`) ||
		!strings.Contains(typo.Message, `did you mean "OrderWorkflow"?`) {
		t.Errorf("misspelled type: %s", typo.Message)
	}
	lost, err := c.DescribeWorkflowQueuedReason(ctx, "lost", "")
	if err != nil {
		t.Fatal(err)
	}
	if lost.Code != engine.QueuedNoPoller || !strings.Contains(lost.Message, `no worker has polled task queue "ordres"`) ||
		!strings.Contains(lost.Message, `did you mean "orders"?`) {
		t.Errorf("unserved queue: %+v", lost)
	}

	d, err := c.DescribeTaskQueue(ctx, "orders", client.TaskQueueTypeActivity)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Pollers) != 1 {
		t.Fatalf("pollers of orders: %+v", d.Pollers)
	}
	p := d.Pollers[0]
	if p.Identity != "shop-1" || p.BuildID != "build-7" || !slices.Contains(p.WorkflowTypes, "OrderWorkflow") ||
		!slices.Contains(p.ActivityTypes, "Charge") {
		t.Errorf("poller: %+v", p)
	}
	if d.Stats.BacklogCount+d.Stats.DelayedCount != 1 {
		// The misspelled run: ready, or deferred by a claim that passed
		// it over (until its backoff ends).
		t.Errorf("stats: %+v", d.Stats)
	}
	l, err := c.ListTaskQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range l.Queues {
		names = append(names, q.Name)
	}
	if !slices.Contains(names, "orders") || !slices.Contains(names, "ordres") {
		t.Errorf("listed queues %v", names)
	}
}
