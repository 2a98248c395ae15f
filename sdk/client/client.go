// Package client starts, signals, queries, cancels, describes and lists
// workflows, and waits for their results, on an embedded engine or on a
// heddle node over HTTP.
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/internal/tracing"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Sentinel errors of the package, matched with errors.Is.
var (
	// ErrClientClosed: the client was closed before the call.
	ErrClientClosed = errors.New("client: closed")
	// ErrNoQuerier: no worker that could answer a query (or validate an
	// update) came to this process before the call's deadline (see
	// Options.Querier); the error matches context.DeadlineExceeded too.
	ErrNoQuerier = errors.New("client: no querier")
)

// DefaultHostPort is the address Dial uses when Options.HostPort is empty:
// a heddle node (`heddle dev`, or a cluster node) on this machine.
const DefaultHostPort = "localhost:7280"

// DefaultNamespace is the only namespace heddle has.
const DefaultNamespace = "default"

// QueryTypeStackTrace is the query every workflow answers, as in Temporal:
// where each of its coroutines blocks, as text, in the workflow code's own
// files and lines ("heddle workflow stack" asks it).
const QueryTypeStackTrace = workflow.StackTraceQuery

// Client talks to heddle: an embedded engine or a node over HTTP. It is
// Temporal's client.Client with the methods heddle has, plus
// DescribeWorkflow, GetWorkflowHistory and ListWorkflows in heddle's
// shapes. It is safe for concurrent use.
type Client interface {
	// ExecuteWorkflow starts a run of workflow (a function or a type name)
	// with args. When options.ID has an open run already, it returns that
	// run, as Temporal does, unless
	// options.WorkflowExecutionErrorWhenAlreadyStarted.
	ExecuteWorkflow(ctx context.Context, options StartWorkflowOptions, workflow any, args ...any) (WorkflowRun, error)
	// GetWorkflow returns a run by workflow id and run id ("" for the
	// latest run). Errors (an unknown id) are Get's.
	GetWorkflow(ctx context.Context, workflowID, runID string) WorkflowRun
	// SignalWorkflow sends a signal with one argument to a run.
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
	// SignalWithStartWorkflow signals the open run of workflowID, starting
	// one first when there is none.
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options StartWorkflowOptions, workflow any, workflowArgs ...any) (WorkflowRun, error)
	// CancelWorkflow asks a run to cancel itself: its context is cancelled
	// and the workflow decides how to end.
	CancelWorkflow(ctx context.Context, workflowID, runID string) error
	// TerminateWorkflow ends a run at once, without running workflow code.
	TerminateWorkflow(ctx context.Context, workflowID, runID, reason string, details ...any) error
	// ResetWorkflowExecution resets a run to a turn boundary of its
	// history: a new run of the workflow id replays the history up to the
	// point with the signals and updates received after it, and goes on;
	// the run it replaces, if open, ends as Terminated (reset.go).
	ResetWorkflowExecution(ctx context.Context, request *ResetWorkflowExecutionRequest) (*ResetWorkflowExecutionResponse, error)
	// QueryWorkflow asks a run for its state through a query handler.
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
	// DescribeWorkflow returns a run's record.
	DescribeWorkflow(ctx context.Context, workflowID, runID string) (*engine.Job, error)
	// GetWorkflowHistory returns a run's whole history.
	GetWorkflowHistory(ctx context.Context, workflowID, runID string) ([]engine.Event, error)
	// ListWorkflows returns one page of runs matching q, in heddle's
	// shapes (engine.ListQuery: filters, a list-filter Query, an order, page
	// tokens both ways).
	ListWorkflows(ctx context.Context, q engine.ListQuery) (*engine.ListPage, error)
	// ListWorkflow and CountWorkflow are Temporal's: one page of the runs a
	// list-filter query matches (newest first), and how many match
	// (list.go).
	ListWorkflow(ctx context.Context, request *ListWorkflowExecutionsRequest) (*ListWorkflowExecutionsResponse, error)
	CountWorkflow(ctx context.Context, request *CountWorkflowExecutionsRequest) (*CountWorkflowExecutionsResponse, error)
	// UpdateWorkflow sends an update to a run and waits for the stage
	// options.WaitForStage names.
	UpdateWorkflow(ctx context.Context, options UpdateWorkflowOptions) (WorkflowUpdateHandle, error)
	// NewWithStartWorkflowOperation, UpdateWithStartWorkflow and
	// GetWorkflowUpdateHandle are Temporal's update-with-start and update
	// handles (updatestart.go).
	NewWithStartWorkflowOperation(options StartWorkflowOptions, workflow any, args ...any) WithStartWorkflowOperation
	UpdateWithStartWorkflow(ctx context.Context, options UpdateWithStartWorkflowOptions) (WorkflowUpdateHandle, error)
	GetWorkflowUpdateHandle(ref GetWorkflowUpdateHandleOptions) WorkflowUpdateHandle
	// RecordActivityHeartbeat and RecordActivityHeartbeatByID heartbeat an
	// activity completed asynchronously (heartbeat.go).
	RecordActivityHeartbeat(ctx context.Context, taskToken []byte, details ...any) error
	RecordActivityHeartbeatByID(ctx context.Context, namespace, workflowID, runID, activityID string, details ...any) error
	// ScheduleClient manages schedules.
	ScheduleClient() ScheduleClient
	// CompleteActivity ends an activity that returned
	// activity.ErrResultPending, by the task token of its Info.
	CompleteActivity(ctx context.Context, taskToken []byte, result any, err error) error
	// CompleteActivityByID is CompleteActivity by workflow id, run id ("":
	// the latest) and activity id (its step).
	CompleteActivityByID(ctx context.Context, namespace, workflowID, runID, activityID string, result any, err error) error
	// ReviewClient holds the human commands and reads of review tasks.
	ReviewClient
	// TaskClient holds the same under their former names.
	//
	// Deprecated: use the methods of ReviewClient.
	TaskClient
	// StepClient holds the steps' reads and answers and the resource pool.
	StepClient
	// PauseClient holds the pause of a run and the operations on its
	// activities (pause.go).
	PauseClient
	// TaskQueueClient describes task queues: pollers, backlog, rates, and
	// why a Queued run waits.
	TaskQueueClient
	// BatchClient runs batch operations over the runs a query matches.
	BatchClient
	// Close releases the client; calls after it fail with ErrClientClosed.
	// An engine given as Options.Service stays open: it is the caller's.
	Close()
}

