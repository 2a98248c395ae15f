package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the tracer of the API's server spans.
const tracerName = "github.com/heddlewf/heddle/engine/httpapi"

// traceContext is the W3C Trace Context propagator (the traceparent and
// tracestate headers): the Client sends the caller's span with every
// request, the Server continues it, and a forward to the leader carries it
// on. It is used whatever global propagator the program set, so heddle's
// own hops always join up.
var traceContext = propagation.TraceContext{}

// traceHeaders are the headers traceContext reads and writes, forwarded to
// the leader as they came when the node itself traces nothing.
var traceHeaders = []string{"Traceparent", "Tracestate"}

// instrument wraps next with the metrics and server spans of cfg; with
// neither configured it returns next itself, at no cost.
func instrument(cfg ServerConfig, next http.Handler) http.Handler {
	m := cfg.Metrics
	var tracer trace.Tracer
	if cfg.TracerProvider != nil {
		tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	if m == nil && tracer == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.HTTPStarted()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		var span trace.Span
		if tracer != nil {
			ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span = tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(rec, r)
		// The mux wrote the pattern it matched into r: a route, never the
		// raw path, whose ids would make a series each.
		route := r.Pattern
		if route == "" {
			route = "none" // refused before routing (no token)
		}
		m.HTTPDone(route, rec.code, time.Since(start))
		if span != nil {
			span.SetName(route)
			span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", rec.code))
			if rec.code >= http.StatusInternalServerError {
				span.SetStatus(codes.Error, http.StatusText(rec.code))
			}
			span.End()
		}
	})
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code    int
	written bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.written {
		s.code, s.written = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.written = true
	return s.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// injectTrace writes the span of ctx into h as W3C headers; without a span
// it leaves h alone.
func injectTrace(ctx context.Context, h http.Header) {
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
}

// logFailure logs a failed answer: server errors (5xx but the retryable
// 503s, which clients retry, and the 501s of routes this node does not
// serve, such as the cluster's on a node that runs alone, which the web
// console asks on every view) at Error, the rest at Debug.
func (c *call) logFailure(status int, body ErrorBody) {
	l := c.s.cfg.Logger
	if l == nil {
		return
	}
	level := slog.LevelDebug
	if status >= http.StatusInternalServerError && status != http.StatusServiceUnavailable && status != http.StatusNotImplemented {
		level = slog.LevelError
	}
	l.LogAttrs(c.r.Context(), level, "request failed", slog.String("method", c.r.Method), slog.String("path", c.r.URL.Path),
		slog.Int("status", status), slog.String("error", body.Name), slog.String("message", body.Message))
}
