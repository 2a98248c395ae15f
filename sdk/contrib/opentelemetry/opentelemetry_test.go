package opentelemetry_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/contrib/opentelemetry"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// userTracer is the activity's own tracer, as the sample's
// otel.Tracer(...): it comes from the same provider as the interceptor's.
var userTracer trace.Tracer

// Greet starts a span of its own from its context, as Temporal's sample
// does; that span must be a child of the activity's span.
func Greet(ctx context.Context, name string) (string, error) {
	_, span := userTracer.Start(ctx, "custom-span")
	defer span.End()
	return "hello " + name, nil
}

// Relay greets once, then once more after each of two "go" signals, so
// that its run has three turns and a worker without a cache replays the
// earlier ones. Its query "greetings" answers how many it made.
func Relay(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out []string
	if err := workflow.SetQueryHandler(ctx, "greetings", func() (int, error) { return len(out), nil }); err != nil {
		return "", err
	}
	signals := workflow.GetSignalChannel(ctx, "go")
	for i := range 3 {
		if i > 0 {
			signals.Receive(ctx, nil)
		}
		var s string
		if err := workflow.ExecuteActivity(ctx, Greet, fmt.Sprint(i)).Get(ctx, &s); err != nil {
			return "", err
		}
		out = append(out, s)
	}
	return strings.Join(out, ", "), nil
}

// newTracing returns a tracing interceptor made with opts, whose tracer
// (and userTracer) come from a provider that records every span.
func newTracing(t *testing.T, opts opentelemetry.TracerOptions) (interceptor.Interceptor, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) }) // a recorder has nothing to flush
	userTracer = tp.Tracer("user")
	opts.Tracer = tp.Tracer("otel-test")
	tracingInterceptor, err := opentelemetry.NewTracingInterceptor(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tracingInterceptor, rec
}

// runRelay runs Relay to its end through a client whose only interceptor
// is the tracing interceptor made with opts (its tracer from a provider
// recording every span), and a worker made from that client with
// cacheSize. It signals only once the run waits, so each signal starts a
// turn of its own, queries the run before the end, and returns the
// recorded spans and how many turns replayed history.
func runRelay(t *testing.T, opts opentelemetry.TracerOptions, cacheSize int) ([]sdktrace.ReadOnlySpan, float64) {
	t.Helper()
	tracingInterceptor, rec := newTracing(t, opts)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	c := client.NewWithOptions(e, client.Options{Interceptors: []interceptor.ClientInterceptor{tracingInterceptor}})
	w := worker.New(c, "relay", worker.Options{CacheSize: cacheSize, Metrics: m})
	w.RegisterWorkflow(Relay)
	w.RegisterActivity(Greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = w.Shutdown(ctx)
		}
	}()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "relay-1", TaskQueue: "relay"}, Relay)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for {
			j, err := c.DescribeWorkflow(ctx, "relay-1", "")
			if err != nil {
				t.Fatal(err)
			}
			if j.Status == engine.StatusWaiting || j.Status == engine.StatusParked {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if i == 1 {
			v, err := c.QueryWorkflow(ctx, "relay-1", "", "greetings")
			var n int
			if err == nil {
				err = v.Get(&n)
			}
			if err != nil || n != 2 {
				t.Fatalf("query greetings: %d, %v; want 2", n, err)
			}
		}
		if err := c.SignalWorkflow(ctx, "relay-1", "", "go", nil); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello 0, hello 1, hello 2" {
		t.Fatalf("run: %q, %v", got, err)
	}
	// The last turn's span ends after its commit, which the client may
	// see first: stopping the worker waits for the turn to end.
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	fs, err := metricstest.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Ended(), fs.Value(metrics.WorkerReplays, "queue", "relay")
}

// names counts spans by name.
func names(spans []sdktrace.ReadOnlySpan) map[string]int {
	out := map[string]int{}
	for _, s := range spans {
		out[s.Name()]++
	}
	return out
}