// Querier answers queries with workflow code (a worker has it; the engine
// does not). A worker.Worker is one, and so is a Client. A client of a node
// needs none: it asks the node, which asks the workers that serve its
// queries.
type Querier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// Credentials authenticate a client to a heddle node.
type Credentials interface {
	token() string
}

type apiKey string

func (k apiKey) token() string { return string(k) }

// NewAPIKeyStaticCredentials returns credentials that send apiKey as a
// bearer token: the token a node was started with (heddle server --token).
func NewAPIKeyStaticCredentials(apiKey string) Credentials { return apiKeyOf(apiKey) }

func apiKeyOf(k string) apiKey { return apiKey(k) }

// HeadersProvider gives the headers of a client's requests, as Temporal's
// does (there, gRPC metadata; here, HTTP headers). GetHeaders is called
// before each request, with its context, possibly from several
// goroutines at once; an error fails the request.
type HeadersProvider interface {
	GetHeaders(ctx context.Context) (map[string]string, error)
}

// Options configure Dial and NewWithOptions. The zero value dials
// DefaultHostPort.
type Options struct {
	// HostPort is the heddle node Dial talks to over HTTP: "host:port" or a
	// base URL ("https://host:port"). "" means DefaultHostPort. Ignored
	// when Service is set.
	HostPort string
	// Service, if set, is what the client talks to instead of HostPort:
	// an embedded engine (*embedded.Engine) or any engine.Service.
	Service engine.Service
	// Namespace must be "" or "default": heddle has no namespaces.
	Namespace string
	// Credentials, if set, authenticate to the node (a bearer token).
	Credentials Credentials
	// ConnectionOptions configure the connection to HostPort (TLS).
	ConnectionOptions ConnectionOptions
	// HeadersProvider, if set, gives the headers sent with every request
	// to HostPort, asked afresh for each (Temporal's HeadersProvider): an
	// "authorization" header of "Bearer <token>" authenticates as
	// Credentials does, with a token it may renew. Its headers are set
	// over Credentials'. Not used with Service.
	HeadersProvider HeadersProvider
	// Identity names this process; workers made from the client take it
	// as their default identity.
	Identity string
	// Logger is the default logger of the workers made from the client, as
	// Temporal's log.Logger: a *slog.Logger, a log.NewStructuredLogger, or
	// any other implementation (the workers write to it through log.Slog).
	Logger log.Logger
	// Querier answers QueryWorkflow and validates updates. Nil means: a
	// worker of the run's queue in this process made from a client of the
	// same service, else (over HTTP) the node, which asks the workers that
	// serve its queries; with neither, the call waits for one until its
	// context's deadline.
	Querier Querier
	// DataConverter, if set, encodes the values the client and the workers
	// made from it store (see converter.EncodeData): a
	// converter.NewCodecDataConverter with an encryption or compression
	// codec, as in Temporal. Nil means converter.GetDefaultDataConverter.
	// docs/temporal.md says which payloads it covers.
	DataConverter converter.DataConverter
	// FailureConverter, if set, turns the errors the client and the
	// workers made from it store into failures and back (Temporal's
	// FailureConverter, over heddle's converter.Failure): for example
	// temporal.NewDefaultFailureConverter with EncodeCommonAttributes,
	// which stores messages and stack traces through a data converter's
	// codecs. Nil means temporal.GetDefaultFailureConverter.
	FailureConverter converter.FailureConverter
	// TracerProvider, if set, makes a span StartWorkflow:<type> of each
	// start. Whether or not it is set, a start records the span of its
	// context (that span, or the caller's) as the run's trace parent, so
	// the workers' spans of the run join the starter's trace. Nil: the
	// tracer of a tracing interceptor of sdk/contrib/opentelemetry among
	// Interceptors, if there is one, else no spans.
	TracerProvider trace.TracerProvider
	// Interceptors wrap the client's calls (ExecuteWorkflow, signals,
	// queries, updates, cancel, terminate), the first the outermost; use
	// package interceptor. Nil: none, and the calls cost nothing extra.
	// As in Temporal, those that are also interceptor.WorkerInterceptor
	// values wrap the workers made from this client too, outside the
	// workers' own.
	Interceptors []Interceptor
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	if o.Namespace != "" && o.Namespace != DefaultNamespace {
		return fmt.Errorf("client: Options.Namespace %q: heddle has no namespaces, only %q", o.Namespace, DefaultNamespace)
	}
	for i, ic := range o.Interceptors {
		if ic == nil {
			return fmt.Errorf("client: Options.Interceptors[%d] is nil", i)
		}
	}
	return nil
}

