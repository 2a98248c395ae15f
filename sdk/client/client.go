// Package client starts, signals, cancels, describes and lists workflows on
// an embedded engine, and waits for their results.
package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/internal/tracing"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Client talks to one engine. It is safe for concurrent use.
type Client struct {
	e       engine.Service
	querier Querier
	tracer  trace.Tracer // nil: no spans
}

// Querier answers queries with workflow code (a worker has it; the engine
// does not). *worker.Worker is one.
type Querier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// Options configure NewWithOptions.
type Options struct {
	// Querier answers QueryWorkflow; nil makes QueryWorkflow an error.
	Querier Querier
	// TracerProvider, if set, makes a span StartWorkflow:<type> of each
	// start. Whether or not it is set, a start records the span of its
	// context (that span, or the caller's) as the run's trace parent, so
	// the workers' spans of the run join the starter's trace.
	TracerProvider trace.TracerProvider
}

// New returns a client of e: an *engine.Engine in-process, or a remote
// service (engine/httpapi) for a node or a cluster.
func New(e engine.Service) *Client { return &Client{e: e} }

// NewWithOptions returns a client of e with opts.
func NewWithOptions(e engine.Service, opts Options) *Client {
	return &Client{e: e, querier: opts.Querier, tracer: tracing.Tracer(opts.TracerProvider)}
}

// QueryWorkflow asks a run for its state through a query handler.
func (c *Client) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	if c.querier == nil {
		return converter.EncodedValue{}, errors.New("client: QueryWorkflow needs Options.Querier (a worker that has the workflow code)")
	}
	return c.querier.QueryWorkflow(ctx, workflowID, runID, queryType, args...)
}

// IDReusePolicy decides what a start does when its workflow id has a run.
type IDReusePolicy = engine.IDReusePolicy

// The workflow-id reuse policies (see engine.IDReusePolicy).
const (
	AllowDuplicateAfterTerminal = engine.IDReuseAllowAfterTerminal
	RejectDuplicate             = engine.IDReuseRejectDuplicate
	ReturnExisting              = engine.IDReuseReturnExisting
)

// StartWorkflowOptions configure ExecuteWorkflow.
type StartWorkflowOptions struct {
	// ID is the workflow id; "" lets the engine name the run.
	ID string
	// TaskQueue is the queue whose workers run the workflow (required).
	TaskQueue string
	// WorkflowIDReusePolicy applies when ID already has a run.
	WorkflowIDReusePolicy IDReusePolicy
	// RequestID makes the start idempotent across retries of this call.
	RequestID string
	// RetryPolicy, if set, retries a failed run as a new run of the same
	// workflow id with the same input (Get follows to the last run).
	RetryPolicy *workflow.RetryPolicy
	// WorkflowExecutionTimeout bounds the whole chain of runs (retries and
	// continue-as-new included); 0: no bound. The engine enforces it: the
	// run in progress when it passes ends as TimedOut, whether or not a
	// worker is running it.
	WorkflowExecutionTimeout time.Duration
	// WorkflowRunTimeout bounds each run on its own, counted from that
	// run's start (a retry or continue-as-new gets it afresh); 0: no bound.
	WorkflowRunTimeout time.Duration
	// CronSchedule runs the workflow once per time of a cron line (UTC;
	// see docs/temporal.md): the first run waits for the first time, and
	// each run that completes or fails is followed by the next at the next
	// time, with the same arguments. workflow.GetLastCompletionResult gives
	// a run the result of the last one that completed. A run its
	// WorkflowRunTimeout ends is followed too; a cancel, a terminate or the
	// WorkflowExecutionTimeout ends the chain. Get follows the chain.
	CronSchedule string
}

// WorkflowRun is one run of a workflow.
type WorkflowRun interface {
	GetID() string
	GetRunID() string
	// Get waits for the run to end and decodes its result into valuePtr
	// (nil to ignore it); a failed run returns its error, a cancelled one
	// workflow.ErrCanceled.
	Get(ctx context.Context, valuePtr any) error
}

