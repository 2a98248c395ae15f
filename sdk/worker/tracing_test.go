package worker_test

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

func Noted(ctx context.Context, name string) (string, error) {
	activity.GetLogger(ctx).Info("noted", "name", name)
	return "noted " + name, nil
}

// Relay runs an activity, then waits for a signal, twice, and runs a third
// activity: three turns, the second and third replaying what came before
// when the worker keeps no cache.
func Relay(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out []string
	for i, name := range []string{"a", "b", "c"} {
		if i > 0 {
			workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
		}
		workflow.GetLogger(ctx).Info("running a step", "name", name)
		var s string
		if err := workflow.ExecuteActivity(ctx, Noted, name).Get(ctx, &s); err != nil {
			return "", err
		}
		out = append(out, s)
	}
	return strings.Join(out, ", "), nil
}

// recordingHandler keeps the messages of the records it handles.
type recordingHandler struct {
	mu   sync.Mutex
	msgs []string
	attr map[string]bool
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range as {
		h.attr[a.Key] = true
	}
	return h
}
func (h *recordingHandler) WithGroup(string) slog.Handler { return h }

func (h *recordingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// A run's spans form one trace under the start's: a RunWorkflow span per
// turn, a RunActivity span per activity, and nothing more however often
// the history is replayed — here without a cache, so every turn replays
// the turns before it, and then once more by the WorkflowReplayer. The
// workflow's logger, silent in replay, writes each line once.
func TestSpansAreNotDuplicatedOnReplay(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }() // a recorder has nothing to flush
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &recordingHandler{attr: map[string]bool{}}
	e := open(t)
	w := startWorker(t, e, "relay", worker.Options{CacheSize: -1, TracerProvider: tp, Metrics: m, Logger: slog.New(logs)},
		func(w worker.Worker) { w.RegisterWorkflow(Relay); w.RegisterActivity(Noted) })
	c := client.NewWithOptions(service(t, e), client.Options{TracerProvider: tp})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "relay-1", TaskQueue: "relay"}, Relay)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		// Signal only once the run waits, so that each signal starts a
		// turn of its own.
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
		if err := c.SignalWorkflow(ctx, "relay-1", "", "go", nil); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "noted a, noted b, noted c" {
		t.Fatalf("run: %q, %v", got, err)
	}
	// The last turn's span ends after its commit, which a client may see
	// first: stopping the worker waits for the turn to end.
	stopOK(t, w)
	history, err := c.GetWorkflowHistory(ctx, "relay-1", "")
	if err != nil {
		t.Fatal(err)
	}
	rp := worker.NewWorkflowReplayer()
	rp.RegisterWorkflow(Relay)
	if err := rp.ReplayWorkflowHistory(nil, history); err != nil {
		t.Fatal(err)
	}

	fs, err := metricstest.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if replays := fs.Value(metrics.WorkerReplays, "queue", "relay"); replays != 2 {
		t.Fatalf("%v turns replayed history, want 2: the test would not show what replays do", replays)
	}
	spans := rec.Ended()
	byName := map[string]int{}
	for _, s := range spans {
		byName[s.Name()]++
	}
	want := map[string]int{"StartWorkflow:Relay": 1, "RunWorkflow:Relay": 3, "RunActivity:Noted": 3}
	if len(byName) != len(want) {
		t.Errorf("spans by name %v, want %v", byName, want)
	}
	for name, n := range want {
		if byName[name] != n {
			t.Errorf("%d spans %s, want %d (all: %v)", byName[name], name, n, byName)
		}
	}
	// One trace: the turns are children of the start, each activity of a
	// turn.
	var start sdktrace.ReadOnlySpan
	turns := map[string]bool{}
	for _, s := range spans {
		switch s.Name() {
		case "StartWorkflow:Relay":
			start = s
		case "RunWorkflow:Relay":
			turns[s.SpanContext().SpanID().String()] = true
		}
	}
	if start == nil {
		t.Fatal("no start span")
	}
	var steps []string
	for _, s := range spans {
		if s.SpanContext().TraceID() != start.SpanContext().TraceID() {
			t.Errorf("span %s is in trace %s, not the start's %s", s.Name(), s.SpanContext().TraceID(), start.SpanContext().TraceID())
		}
		switch s.Name() {
		case "RunWorkflow:Relay":
			if s.Parent().SpanID() != start.SpanContext().SpanID() {
				t.Errorf("a turn's parent is %s, not the start", s.Parent().SpanID())
			}
		case "RunActivity:Noted":
			if !turns[s.Parent().SpanID().String()] {
				t.Errorf("an activity's parent %s is no turn", s.Parent().SpanID())
			}
			for _, a := range s.Attributes() {
				if a.Key == "heddle.step" {
					steps = append(steps, a.Value.AsString())
				}
			}
		}
	}
	sort.Strings(steps)
	if len(steps) != 3 || steps[0] == steps[1] || steps[1] == steps[2] {
		t.Errorf("activity spans of steps %v, want three different steps", steps)
	}
	if n := logs.count("running a step"); n != 3 {
		t.Errorf("the workflow logged %d lines through the worker's logger, want 3 (none in replay)", n)
	}
	if n := logs.count("noted"); n != 3 {
		t.Errorf("activity.GetLogger wrote %d lines, want 3", n)
	}
	for _, k := range []string{"workflowID", "activity_type", "step"} {
		if !logs.attr[k] {
			t.Errorf("no log line carried the attribute %s", k)
		}
	}
}