// dialTimeout bounds Dial's check that the node answers.
const dialTimeout = 10 * time.Second

// Dial returns a client of a heddle node over HTTP (Options.HostPort), or
// of Options.Service. Like Temporal's, it checks that the node answers
// before returning.
func Dial(options Options) (Client, error) {
	return DialContext(context.Background(), options)
}

// DialContext is Dial whose check that the node answers also ends when ctx
// does.
func DialContext(ctx context.Context, options Options) (Client, error) {
	if err := options.Validate(); err != nil {
		return nil, err
	}
	if options.Service != nil {
		return NewWithOptions(options.Service, options), nil
	}
	addr := options.HostPort
	if addr == "" {
		addr = DefaultHostPort
	}
	cfg := httpapi.ClientConfig{Addrs: []string{addr}, TLS: options.ConnectionOptions.TLS}
	if options.Credentials != nil {
		cfg.Token = options.Credentials.token()
	}
	if options.HeadersProvider != nil {
		cfg.Headers = options.HeadersProvider.GetHeaders
	}
	hc, err := httpapi.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if options.ConnectionOptions.DisableHealthCheck {
		return NewWithOptions(hc, options), nil
	}
	if err := hc.Live(ctx); err != nil {
		return nil, fmt.Errorf("client: dial %s: the node does not answer: %w", addr, err)
	}
	return NewWithOptions(hc, options), nil
}

// New returns a client of e: an *embedded.Engine in-process, or a remote
// service (engine/httpapi) for a node or a cluster.
func New(e engine.Service) Client { return NewWithOptions(e, Options{}) }

