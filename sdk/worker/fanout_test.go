package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

const fanWidth = 12

// fanGate holds every FanPart until all of them have started, so they
// finish together and their commits go out as one group; fanRuns counts
// executions per idempotency key.
var fanGate struct {
	sync.Mutex
	started int
	open    chan struct{}
	runs    map[string]int
}

// FanPart returns its index after every part has started (or after a
// second, so that a replayed turn with fewer parts still finishes).
func FanPart(ctx context.Context, i int) (int, error) {
	fanGate.Lock()
	fanGate.runs[activity.GetInfo(ctx).IdempotencyKey]++
	fanGate.started++
	if fanGate.started == fanWidth {
		close(fanGate.open)
	}
	open := fanGate.open
	fanGate.Unlock()
	select {
	case <-open:
	case <-time.After(time.Second):
	}
	return i, nil
}

// FanOut runs fanWidth activities in parallel and sums their results.
func FanOut(ctx workflow.Context) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var fs []workflow.Future
	for i := 0; i < fanWidth; i++ {
		fs = append(fs, workflow.ExecuteActivity(ctx, FanPart, i))
	}
	sum := 0
	for _, f := range fs {
		var v int
		if err := f.Get(ctx, &v); err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// Parallel activities that finish together are committed together (their
// step commits proposed at once), and every one is committed exactly once
// with its own result.
func TestFanOutCommitsEveryPartOnce(t *testing.T) { forEachCache(t, testFanOut) }

func testFanOut(t *testing.T, cache int) {
	fanGate.Lock()
	fanGate.started, fanGate.open, fanGate.runs = 0, make(chan struct{}), map[string]int{}
	fanGate.Unlock()
	e := open(t)
	w := startWorker(t, e, "fan", worker.Options{CacheSize: cache})
	w.RegisterWorkflow(FanOut)
	w.RegisterActivity(FanPart)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "fan", TaskQueue: "fan"}, FanOut)
	if err != nil {
		t.Fatal(err)
	}
	var sum int
	if err := run.Get(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if want := fanWidth * (fanWidth - 1) / 2; sum != want {
		t.Fatalf("sum = %d, want %d", sum, want)
	}
	hist, err := c.GetWorkflowHistory(ctx, "fan", "")
	if err != nil {
		t.Fatal(err)
	}
	commits := map[string]int{}
	for _, ev := range hist {
		if ev.Type == engine.EventType(engine.EventActivityCompleted) && ev.Commit {
			commits[ev.Step]++
		}
	}
	if len(commits) != fanWidth {
		t.Fatalf("%d steps committed, want %d: %v", len(commits), fanWidth, commits)
	}
	fanGate.Lock()
	defer fanGate.Unlock()
	for key, n := range fanGate.runs {
		if n != 1 {
			t.Errorf("activity %s ran %d times", key, n)
		}
	}
	if len(fanGate.runs) != fanWidth {
		t.Errorf("%d activities ran, want %d", len(fanGate.runs), fanWidth)
	}
	verify(t, e)
}
