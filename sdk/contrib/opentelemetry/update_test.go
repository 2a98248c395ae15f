package opentelemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/contrib/opentelemetry"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Adder is started with its first "go" signal; it adds what its update
// "add" is given until a second "go", and returns the sum.
func Adder(ctx workflow.Context) (int, error) {
	total := 0
	if err := workflow.SetUpdateHandler(ctx, "add", func(ctx workflow.Context, n int) (int, error) {
		total += n
		return total, nil
	}); err != nil {
		return 0, err
	}
	signals := workflow.GetSignalChannel(ctx, "go")
	signals.Receive(ctx, nil)
	signals.Receive(ctx, nil)
	return total, nil
}

// TestSignalWithStartAndUpdateSpans starts Adder with SignalWithStart,
// updates it and signals it, under each of the update and signal
// switches: SignalWithStartWorkflow is the parent of the start's span and
// is a start, traced whatever DisableSignalTracing says; UpdateWorkflow
// and SignalWorkflow spans go only with their switch.
func TestSignalWithStartAndUpdateSpans(t *testing.T) {
	for _, tc := range []struct {
		name                string
		opts                opentelemetry.TracerOptions
		wantUpdate, wantSig int
	}{
		{"all", opentelemetry.TracerOptions{}, 1, 1},
		{"no updates", opentelemetry.TracerOptions{DisableUpdateTracing: true}, 0, 1},
		{"no signals", opentelemetry.TracerOptions{DisableSignalTracing: true}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tracingInterceptor, rec := newTracing(t, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			e, err := embedded.Open(embedded.Config{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			c := client.NewWithOptions(e, client.Options{Interceptors: []interceptor.ClientInterceptor{tracingInterceptor}})
			w := worker.New(c, "adder", worker.Options{})
			w.RegisterWorkflow(Adder)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Shutdown(ctx) }()
			run, err := c.SignalWithStartWorkflow(ctx, "adder-1", "go", nil, client.StartWorkflowOptions{TaskQueue: "adder"}, Adder)
			if err != nil {
				t.Fatal(err)
			}
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "adder-1", UpdateName: "add", Args: []any{2},
				WaitForStage: client.WorkflowUpdateStageCompleted})
			var sum int
			if err == nil {
				err = h.Get(ctx, &sum)
			}
			if err != nil || sum != 2 {
				t.Fatalf("update add: %d, %v; want 2", sum, err)
			}
			if err := c.SignalWorkflow(ctx, "adder-1", "", "go", nil); err != nil {
				t.Fatal(err)
			}
			if err := run.Get(ctx, &sum); err != nil || sum != 2 {
				t.Fatalf("Adder: %d, %v; want 2", sum, err)
			}
			if err := w.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			spans := rec.Ended()
			got := names(spans)
			if got["SignalWithStartWorkflow:Adder"] != 1 || got["StartWorkflow:Adder"] != 1 ||
				got["UpdateWorkflow:add"] != tc.wantUpdate || got["SignalWorkflow:go"] != tc.wantSig || got["RunWorkflow:Adder"] == 0 {
				t.Fatalf("spans:\n%s", render(got))
			}
			var sws, start string
			for _, s := range spans {
				switch s.Name() {
				case "SignalWithStartWorkflow:Adder":
					sws = s.SpanContext().SpanID().String()
				case "StartWorkflow:Adder":
					start = s.Parent().SpanID().String()
				}
			}
			if start != sws {
				t.Fatalf("StartWorkflow's parent is %s, not SignalWithStartWorkflow's %s", start, sws)
			}
		})
	}
}
