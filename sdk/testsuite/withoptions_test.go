package testsuite_test

import (
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Temporal's …WithOptions calls behave as their plain forms: an
// AwaitWithOptions times out after its Timeout and succeeds when a signal
// on a GetSignalChannelWithOptions channel makes its condition true, a
// NewTimerWithOptions fires after its duration, a SideEffectWithOptions
// and a MutableSideEffectWithOptions value are recorded, and a SetQueryHandlerWithOptions handler answers.
func TestWithOptionsVariants(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow("phase")
			if err != nil {
				t.Errorf("query: %v", err)
				return
			}
			var phase string
			if err := v.Get(&phase); err != nil || phase != "waiting" {
				t.Errorf("query phase = %q, %v; want waiting", phase, err)
			}
			env.SignalWorkflow("go", "now")
		}, 90*time.Minute)
		env.ExecuteWorkflow(func(ctx workflow.Context) ([]any, error) {
			phase := "started"
			if err := workflow.SetQueryHandlerWithOptions(ctx, "phase", func() (string, error) { return phase, nil },
				workflow.QueryHandlerOptions{Description: "where the run is"}); err != nil {
				return nil, err
			}
			t0 := workflow.Now(ctx)
			// Nothing arrives in the first hour: the await times out.
			timedOut, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: time.Hour,
				TimerOptions: workflow.TimerOptions{Summary: "first hour"}}, func() bool { return false })
			if err != nil {
				return nil, err
			}
			phase = "waiting"
			var sig string
			ch := workflow.GetSignalChannelWithOptions(ctx, "go", workflow.SignalChannelOptions{Description: "start"})
			workflow.Go(ctx, func(ctx workflow.Context) { ch.Receive(ctx, &sig) })
			got, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: 24 * time.Hour}, func() bool {
				return sig != ""
			})
			if err != nil {
				return nil, err
			}
			if err := workflow.NewTimerWithOptions(ctx, 10*time.Minute, workflow.TimerOptions{Summary: "pause"}).Get(ctx, nil); err != nil {
				return nil, err
			}
			var n int
			if err := workflow.SideEffectWithOptions(ctx, workflow.SideEffectOptions{Summary: "draw"},
				func(workflow.Context) any { return 7 }).Get(&n); err != nil {
				return nil, err
			}
			var m string
			if err := workflow.MutableSideEffectWithOptions(ctx, "mode", workflow.MutableSideEffectOptions{Summary: "mode"},
				func(workflow.Context) any { return "fast" }, func(a, b any) bool { return a == b }).Get(&m); err != nil {
				return nil, err
			}
			return []any{timedOut, got, sig, workflow.Now(ctx).Sub(t0).String(), n, m}, nil
		})
		var got []any
		if err := env.GetWorkflowResult(&got); err != nil {
			t.Fatal(err)
		}
		// The signal comes at 1h30m; the timer adds ten minutes.
		want := []any{false, true, "now", "1h40m0s", float64(7), "fast"}
		if len(got) != len(want) {
			t.Fatalf("result %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("result %v, want %v", got, want)
			}
		}
	})
}