// NewWithOptions returns a client of e with options (HostPort and Service
// are not used: e is the service).
func NewWithOptions(e engine.Service, options Options) Client {
	ics := make([]any, len(options.Interceptors))
	for i, ic := range options.Interceptors {
		ics[i] = ic
	}
	tracer := tracing.TracerOf(tracing.Tracer(options.TracerProvider), ics...)
	return withInterceptors(&workflowClient{e: e, opts: options, tracer: tracer})
}

// workflowClient is the one Client.
type workflowClient struct {
	e      engine.Service
	opts   Options
	tracer trace.Tracer // nil: no spans

	mu     sync.Mutex
	closed bool
}

var _ sdkhook.ClientBackend = (*workflowClient)(nil)

// Service, AddQuerier and WorkerDefaults are for sdk/worker
// (sdkhook.ClientBackend).
func (c *workflowClient) Service() engine.Service { return c.e }

func (c *workflowClient) WorkerDefaults() (string, *slog.Logger) {
	return c.opts.Identity, log.Slog(c.opts.Logger)
}

// Interceptors returns the client's interceptors, of which the workers
// made from it use those that are also worker interceptors, as Temporal's.
func (c *workflowClient) Interceptors() []any {
	out := make([]any, len(c.opts.Interceptors))
	for i, ic := range c.opts.Interceptors {
		out[i] = ic
	}
	return out
}

func (c *workflowClient) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

func (c *workflowClient) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClientClosed
	}
	return nil
}

func (c *workflowClient) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.opts.Querier != nil {
		return c.opts.Querier.QueryWorkflow(ctx, workflowID, runID, queryType, args...)
	}
	j, err := c.e.Describe(ctx, target(workflowID, runID))
	if err != nil {
		return nil, err
	}
	return c.askWorkers(ctx, j, queryType, args...)
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
	// WorkflowExecutionErrorWhenAlreadyStarted: a start of an ID whose
	// current run is open (or whose reuse policy refuses a new run) fails
	// with engine.ErrWorkflowExists. Without it (the default, as in
	// Temporal) ExecuteWorkflow returns that run instead.
	WorkflowExecutionErrorWhenAlreadyStarted bool
	// RequestID makes the start idempotent across retries of this call.
	RequestID string
	// RetryPolicy, if set, retries a failed run as a new run of the same
	// workflow id with the same input (Get follows to the last run).
	RetryPolicy *temporal.RetryPolicy
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
	// StartDelay holds the run back this long before a worker may start
	// it (the engine keeps it Retrying until then); its WorkflowRunTimeout
	// counts from the end of the delay. It cannot be combined with
	// CronSchedule. 0: none.
	StartDelay time.Duration
	// EnableEagerStart is accepted for Temporal's sake and changes
	// nothing: Temporal may hand the first workflow task straight to a
	// worker of this client, saving a server round trip, and in heddle a
	// run is always claimed through the engine (no time is saved by a
	// worker in the same process skipping that).
	EnableEagerStart bool
}