type run struct {
	c     *Client
	id    string
	runID engine.JobID
}

func (r *run) GetID() string    { return r.id }
func (r *run) GetRunID() string { return strconv.FormatUint(uint64(r.runID), 10) }

func (r *run) Get(ctx context.Context, valuePtr any) error {
	id := r.runID
	var j *engine.Job
	var last engine.Event
	for {
		var err error
		if j, err = r.c.e.WaitClosed(ctx, engine.Target{Job: id}); err != nil {
			return err
		}
		page, err := r.c.e.History(ctx, j.ID, j.LastSeq-1, 1)
		if err != nil {
			return err
		}
		if len(page.Events) != 1 {
			return fmt.Errorf("client: run %d has no closing event", j.ID)
		}
		last = page.Events[0]
		cronTimedOut := j.CronSchedule != "" && last.Reason == engine.ReasonRunTimeout // the chain goes on
		if last.Reason != engine.ReasonContinuedAsNew && last.Reason != engine.ReasonRetried && last.Reason != engine.ReasonCronNext && !cronTimedOut {
			break
		}
		// The run went on as a new run of the same workflow id: follow it.
		next, err := r.c.e.Describe(ctx, engine.Target{WorkflowID: j.WorkflowID})
		if err != nil {
			return err
		}
		if next.ID <= id {
			return fmt.Errorf("client: run %d continued, but no newer run of %q exists", id, j.WorkflowID)
		}
		id = next.ID
	}
	switch j.Status {
	case engine.StatusCompleted:
		if valuePtr == nil {
			return nil
		}
		return converter.Decode(last.Payload, valuePtr)
	case engine.StatusCancelled:
		return workflow.ErrCanceled
	case engine.StatusTimedOut:
		return fmt.Errorf("workflow %s run %d timed out: %w", r.id, j.ID, sdkhook.DecodeFailure(last.Payload))
	case engine.StatusTerminated:
		return fmt.Errorf("workflow %s run %d was terminated: %w", r.id, j.ID, sdkhook.DecodeFailure(last.Payload))
	default:
		return fmt.Errorf("workflow %s run %d failed: %w", r.id, j.ID, sdkhook.DecodeFailure(last.Payload))
	}
}

// ExecuteWorkflow starts a run of wf (a function or a type name) with args.
func (c *Client) ExecuteWorkflow(ctx context.Context, opts StartWorkflowOptions, wf any, args ...any) (WorkflowRun, error) {
	if opts.TaskQueue == "" {
		return nil, errors.New("client: StartWorkflowOptions.TaskQueue is required")
	}
	name, ok := wf.(string)
	if !ok {
		name = workflow.ActivityName(wf)
	}
	input, err := converter.Encode(args...)
	if err != nil {
		return nil, fmt.Errorf("client: workflow arguments: %w", err)
	}
	create := engine.CreateJob{WorkflowID: opts.ID, Type: name, Queue: opts.TaskQueue, Input: input, ReusePolicy: opts.WorkflowIDReusePolicy,
		ExecutionTimeoutMS: opts.WorkflowExecutionTimeout.Milliseconds(), RunTimeoutMS: opts.WorkflowRunTimeout.Milliseconds(),
		CronSchedule: opts.CronSchedule}
	if p := opts.RetryPolicy; p != nil {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("client: StartWorkflowOptions.RetryPolicy: %w", err)
		}
		create.Retry = &engine.RetryPolicy{InitialIntervalMS: p.InitialInterval.Milliseconds(), BackoffCoefficient: p.BackoffCoefficient,
			MaximumIntervalMS: p.MaximumInterval.Milliseconds(), MaximumAttempts: p.MaximumAttempts,
			NonRetryableErrorTypes: p.NonRetryableErrorTypes, Backoff: uint8(p.Backoff)}
	}
	create.RequestID = opts.RequestID
	ctx, span := tracing.Start(ctx, c.tracer, "StartWorkflow:"+name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("heddle.workflow_id", opts.ID), attribute.String("heddle.task_queue", opts.TaskQueue)))
	defer span.End()
	create.TraceParent = tracing.TraceParent(ctx)
	res, err := c.e.Create(ctx, create)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(attribute.String("heddle.run_id", strconv.FormatUint(uint64(res.Job), 10)))
	return &run{c: c, id: res.WorkflowID, runID: res.Job}, nil
}

