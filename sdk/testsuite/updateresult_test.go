package testsuite_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Receipt is what the update handlers of Till return.
type Receipt struct {
	Item  string
	Total int
}

// Till answers "buy" with a Receipt and "peek" with a *Receipt; "slow"
// sleeps a minute first, so its timer is one the test can see.
func Till(ctx workflow.Context) (int, error) {
	total := 0
	handlers := map[string]any{
		"buy": func(ctx workflow.Context, item string, price int) (Receipt, error) {
			total += price
			return Receipt{Item: item, Total: total}, nil
		},
		"peek": func(ctx workflow.Context) (*Receipt, error) {
			return &Receipt{Total: total}, nil
		},
		"slow": func(ctx workflow.Context) (int, error) {
			err := workflow.Sleep(ctx, time.Minute)
			return total, err
		},
	}
	for name, h := range handlers {
		if err := workflow.SetUpdateHandler(ctx, name, h); err != nil {
			return 0, err
		}
	}
	workflow.GetSignalChannel(ctx, "close").Receive(ctx, nil)
	return total, nil
}

// As in Temporal's test environment, an update's Complete callback gets
// the value the handler returned, with its Go type, not a JSON decoding
// of it (a map for a struct, a float64 for an int); and the update
// handler's coroutine runs in the environment, so its timers reach the
// timer listeners.
func TestUpdateCompleteGetsTheHandlersValue(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var mu sync.Mutex
	got := map[string]any{}
	var timers []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		timers = append(timers, d)
	})
	complete := func(id string) *testsuite.TestUpdateCallback {
		return &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("update %s rejected: %v", id, err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("update %s: %v", id, err)
				}
				mu.Lock()
				defer mu.Unlock()
				got[id] = v
			},
		}
	}
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow("buy", "b1", complete("b1"), "tea", 3) }, time.Second)
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow("buy", "b2", complete("b2"), "cake", 4) }, 2*time.Second)
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow("peek", "p1", complete("p1")) }, 3*time.Second)
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow("slow", "s1", complete("s1")) }, 4*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("close", nil) }, time.Hour)
	env.ExecuteWorkflow(Till)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]any{
		"b1": Receipt{Item: "tea", Total: 3},
		"b2": Receipt{Item: "cake", Total: 7},
		"p1": &Receipt{Total: 7},
		"s1": 7,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Complete got %#v, want %#v", got, want)
	}
	if !reflect.DeepEqual(timers, []time.Duration{time.Minute}) {
		t.Fatalf("timers scheduled %v, want the update handler's one minute", timers)
	}
}