// ExecuteWorkflow starts a run of wf (a function or a type name) with args.
func (c *workflowClient) ExecuteWorkflow(ctx context.Context, opts StartWorkflowOptions, wf any, args ...any) (WorkflowRun, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if opts.TaskQueue == "" {
		return nil, errors.New("client: StartWorkflowOptions.TaskQueue is required")
	}
	name, ok := wf.(string)
	if !ok {
		name = workflow.ActivityName(wf)
	}
	input, err := c.encode(args...)
	if err != nil {
		return nil, fmt.Errorf("client: workflow arguments: %w", err)
	}
	create := engine.CreateJob{WorkflowID: opts.ID, Type: name, Queue: opts.TaskQueue, Input: input, ReusePolicy: opts.WorkflowIDReusePolicy,
		ExecutionTimeoutMS: opts.WorkflowExecutionTimeout.Milliseconds(), RunTimeoutMS: opts.WorkflowRunTimeout.Milliseconds(),
		CronSchedule: opts.CronSchedule, StartDelayMS: opts.StartDelay.Milliseconds()}
	if opts.StartDelay < 0 {
		return nil, fmt.Errorf("client: StartWorkflowOptions.StartDelay %v is negative", opts.StartDelay)
	}
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
	if errors.Is(err, engine.ErrWorkflowExists) && !opts.WorkflowExecutionErrorWhenAlreadyStarted && opts.ID != "" {
		// Temporal's client returns the run that holds the id.
		if j, derr := c.e.Describe(ctx, engine.Target{WorkflowID: opts.ID}); derr == nil {
			span.SetAttributes(attribute.String("heddle.run_id", strconv.FormatUint(uint64(j.ID), 10)), attribute.Bool("heddle.existing", true))
			return &run{c: c, id: j.WorkflowID, runID: j.ID, typ: j.Type}, nil
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(attribute.String("heddle.run_id", strconv.FormatUint(uint64(res.Job), 10)))
	return &run{c: c, id: res.WorkflowID, runID: res.Job, typ: name}, nil
}

// GetWorkflow returns a run by workflow id and run id ("" for the latest
// run). The run is looked up now; an error (an unknown id) is returned by
// the run's Get, as in Temporal.
func (c *workflowClient) GetWorkflow(ctx context.Context, workflowID, runID string) WorkflowRun {
	if err := c.check(); err != nil {
		return &run{c: c, id: workflowID, err: err}
	}
	j, err := c.e.Describe(ctx, target(workflowID, runID))
	if err != nil {
		return &run{c: c, id: workflowID, err: err}
	}
	return &run{c: c, id: j.WorkflowID, runID: j.ID, typ: j.Type}
}

func target(workflowID, runID string) engine.Target {
	if id, err := strconv.ParseUint(runID, 10, 64); err == nil && id > 0 {
		return engine.Target{Job: engine.JobID(id)}
	}
	return engine.Target{WorkflowID: workflowID}
}

// SignalWorkflow sends a signal with one argument to a run.
func (c *workflowClient) SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error {
	if err := c.check(); err != nil {
		return err
	}
	payload, err := c.encode(arg)
	if err != nil {
		return fmt.Errorf("client: signal argument: %w", err)
	}
	_, err = c.e.Signal(ctx, engine.Signal{Target: target(workflowID, runID), Name: signalName, Payload: payload})
	return err
}

// SignalWithStartWorkflow signals the open run of workflowID, starting one
// first when there is none. It is not one atomic step as in Temporal: a
// run that ends between the look and the signal makes the signal fail
// with engine.ErrJobClosed.
func (c *workflowClient) SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
	opts StartWorkflowOptions, wf any, args ...any) (WorkflowRun, error) {
	opts.ID = workflowID
	opts.WorkflowExecutionErrorWhenAlreadyStarted = false // an open run is the one to signal
	j, err := c.e.Describe(ctx, engine.Target{WorkflowID: workflowID})
	var r WorkflowRun
	if err == nil && !j.Status.Terminal() {
		r = &run{c: c, id: j.WorkflowID, runID: j.ID, typ: j.Type}
	} else if r, err = c.ExecuteWorkflow(ctx, opts, wf, args...); err != nil {
		return nil, err
	}
	return r, c.SignalWorkflow(ctx, workflowID, r.GetRunID(), signalName, signalArg)
}

// CancelWorkflow asks a run to cancel itself: its context is cancelled and
// the workflow decides how to end.
func (c *workflowClient) CancelWorkflow(ctx context.Context, workflowID, runID string) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.e.RequestCancel(ctx, engine.RequestCancel{Target: target(workflowID, runID)})
	return err
}

// TerminateWorkflow ends a run at once, without running workflow code.
// details, if any, are recorded as JSON after the reason.
func (c *workflowClient) TerminateWorkflow(ctx context.Context, workflowID, runID, reason string, details ...any) error {
	if err := c.check(); err != nil {
		return err
	}
	if len(details) > 0 {
		b, err := c.encode(details...)
		if err != nil {
			return fmt.Errorf("client: terminate details: %w", err)
		}
		reason = fmt.Sprintf("%s (details: %s)", reason, b)
	}
	_, err := c.e.Terminate(ctx, engine.Terminate{Target: target(workflowID, runID), Reason: reason})
	return err
}

// DescribeWorkflow returns a run's record.
func (c *workflowClient) DescribeWorkflow(ctx context.Context, workflowID, runID string) (*engine.Job, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.e.Describe(ctx, target(workflowID, runID))
}

// GetWorkflowHistory returns a run's whole history.
func (c *workflowClient) GetWorkflowHistory(ctx context.Context, workflowID, runID string) ([]engine.Event, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
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
func (c *workflowClient) ListWorkflows(ctx context.Context, q engine.ListQuery) (*engine.ListPage, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.e.List(ctx, q)
}