// GetWorkflow returns a run by workflow id and run id ("" for the latest run).
func (c *Client) GetWorkflow(ctx context.Context, workflowID, runID string) (WorkflowRun, error) {
	j, err := c.e.Describe(ctx, target(workflowID, runID))
	if err != nil {
		return nil, err
	}
	return &run{c: c, id: j.WorkflowID, runID: j.ID}, nil
}

func target(workflowID, runID string) engine.Target {
	if id, err := strconv.ParseUint(runID, 10, 64); err == nil && id > 0 {
		return engine.Target{Job: engine.JobID(id)}
	}
	return engine.Target{WorkflowID: workflowID}
}

// SignalWorkflow sends a signal with one argument to a run.
func (c *Client) SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error {
	payload, err := converter.Encode(arg)
	if err != nil {
		return fmt.Errorf("client: signal argument: %w", err)
	}
	_, err = c.e.Signal(ctx, engine.Signal{Target: target(workflowID, runID), Name: signalName, Payload: payload})
	return err
}

// SignalWithStartWorkflow signals the open run of workflowID, starting one
// first when there is none.
func (c *Client) SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
	opts StartWorkflowOptions, wf any, args ...any) (WorkflowRun, error) {
	opts.ID = workflowID
	r, err := c.GetWorkflow(ctx, workflowID, "")
	if err == nil {
		j, derr := c.e.Describe(ctx, engine.Target{WorkflowID: workflowID})
		if derr == nil && !j.Status.Terminal() {
			return r, c.SignalWorkflow(ctx, workflowID, r.GetRunID(), signalName, signalArg)
		}
	}
	if r, err = c.ExecuteWorkflow(ctx, opts, wf, args...); err != nil {
		return nil, err
	}
	return r, c.SignalWorkflow(ctx, workflowID, r.GetRunID(), signalName, signalArg)
}

// CancelWorkflow asks a run to cancel itself: its context is cancelled and
// the workflow decides how to end.
func (c *Client) CancelWorkflow(ctx context.Context, workflowID, runID string) error {
	_, err := c.e.RequestCancel(ctx, engine.RequestCancel{Target: target(workflowID, runID)})
	return err
}

// TerminateWorkflow ends a run at once, without running workflow code.
func (c *Client) TerminateWorkflow(ctx context.Context, workflowID, runID, reason string) error {
	_, err := c.e.Terminate(ctx, engine.Terminate{Target: target(workflowID, runID), Reason: reason})
	return err
}

// DescribeWorkflow returns a run's record.
func (c *Client) DescribeWorkflow(ctx context.Context, workflowID, runID string) (*engine.Job, error) {
	return c.e.Describe(ctx, target(workflowID, runID))
}

// GetWorkflowHistory returns a run's whole history.
func (c *Client) GetWorkflowHistory(ctx context.Context, workflowID, runID string) ([]engine.Event, error) {
	j, err := c.e.Describe(ctx, target(workflowID, runID))
	if err != nil {
		return nil, err
	}
	var all []engine.Event
	for after := uint64(0); ; {
		page, err := c.e.History(ctx, j.ID, after, engine.MaxPage)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Events...)
		if page.Next == 0 {
			return all, nil
		}
		after = page.Next
	}
}

// ListWorkflows returns one page of runs matching q.
func (c *Client) ListWorkflows(ctx context.Context, q engine.ListQuery) (*engine.ListPage, error) {
	return c.e.List(ctx, q)
}
