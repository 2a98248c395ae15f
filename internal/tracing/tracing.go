// Package tracing carries W3C trace context through heddle's jobs, so that the spans of a run's turns and activities join the trace that started it.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of the SDK's tracers.
const Scope = "github.com/heddlewf/heddle/sdk"

var w3c = propagation.TraceContext{}

// TraceParent returns the W3C traceparent of the span in ctx, or "" when
// ctx carries no valid span context.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c.Get("traceparent")
}

// WithTraceParent returns ctx with the remote span context traceparent
// names as the parent of the spans started under it; a malformed or empty
// traceparent leaves ctx as it is.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Tracer returns the SDK's tracer of tp, or nil when tp is nil (no spans).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(Scope)
}

// noSpan is a span that records nothing, for code that ends whatever span
// it started.
var noSpan = trace.SpanFromContext(context.Background())

// Start starts a span named name under ctx with tracer, or, when tracer is
// nil, returns ctx and a span that records nothing (never ctx's own span,
// which the caller would end).
func Start(ctx context.Context, tracer trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, noSpan
	}
	return tracer.Start(ctx, name, opts...)
}

// Settings is what an interceptor of sdk/contrib/opentelemetry gives the
// client and the workers it reaches: the tracer of their own spans. It is
// a type of this internal package so that only heddle's packages can hand
// one over.
type Settings struct {
	// Tracer makes the spans; nil makes none.
	Tracer trace.Tracer
}

// Source is implemented by an interceptor that turns on the SDK's spans.
type Source interface {
	HeddleTracing() Settings
}

// TracerOf returns tracer when it is set, else the tracer of the first of
// interceptors that is a Source, else nil: a tracer provider set in the
// options wins over an interceptor, so that no span is made twice.
func TracerOf(tracer trace.Tracer, interceptors ...any) trace.Tracer {
	if tracer != nil {
		return tracer
	}
	for _, ic := range interceptors {
		if s, ok := ic.(Source); ok {
			if t := s.HeddleTracing().Tracer; t != nil {
				return t
			}
		}
	}
	return nil
}
