// Package opentelemetry traces a client and its workers with OpenTelemetry through one interceptor, as Temporal's contrib/opentelemetry does, so that code passing NewTracingInterceptor's result in client.Options.Interceptors ports by swapping imports.
//
// The interceptor does not make a second set of spans beside heddle's own:
// it hands its tracer to the client and to every worker made from that
// client (it is an interceptor.Interceptor, and a client's interceptors
// that are worker interceptors reach its workers), and they make the spans
// docs/observability.md describes — StartWorkflow:<type> for each start,
// RunWorkflow:<type> for each turn of a run, RunActivity:<name> for each
// try of an activity, StartActivity:<name> and StartChildWorkflow:<name>
// for remote steps. Those spans already carry the run's trace across the
// engine, the HTTP API and worker crashes, and are of work done now, never
// of history replayed, so a worker without a cache adds none; a second
// implementation in workflow interceptors would have to solve all of that
// again, and would duplicate every span of a program that also sets
// TracerProvider. An activity's context holds its RunActivity span, so a
// span the activity starts from it is that span's child.
//
// What heddle's own spans do not cover, the interceptor adds on the client
// side: SignalWorkflow:<name>, SignalWithStartWorkflow:<type>,
// QueryWorkflow:<name> and UpdateWorkflow:<name>, each around the call
// (the first three turned off by TracerOptions' Disable… fields).
//
// A client or worker whose Options.TracerProvider is set keeps its own
// tracer: the interceptor's is used only where none is set.
package opentelemetry

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/internal/tracing"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/interceptor"
)

// TracerOptions configures NewTracingInterceptor. The zero value is valid:
// the global tracer provider's tracer, everything traced.
//
// Temporal's fields about carrying spans in workflow headers
// (TextMapPropagator, HeaderKey, SpanContextKey, DisableBaggage,
// AllowInvalidParentSpans, SpanStarter) have no counterpart: heddle
// carries the W3C traceparent on the job itself.
type TracerOptions struct {
	// Tracer makes the spans. Nil means the tracer of OpenTelemetry's
	// global provider (otel.GetTracerProvider), which follows a provider
	// set later with otel.SetTracerProvider.
	Tracer trace.Tracer
	// DisableSignalTracing: no SignalWorkflow spans. SignalWithStart is a
	// start and is traced all the same.
	DisableSignalTracing bool
	// DisableQueryTracing: no QueryWorkflow spans.
	DisableQueryTracing bool
	// DisableUpdateTracing: no UpdateWorkflow spans.
	DisableUpdateTracing bool
}

// NewTracingInterceptor returns the interceptor that traces a client and
// the workers made from it; give it to client.Options.Interceptors (or,
// for a worker whose client has no interceptor, worker.Options.Interceptors).
// It returns no error today; the error is Temporal's signature.
func NewTracingInterceptor(options TracerOptions) (interceptor.Interceptor, error) {
	if options.Tracer == nil {
		options.Tracer = otel.GetTracerProvider().Tracer(tracing.Scope)
	}
	return &tracingInterceptor{opts: options}, nil
}

// tracingInterceptor is the interceptor: its client side wraps the calls
// heddle's spans do not cover; its worker side adds nothing to the chains
// and serves only to hand the workers its tracer.
type tracingInterceptor struct {
	interceptor.InterceptorBase
	opts TracerOptions
}

var _ tracing.Source = (*tracingInterceptor)(nil)

// HeddleTracing gives the client and the workers the interceptor's tracer.
func (t *tracingInterceptor) HeddleTracing() tracing.Settings {
	return tracing.Settings{Tracer: t.opts.Tracer}
}

func (t *tracingInterceptor) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	return &clientOutbound{ClientOutboundInterceptorBase: interceptor.ClientOutboundInterceptorBase{Next: next}, opts: &t.opts}
}

// clientOutbound makes the client-side spans of signals, queries and
// updates. It is shared by all of a client's goroutines and keeps no state.
type clientOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	opts *TracerOptions
}

// start starts a client span named op:name for a workflow; the caller
// ends it with finish.
func (c *clientOutbound) start(ctx context.Context, op, name, workflowID, runID string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attribute.String("heddle.workflow_id", workflowID)}
	if runID != "" {
		attrs = append(attrs, attribute.String("heddle.run_id", runID))
	}
	return c.opts.Tracer.Start(ctx, op+":"+name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// finish records err, if any, on span and ends it.
func finish(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (c *clientOutbound) SignalWorkflow(ctx context.Context, in *interceptor.ClientSignalWorkflowInput) error {
	if c.opts.DisableSignalTracing {
		return c.Next.SignalWorkflow(ctx, in)
	}
	ctx, span := c.start(ctx, "SignalWorkflow", in.SignalName, in.WorkflowID, in.RunID)
	err := c.Next.SignalWorkflow(ctx, in)
	finish(span, err)
	return err
}

func (c *clientOutbound) SignalWithStartWorkflow(ctx context.Context, in *interceptor.ClientSignalWithStartWorkflowInput) (client.WorkflowRun, error) {
	workflowID := ""
	if in.Options != nil {
		workflowID = in.Options.ID
	}
	ctx, span := c.start(ctx, "SignalWithStartWorkflow", in.WorkflowType, workflowID, "")
	span.SetAttributes(attribute.String("heddle.signal", in.SignalName))
	run, err := c.Next.SignalWithStartWorkflow(ctx, in)
	if err == nil && run != nil {
		span.SetAttributes(attribute.String("heddle.run_id", run.GetRunID()))
	}
	finish(span, err)
	return run, err
}

func (c *clientOutbound) QueryWorkflow(ctx context.Context, in *interceptor.ClientQueryWorkflowInput) (converter.EncodedValue, error) {
	if c.opts.DisableQueryTracing {
		return c.Next.QueryWorkflow(ctx, in)
	}
	ctx, span := c.start(ctx, "QueryWorkflow", in.QueryType, in.WorkflowID, in.RunID)
	v, err := c.Next.QueryWorkflow(ctx, in)
	finish(span, err)
	return v, err
}

func (c *clientOutbound) UpdateWorkflow(ctx context.Context, in *interceptor.ClientUpdateWorkflowInput) (client.WorkflowUpdateHandle, error) {
	if c.opts.DisableUpdateTracing {
		return c.Next.UpdateWorkflow(ctx, in)
	}
	ctx, span := c.start(ctx, "UpdateWorkflow", in.UpdateName, in.WorkflowID, in.RunID)
	h, err := c.Next.UpdateWorkflow(ctx, in)
	finish(span, err)
	return h, err
}