// render lays counts out one "name count" a line, sorted, for messages.
func render(counts map[string]int) string {
	var lines []string
	for n, c := range counts {
		lines = append(lines, fmt.Sprintf("%s %d", n, c))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// wantSpans are the spans of runRelay with everything traced: one start,
// one span per turn (three), one per activity try and per user span
// (three each), two signals and one query.
var wantSpans = map[string]int{
	"StartWorkflow:Relay":     1,
	"RunWorkflow:Relay":       3,
	"RunActivity:Greet":       3,
	"custom-span":             3,
	"SignalWorkflow:go":       2,
	"QueryWorkflow:greetings": 1,
}

// TestOneTraceFromStartToTheActivitysOwnSpan follows the sample: the
// interceptor is given to the client only, and the worker made from it
// traces too. Every span is of one trace: each turn is a child of the
// start, each activity try of a turn, and the span the activity starts
// from its context is a child of that try's.
func TestOneTraceFromStartToTheActivitysOwnSpan(t *testing.T) {
	spans, _ := runRelay(t, opentelemetry.TracerOptions{}, 0)
	if got := names(spans); render(got) != render(wantSpans) {
		t.Fatalf("spans:\n%s\nwant:\n%s", render(got), render(wantSpans))
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	var start sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "StartWorkflow:Relay" {
			start = s
		}
	}
	traceID := start.SpanContext().TraceID()
	// parentName names the parent of s, "" for a root.
	parentName := func(s sdktrace.ReadOnlySpan) string {
		if !s.Parent().IsValid() {
			return ""
		}
		p, ok := byID[s.Parent().SpanID()]
		if !ok {
			t.Fatalf("%s: parent %s was not recorded", s.Name(), s.Parent().SpanID())
		}
		return p.Name()
	}
	wantParent := map[string]string{
		"StartWorkflow:Relay": "",
		"RunWorkflow:Relay":   "StartWorkflow:Relay",
		"RunActivity:Greet":   "RunWorkflow:Relay",
		"custom-span":         "RunActivity:Greet",
	}
	for _, s := range spans {
		want, ok := wantParent[s.Name()]
		if !ok {
			continue
		}
		if s.SpanContext().TraceID() != traceID {
			t.Errorf("%s is of trace %s, not the start's %s", s.Name(), s.SpanContext().TraceID(), traceID)
		}
		if got := parentName(s); got != want {
			t.Errorf("%s is a child of %q, want %q", s.Name(), got, want)
		}
	}
	// Each user span is the child of its own try, not of one try for all.
	seen := map[trace.SpanID]bool{}
	for _, s := range spans {
		if s.Name() == "custom-span" {
			if seen[s.Parent().SpanID()] {
				t.Errorf("two custom spans under the same try %s", s.Parent().SpanID())
			}
			seen[s.Parent().SpanID()] = true
		}
	}
}

// TestNoDuplicateSpansWithoutCache runs the same workflow on a worker
// without a cache, which replays the run's history at each of its later
// turns: the spans are exactly those of a cached run, none for the
// activities and the start that replaying went past.
func TestNoDuplicateSpansWithoutCache(t *testing.T) {
	spans, replays := runRelay(t, opentelemetry.TracerOptions{}, -1)
	if replays != 2 {
		t.Fatalf("%v turns replayed history, want 2: the test would not show what replays do", replays)
	}
	if got := names(spans); render(got) != render(wantSpans) {
		t.Fatalf("spans with replays:\n%s\nwant:\n%s", render(got), render(wantSpans))
	}
}

// TestDisableTracing turns the client-side spans off one kind at a time:
// only that kind goes, and heddle's own spans stay.
func TestDisableTracing(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts opentelemetry.TracerOptions
		gone string
	}{
		{"signals", opentelemetry.TracerOptions{DisableSignalTracing: true}, "SignalWorkflow:go"},
		{"queries", opentelemetry.TracerOptions{DisableQueryTracing: true}, "QueryWorkflow:greetings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, _ := runRelay(t, tc.opts, 0)
			want := map[string]int{}
			for n, c := range wantSpans {
				if n != tc.gone {
					want[n] = c
				}
			}
			if got := names(spans); render(got) != render(want) {
				t.Fatalf("spans:\n%s\nwant:\n%s", render(got), render(want))
			}
		})
	}
}
