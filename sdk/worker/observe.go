package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/tracing"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// observer is what a worker reports to: its metrics, its tracer and its
// loggers. Every span it starts is of work the worker does now — a turn,
// an activity's try, the creation of a remote step — never of history
// being replayed, so a replay adds no span.
type observer struct {
	queue  string
	m      *metrics.Metrics
	tracer trace.Tracer // nil: no spans
	// log gets the worker's own messages: Options.Logger, or nothing.
	log *slog.Logger
	// base is what workflow and activity loggers write through:
	// Options.Logger, or slog.Default().
	base *slog.Logger
}

func newObserver(queue string, o Options) observer {
	obs := observer{queue: queue, m: o.Metrics, tracer: tracing.TracerOf(tracing.Tracer(o.TracerProvider), interceptorValues(o.Interceptors)...), log: o.Logger, base: o.Logger}
	if obs.log == nil {
		obs.log = slog.New(slog.NewTextHandler(io.Discard, nil))
		obs.base = slog.Default()
	}
	return obs
}

// unregistered labels the metrics of a type this worker has no code for,
// so that names sent by others cannot grow the series.
const unregistered = "unregistered"

// turn is one turn being observed.
type turn struct {
	o     *observer
	job   engine.ClaimedJob
	typ   string // registered workflow type, or unregistered; "" for a task
	span  trace.Span
	start time.Time
}

// startTurn starts observing the turn of a claimed job: for a workflow, a
// span RunWorkflow:<type> under the trace that started the run; for an
// activity task, only that trace, which the activity's span joins.
func (o *observer) startTurn(ctx context.Context, j engine.ClaimedJob, isTask, registered bool) (context.Context, *turn) {
	ctx = tracing.WithTraceParent(ctx, j.TraceParent)
	t := &turn{o: o, job: j}
	if o.m != nil {
		t.start = time.Now()
	}
	if isTask {
		_, t.span = tracing.Start(ctx, nil, "")
		return ctx, t
	}
	t.typ = j.Type
	if !registered {
		t.typ = unregistered
	}
	ctx, t.span = tracing.Start(ctx, o.tracer, "RunWorkflow:"+j.Type, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(jobAttributes(o.queue, j)...))
	return ctx, t
}

func jobAttributes(queue string, j engine.ClaimedJob) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("heddle.workflow_id", j.WorkflowID),
		attribute.String("heddle.run_id", strconv.FormatUint(uint64(j.Job), 10)),
		attribute.String("heddle.task_queue", queue),
		attribute.Int64("heddle.attempt", int64(j.Attempt)),
	}
}

// end records the turn's end with the error that ended it, if any.
func (t *turn) end(err error) {
	o := t.o
	if err != nil && !errors.Is(err, context.Canceled) {
		o.m.TurnError(o.queue)
		o.log.Warn("turn ended with an error; the job is left to its lease", "queue", o.queue,
			"workflow_id", t.job.WorkflowID, "job", uint64(t.job.Job), "attempt", t.job.Attempt, "error", err)
		t.span.RecordError(err)
		t.span.SetStatus(codes.Error, err.Error())
	}
	if t.typ != "" && o.m != nil {
		o.m.Turn(o.queue, t.typ, time.Since(t.start))
	}
	t.span.End()
}

// cacheLookup records whether a turn found its execution cached, and when
// it did not, whether it replays the history of earlier turns (a first
// attempt has none to replay).
func (o *observer) cacheLookup(j engine.ClaimedJob, hit bool) {
	o.m.CacheLookup(o.queue, hit)
	if !hit && j.Attempt > 1 {
		o.m.Replay(o.queue, j.LastSeq)
	}
}

// faulted records a run stopped by its code (nondeterminism counted).
func (o *observer) faulted(typ string, fault error) {
	if fault == nil {
		return
	}
	if errors.Is(fault, replay.ErrNondeterminism) {
		o.m.Nondeterminism(o.queue, typ)
	}
	o.log.Error("workflow code stopped its run", "queue", o.queue, "workflow_type", typ, "error", fault)
}

// startActivity starts observing one try of an activity: a span
// RunActivity:<name>, a child of the turn's (or the task's trace).
func (o *observer) startActivity(ctx context.Context, info *activityInfo) (context.Context, func(error)) {
	ctx, span := tracing.Start(ctx, o.tracer, "RunActivity:"+info.name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("heddle.activity_type", info.name), attribute.String("heddle.step", info.step),
			attribute.Int("heddle.activity_attempt", info.attempt), attribute.String("heddle.workflow_id", info.workflowID)))
	var start time.Time
	if o.m != nil {
		start = time.Now()
	}
	return ctx, func(err error) {
		outcome := activityOutcome(ctx, err)
		if o.m != nil {
			name := info.name
			if !info.registered {
				name = unregistered
			}
			o.m.Activity(o.queue, name, outcome, time.Since(start))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			// As Temporal, a benign failure is logged at Debug only.
			level := slog.LevelWarn
			if outcome == "benign" {
				level = slog.LevelDebug
			}
			o.log.Log(ctx, level, "activity try failed", "queue", o.queue, "activity_type", info.name,
				"workflow_id", info.workflowID, "step", info.step, "attempt", info.attempt, "outcome", outcome, "error", err)
		}
		span.SetAttributes(attribute.String("heddle.outcome", outcome))
		span.End()
	}
}

// activityInfo is what startActivity labels a try with.
type activityInfo struct {
	name, step, workflowID string
	attempt                int
	registered             bool
}

// activityOutcome names how a try ended, for the metrics: a failure the
// activity marked benign (temporal.ApplicationErrorCategoryBenign) is
// "benign", not "failed", so that it raises no alert.
func activityOutcome(ctx context.Context, err error) string {
	if err == nil {
		return "completed"
	}
	if temporal.IsTimeoutError(err) {
		return "timeout"
	}
	if ctx.Err() != nil {
		return "canceled"
	}
	if isBenign(err) {
		return "benign"
	}
	return "failed"
}

// isBenign reports an error whose first application error is of the benign
// category.
func isBenign(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Category() == temporal.ApplicationErrorCategoryBenign
}

// startRemote starts the span of creating a remote step's job
// (StartActivity:<name> or StartChildWorkflow:<name>) and returns the
// traceparent the job carries: that span's, or the turn's when the worker
// traces nothing (the caller's own tracing may still see it).
func (o *observer) startRemote(ctx context.Context, child bool, name string) (context.Context, trace.Span, string) {
	op := "StartActivity:"
	if child {
		op = "StartChildWorkflow:"
	}
	ctx, span := tracing.Start(ctx, o.tracer, op+name, trace.WithSpanKind(trace.SpanKindProducer))
	return ctx, span, tracing.TraceParent(ctx)
}

// activityLogger is the logger activity.GetLogger returns: the worker's,
// with the activity's attributes.
func (o *observer) activityLogger(info *activityInfo, runID string) *slog.Logger {
	return o.base.With("activity_type", info.name, "workflow_id", info.workflowID, "run_id", runID,
		"step", info.step, "attempt", info.attempt)
}
