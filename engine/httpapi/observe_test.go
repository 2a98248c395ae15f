package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
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
)

// The probes answer without the token a server requires; /metrics and
// the API do not.
func TestProbesNeedNoToken(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	_, hs := serve(t, ServerConfig{Service: openEngine(t, engine.Limits{}), AuthToken: "secret", Metrics: m})
	auth := map[string]string{"Authorization": "Bearer secret"}
	cases := []struct {
		path    string
		headers map[string]string
		want    int
	}{
		{"/healthz", nil, http.StatusOK},
		{"/readyz", nil, http.StatusOK},
		{"/metrics", nil, http.StatusUnauthorized},
		{"/metrics", auth, http.StatusOK},
		{"/v1/jobs", nil, http.StatusUnauthorized},
		{"/v1/jobs", auth, http.StatusOK},
	}
	for _, c := range cases {
		if r := doRaw(t, http.MethodGet, hs.URL+c.path, nil, c.headers); r.status != c.want {
			t.Errorf("GET %s with %v: %d, want %d", c.path, c.headers, r.status, c.want)
		}
	}
	// Without Metrics there is no /metrics.
	_, plain := serve(t, ServerConfig{Service: openEngine(t, engine.Limits{})})
	if r := doRaw(t, http.MethodGet, plain.URL+"/metrics", nil, nil); r.status != http.StatusNotFound {
		t.Errorf("GET /metrics without Metrics: %d, want 404", r.status)
	}
}

// /readyz answers what the engine, the cluster or ServerConfig.Ready say;
// the client's Ready maps a refusal back to ErrNotReady.
func TestReadyz(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	if err := c.Ready(context.Background()); err != nil {
		t.Fatalf("an open engine: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	err = c.Ready(context.Background())
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("a closed engine: %v, want ErrNotReady", err)
	}
	if err := c.Live(context.Background()); err != nil {
		t.Fatalf("/healthz of a server whose engine closed: %v", err)
	}
	var mu sync.Mutex
	why := errors.New("draining")
	_, hs = serve(t, ServerConfig{Service: openEngine(t, engine.Limits{}), Ready: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return why
	}})
	r := doRaw(t, http.MethodGet, hs.URL+"/readyz", nil, nil)
	if b := errorBodyOf(t, r); r.status != http.StatusServiceUnavailable || b.Name != "not_ready" {
		t.Fatalf("/readyz with Ready failing: %d %+v", r.status, b)
	}
}

// A request's server span continues the trace of the caller's span, which
// the Client sends as a W3C traceparent; the span is named after the route
// pattern. The metrics count the request under that pattern too.
func TestServerSpansContinueTheCallersTrace(t *testing.T) {
	serverSpans := tracetest.NewSpanRecorder()
	serverTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(serverSpans))
	callerTP := sdktrace.NewTracerProvider()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e, TracerProvider: serverTP, Metrics: m})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, caller := callerTP.Tracer("test").Start(context.Background(), "caller")
	res, err := c.Create(ctx, engine.CreateJob{Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Describe(ctx, engine.Target{Job: res.Job}); err != nil {
		t.Fatal(err)
	}
	caller.End()
	spans := serverSpans.Ended()
	names := map[string]trace.SpanKind{}
	for _, s := range spans {
		names[s.Name()] = s.SpanKind()
		if s.Parent().SpanID() != caller.SpanContext().SpanID() || s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
			t.Errorf("server span %s: parent %s in trace %s, want the caller %s in %s", s.Name(),
				s.Parent().SpanID(), s.SpanContext().TraceID(), caller.SpanContext().SpanID(), caller.SpanContext().TraceID())
		}
	}
	if len(spans) != 2 || names["POST /v1/jobs"] != trace.SpanKindServer || names["GET /v1/jobs/{job}"] != trace.SpanKindServer {
		t.Fatalf("server spans %v, want POST /v1/jobs and GET /v1/jobs/{job}", names)
	}
	fs, err := metricstest.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Value(metrics.HTTPRequests, "route", "GET /v1/jobs/{job}", "code", "200") != 1 || fs.Value(metrics.HTTPRequestSeconds, "route", "POST /v1/jobs") != 1 {
		t.Fatalf("requests by route: %v", fs.LabelValues(metrics.HTTPRequests, "route"))
	}
}

// A follower forwards the caller's traceparent to the leader, continued
// by its own span when it traces.
func TestForwardCarriesTheTrace(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Traceparent"))
		mu.Unlock()
		http.Error(w, "gone", http.StatusBadGateway)
	}))
	defer leader.Close()
	f := &follower{}
	f.setLeader(hostOf(leader.URL))
	followerSpans := tracetest.NewSpanRecorder()
	_, hs := serve(t, ServerConfig{Service: f, TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(followerSpans))})
	ctx, caller := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "caller")
	defer caller.End()
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}, RetryTimeout: time.Millisecond})
	_, _ = c.Create(ctx, engine.CreateJob{Type: "t", Queue: "q"}) // the fake leader answers 502: only its headers matter
	mu.Lock()
	defer mu.Unlock()
	spans := followerSpans.Ended()
	if len(seen) == 0 || len(spans) == 0 {
		t.Fatalf("forwarded %d requests, %d follower spans", len(seen), len(spans))
	}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	trace := caller.SpanContext().TraceID().String()
	for _, tp := range seen {
		if len(tp) != 55 || tp[3:35] != trace || !ids[tp[36:52]] {
			t.Errorf("forwarded traceparent %q, want one of the follower's spans %v in trace %s", tp, ids, trace)
		}
	}
}

// recordLevels is a slog handler that keeps the levels of what is logged.
type recordLevels struct {
	mu     sync.Mutex
	levels []slog.Level
}

func (r *recordLevels) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordLevels) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.levels = append(r.levels, rec.Level)
	return nil
}
func (r *recordLevels) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recordLevels) WithGroup(string) slog.Handler      { return r }

// A cluster route asked of a node that runs alone answers 501, which is no
// failure of the server: it is logged at Debug, not Error (the web
// console's cluster page asks it on every view of heddle dev, which logged
// an ERROR each time).
func TestNoClusterIsNotLoggedAsAnError(t *testing.T) {
	rec := &recordLevels{}
	_, hs := serve(t, ServerConfig{Service: openEngine(t, engine.Limits{}), Logger: slog.New(rec)})
	resp, err := http.Get(hs.URL + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Fatalf("GET /v1/cluster: %d", resp.StatusCode)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.levels) == 0 {
		t.Fatal("the 501 was not logged at all")
	}
	for _, l := range rec.levels {
		if l >= slog.LevelError {
			t.Errorf("the 501 was logged at %v", l)
		}
	}
}
