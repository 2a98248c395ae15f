package tracing

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// source is an interceptor that hands over tracer.
type source struct{ tracer trace.Tracer }

func (s source) HeddleTracing() Settings { return Settings{Tracer: s.tracer} }

// TestTracerOf: a tracer of the options wins; else the first interceptor
// that hands one over; an interceptor that is no Source, or hands over
// nil, is passed by.
func TestTracerOf(t *testing.T) {
	// An SDK provider's tracers are pointers, distinct by name, so that
	// the comparisons below can tell them apart.
	tp := sdktrace.NewTracerProvider()
	own, first, second := tp.Tracer("own"), tp.Tracer("first"), tp.Tracer("second")
	if own == first || first == second {
		t.Fatal("the tracers cannot be told apart")
	}
	for _, tc := range []struct {
		name         string
		tracer       trace.Tracer
		interceptors []any
		want         trace.Tracer
	}{
		{"nothing", nil, nil, nil},
		{"options only", own, nil, own},
		{"options win", own, []any{source{first}}, own},
		{"first source", nil, []any{"not a source", source{nil}, source{first}, source{second}}, first},
		{"no source", nil, []any{42}, nil},
	} {
		if got := TracerOf(tc.tracer, tc.interceptors...); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
