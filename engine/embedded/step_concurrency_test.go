package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Resource exclusivity under concurrent leases (run it with -race): many
// jobs' steps lease units of a small pool at once, through the engine's
// group-committing log. Each step counts itself in while it holds a unit
// and out before it commits; the count of a resource never exceeds its
// capacity, every step is served, and Verify finds the store consistent.
func TestStepResourceExclusivityConcurrent(t *testing.T) {
	e, err := Open(Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx := context.Background()
	capacity := map[string]int{"b1": 2, "b2": 1}
	for id, n := range capacity {
		if _, err := e.AddResource(ctx, engine.AddResource{ID: id, Capabilities: []string{"browser"}, Capacity: n}); err != nil {
			t.Fatal(err)
		}
	}
	const workers, stepsEach = 12, 4
	held := map[string]*atomic.Int32{"b1": {}, "b2": {}}
	var over atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runExclusiveSteps(ctx, e, fmt.Sprintf("x%d", w), stepsEach, capacity, held, &over)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := over.Load(); n > 0 {
		t.Fatalf("a resource was held beyond its capacity %d times", n)
	}
	var problems []error
	if err := e.View(ctx, func(r *storage.Reader) error { problems = machine.Verify(r, 10); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	rs, err := e.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.Holders) != 0 {
			t.Errorf("resource %s still holds %+v", r.ID, r.Holders)
		}
	}
}

// runExclusiveSteps runs one job whose steps each lease a browser, wait
// for the grant when queued, hold it a moment and commit.
func runExclusiveSteps(ctx context.Context, e *Engine, queue string, n int, capacity map[string]int,
	held map[string]*atomic.Int32, over *atomic.Int32) error {
	if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: queue, Type: "t", Queue: queue}); err != nil {
		return err
	}
	jobs, err := e.Claim(ctx, engine.Claim{Queue: queue, Owner: queue, Max: 1, LeaseMS: 600_000})
	if err != nil || len(jobs) != 1 {
		return fmt.Errorf("claim: %v %v", jobs, err)
	}
	ref := jobs[0].Lease()
	for i := range n {
		step := fmt.Sprint(i + 1)
		var res *engine.StepResult
		for deadline := time.Now().Add(20 * time.Second); ; {
			changed := e.Committed()
			res, err = e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: step, Name: "Browse", LeaseMS: 600_000, Capabilities: []string{"browser"}})
			if err != nil {
				return err
			}
			if res.Granted {
				break
			}
			if time.Now().After(deadline) {
				return errors.New("a queued step was never served")
			}
			select {
			case <-changed:
			case <-time.After(50 * time.Millisecond):
			}
		}
		h := held[res.Resource]
		if int(h.Add(1)) > capacity[res.Resource] {
			over.Add(1)
		}
		if _, err := e.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: ref, Step: step, StepAttempt: res.StepAttempt, LeaseMS: 600_000}); err != nil {
			return err
		}
		h.Add(-1)
		if _, err := e.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: step, Type: engine.EventActivityCompleted, StepAttempt: res.StepAttempt}); err != nil {
			return err
		}
	}
	_, err = e.Complete(ctx, engine.Complete{LeaseRef: ref})
	return err
}
