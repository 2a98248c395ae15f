// Package worker runs the workflows and activities of one task queue against
// an embedded engine: it claims jobs, replays or resumes their workflow
// code, executes activities inline under their timeouts and retry policies,
// and commits every finished step as one fenced command.
package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/internal/backoff"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Options configure a Worker. The zero value is valid: every zero field
// takes its documented default.
type Options struct {
	// Identity names the worker in leases; "" means "worker-<queue>".
	Identity string
	// BuildID names the build of the worker's code, as Temporal's does:
	// the task queue view lists it beside the worker's identity (heddle
	// does not route work by it). "" names none.
	BuildID string
	// MaxConcurrentJobs bounds the jobs (workflow runs and remote activity
	// tasks) driven at once; 0 means 64.
	MaxConcurrentJobs int
	// MaxConcurrentWorkflowTaskPollers and MaxConcurrentActivityTaskPollers
	// are Temporal's poller counts. A heddle poller claims workflow and
	// activity work alike, so the worker runs as many pollers as the larger
	// of the two, at most MaxConcurrentJobs; 0 for both means one. (Temporal's default is two of each
	// kind, but a Temporal poll takes one task where a heddle claim takes
	// up to every free slot.) Each poller claims for at most its share of
	// MaxConcurrentJobs, so that one poller's claim does not hold every
	// free slot while the others wait for one.
	MaxConcurrentWorkflowTaskPollers int
	MaxConcurrentActivityTaskPollers int
	// LeaseTTL is the lease a claim takes and each heartbeat renews; 0
	// means 30 s. Heartbeats go out every third of it.
	LeaseTTL time.Duration
	// CacheSize bounds the workflow cache; 0 means 1000, negative disables
	// it (every turn replays the history from the start).
	CacheSize int
	// RetryInlineThreshold: an activity retry delay up to this long is
	// slept in the worker; a longer one becomes a durable timer and the job
	// waits instead of holding its lease. 0 means 2 s.
	RetryInlineThreshold time.Duration
	// DeadlockTimeout bounds how long workflow code may run without
	// yielding; 0 means one second.
	DeadlockTimeout time.Duration
	// Clock is used for retry sleeps; nil means clock.Wall().
	Clock clock.Clock
	// OnError, if set, receives errors that end a job's turn in this worker
	// (the job itself is left to its lease); it must not block.
	OnError func(job engine.JobID, err error)
	// Logger receives the worker's own messages (turns that ended with an
	// error, runs stopped by their code) and is what workflow.GetLogger and
	// activity.GetLogger write through, with the run's attributes added.
	// Nil means no messages of the worker's own, and slog.Default() for
	// workflow and activity code.
	Logger *slog.Logger
	// Metrics, if set, records the worker's metrics: turn and activity
	// latency, activity outcomes, cache hits and misses, replays and
	// nondeterminism. Nil records none.
	Metrics *metrics.Metrics
	// TracerProvider, if set, makes OpenTelemetry spans of the work this
	// worker does: RunWorkflow:<type> for each turn, under the trace the
	// run was started in; RunActivity:<name> for each try of an activity;
	// StartActivity:<name> and StartChildWorkflow:<name> for remote steps.
	// Replaying history makes none. Nil: the tracer of a tracing
	// interceptor of sdk/contrib/opentelemetry among Interceptors (the
	// client's included), if there is one, else no spans.
	TracerProvider trace.TracerProvider
	// WorkerStopTimeout bounds how long Stop waits for the jobs in hand to
	// reach their next commit point; the jobs still in hand then are left
	// to their leases (another worker takes them once the lease runs out)
	// and their activities' contexts are cancelled. 0 means 10 s. (In
	// Temporal, 0 cancels the running activities at once; in heddle an
	// abandoned job waits out its lease, so a short drain comes first.)
	WorkerStopTimeout time.Duration
	// MaxConcurrentActivityExecutionSize bounds the activity functions
	// (local ones excepted) this worker runs at once, across all its runs;
	// a try waits for a free place before its StartToCloseTimeout starts.
	// 0 means no bound beyond MaxConcurrentJobs (Temporal's default is
	// 1,000).
	MaxConcurrentActivityExecutionSize int
	// EnableSessionWorker makes the worker accept worker sessions
	// (workflow.CreateSession) of its queue: the activities of a session it
	// accepted run on it and no other worker. MaxConcurrentSessionExecutionSize
	// bounds the sessions open on it at once; 0 means 1,000, as in
	// Temporal. A CreateSession that finds no worker with a free place
	// waits up to its CreationTimeout.
	EnableSessionWorker               bool
	MaxConcurrentSessionExecutionSize int
	// BackgroundActivityContext, if set, is the context activities see
	// values of (a client or a logger shared by all activities) and whose
	// cancellation cancels the tries it is running. Nil: none.
	BackgroundActivityContext context.Context
	// OnFatalError, if set, is called once, from the worker's own
	// goroutine, when the worker stops claiming work because the service
	// will not serve it: the node refused the client's credentials. It
	// must not call Stop (which waits for that goroutine).
	OnFatalError func(error)
	// Interceptors wrap the worker's workflow runs and activity tries, the
	// first the outermost (package interceptor). Nil: none, and the
	// workflow and activity functions call the SDK directly. The client's
	// interceptors that are also worker interceptors come first, as in
	// Temporal.
	Interceptors []interceptor.WorkerInterceptor
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	switch {
	case o.MaxConcurrentJobs < 0:
		return fmt.Errorf("worker: Options.MaxConcurrentJobs %d is negative", o.MaxConcurrentJobs)
	case o.MaxConcurrentWorkflowTaskPollers < 0:
		return fmt.Errorf("worker: Options.MaxConcurrentWorkflowTaskPollers %d is negative", o.MaxConcurrentWorkflowTaskPollers)
	case o.MaxConcurrentActivityTaskPollers < 0:
		return fmt.Errorf("worker: Options.MaxConcurrentActivityTaskPollers %d is negative", o.MaxConcurrentActivityTaskPollers)
	case o.LeaseTTL < 0 || (o.LeaseTTL > 0 && o.LeaseTTL < 100*time.Millisecond):
		return fmt.Errorf("worker: Options.LeaseTTL %v must be 0 or at least 100ms", o.LeaseTTL)
	case o.RetryInlineThreshold < 0:
		return fmt.Errorf("worker: Options.RetryInlineThreshold %v is negative", o.RetryInlineThreshold)
	case o.WorkerStopTimeout < 0:
		return fmt.Errorf("worker: Options.WorkerStopTimeout %v is negative", o.WorkerStopTimeout)
	case o.MaxConcurrentActivityExecutionSize < 0:
		return fmt.Errorf("worker: Options.MaxConcurrentActivityExecutionSize %d is negative", o.MaxConcurrentActivityExecutionSize)
	case o.MaxConcurrentSessionExecutionSize < 0:
		return fmt.Errorf("worker: Options.MaxConcurrentSessionExecutionSize %d is negative", o.MaxConcurrentSessionExecutionSize)
	case len(o.BuildID) > maxBuildIDBytes || !utf8.ValidString(o.BuildID):
		return fmt.Errorf("worker: Options.BuildID %q is not UTF-8 text of at most %d bytes", o.BuildID, maxBuildIDBytes)
	}
	for i, ic := range o.Interceptors {
		if ic == nil {
			return fmt.Errorf("worker: Options.Interceptors[%d] is nil", i)
		}
	}
	return nil
}

// maxBuildIDBytes bounds Options.BuildID: a name, as the engine's names
// are (engine.Limits.MaxNameBytes by default).
const maxBuildIDBytes = 256

func (o Options) withDefaults(queue string) Options {
	if o.Identity == "" {
		o.Identity = "worker-" + queue
	}
	if o.MaxConcurrentJobs == 0 {
		o.MaxConcurrentJobs = 64
	}
	if o.MaxConcurrentWorkflowTaskPollers == 0 && o.MaxConcurrentActivityTaskPollers == 0 {
		o.MaxConcurrentWorkflowTaskPollers = defaultPollers
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.CacheSize == 0 {
		o.CacheSize = 1000
	}
	if o.RetryInlineThreshold == 0 {
		o.RetryInlineThreshold = 2 * time.Second
	}
	if o.WorkerStopTimeout == 0 {
		o.WorkerStopTimeout = defaultWorkerStopTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Wall()
	}
	return o
}

// Worker claims and drives the jobs of one task queue: it runs the
// workflows and activities registered on it. Register them before Start
// (or Run). Start may be called once; Stop and Shutdown any number of
// times (the calls after the first return at once). It is Temporal's
// worker.Worker, with heddle's Shutdown, QueryWorkflow and *WithName
// registrations added.
type Worker interface {
	Registry
	// Start begins claiming jobs and returns; it fails when the worker
	// cannot run (invalid options, a client not made by this SDK).
	Start() error
	// Run starts the worker, blocks until interruptCh delivers a value or
	// is closed (worker.InterruptCh() does on SIGINT and SIGTERM), then
	// stops it as Stop does.
	Run(interruptCh <-chan any) error
	// Stop stops claiming and waits, up to Options.WorkerStopTimeout (10
	// s by default), for the jobs in hand to reach their next commit
	// point; the jobs still in hand then are left to their leases.
	Stop()
	// Shutdown is Stop bounded by ctx instead: if ctx ends first, the jobs
	// still in hand are left to their leases and ctx's error is returned.
	Shutdown(ctx context.Context) error
	// QueryWorkflow answers a query by replaying the run's history with
	// this worker's code (see client.Options.Querier).
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
	// RegisterReviewer registers the reviewer of review tasks that name
	// it: the worker claims their reviews and runs fn under a lease.
	RegisterReviewer(name string, fn Reviewer)
	// RegisterCritic registers a critic under name, for
	// ActivityOptions.Critic. Register before Start.
	RegisterCritic(name string, c Critic)
}

// Registry registers workflows and activities.
type Registry interface {
	WorkflowRegistry
	ActivityRegistry
}

// WorkflowRegistry registers workflow functions: func(ctx
// workflow.Context, args...) error or (T, error).
type WorkflowRegistry interface {
	// RegisterWorkflow registers fn under its name (workflow.ActivityName).
	// A name registered already makes it panic, as in Temporal.
	RegisterWorkflow(fn any)
	// RegisterWorkflowWithOptions registers fn under options.Name ("" for
	// its own name); options.DisableAlreadyRegisteredCheck lets it replace
	// an earlier registration.
	RegisterWorkflowWithOptions(fn any, options workflow.RegisterOptions)
	// RegisterDynamicWorkflow registers fn, a func(ctx workflow.Context,
	// args converter.EncodedValues) (any, error), for every workflow type
	// registered under no name of its own; workflow.GetInfo(ctx).
	// WorkflowType.Name says which type it runs.
	RegisterDynamicWorkflow(fn any, options workflow.DynamicRegisterOptions)
	// RegisterWorkflowWithName registers fn under name, replacing an
	// earlier registration (heddle's shorthand).
	RegisterWorkflowWithName(fn any, name string)
}

// ActivityRegistry registers activities: functions func([ctx
// context.Context,] args...) error or (T, error), or structs whose
// exported methods are such functions.
type ActivityRegistry interface {
	// RegisterActivity registers a function under its name, or every
	// exported method of a struct (or pointer to one) under the method's
	// name, as Temporal does: w.RegisterActivity(&Activities{db: db}) and
	// then workflow.ExecuteActivity(ctx, a.Charge, ...) or "Charge". A
	// name registered already makes it panic, as in Temporal.
	RegisterActivity(a any)
	// RegisterActivityWithOptions registers a under options.Name: the
	// function's name, or for a struct the prefix of its methods' names;
	// options.DisableAlreadyRegisteredCheck lets it replace an earlier
	// registration.
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
	// RegisterDynamicActivity registers fn, a func(ctx context.Context,
	// args converter.EncodedValues) (any, error), for every activity type
	// registered under no name of its own; activity.GetInfo(ctx).
	// ActivityType.Name says which type it runs.
	RegisterDynamicActivity(fn any, options activity.DynamicRegisterOptions)
	// RegisterActivityWithName registers a function under name, replacing
	// an earlier registration (heddle's shorthand).
	RegisterActivityWithName(fn any, name string)
}

// queueWorker is the one Worker: it claims and drives the jobs of one task
// queue.
type queueWorker struct {
	e     engine.Service
	queue string
	opts  Options
	cache *replay.Cache
	obs   observer
	// backend is the client's side the worker needs; initErr, set by New,
	// is what Start returns when the worker cannot run.
	backend sdkhook.ClientBackend
	initErr error
	// activitySlots, when Options.MaxConcurrentActivityExecutionSize is
	// set, holds one token per activity function running.
	activitySlots chan struct{}

	mu         sync.Mutex
	workflows  map[string]any
	activities map[string]any
	critics    map[string]Critic
	// dynWorkflow and dynActivity run the types registered under no name.
	dynWorkflow any
	dynActivity any
	// claimCancels end the claims in flight, one per poller (a
	// registration restarts them).
	claimCancels []context.CancelFunc
	// tasks holds the reviewers of review tasks (task.go).
	reviews reviewSide

	ctx    context.Context
	cancel context.CancelFunc
	// pollCtx ends the claim in flight when Stop is called, while ctx
	// lets the jobs in hand drain.
	pollCtx    context.Context
	pollCancel context.CancelFunc
	stop       chan struct{}
	stopped    atomic.Bool
	wg         sync.WaitGroup
	// pollersWG counts the pollers alone (wg counts the jobs in hand too).
	pollersWG sync.WaitGroup
	slots     chan struct{}
	// unregister removes the worker from its client's queriers;
	// stopServing ends the query serving of a worker over HTTP.
	unregister  func()
	stopServing func()
	// sessions is the session side of a worker with
	// Options.EnableSessionWorker (session.go), set by Start.
	sessions *sessionHost
}

// New returns a worker for taskQueue, reaching heddle through c (made by
// client.Dial or client.New: an embedded engine or a node over HTTP). As
// in Temporal it returns no error: invalid options, an empty queue or a
// client of another make are reported by Start and Run. The worker answers
// c's QueryWorkflow for its queue's runs, and over HTTP it serves the
// node's queries for them.
func New(c client.Client, taskQueue string, options Options) Worker {
	w := &queueWorker{queue: taskQueue, workflows: map[string]any{}, activities: map[string]any{}}
	backend, ok := c.(sdkhook.ClientBackend)
	switch {
	case c == nil || !ok:
		w.initErr = fmt.Errorf("worker: the client is a %T, not one made by client.Dial or client.New", c)
	case taskQueue == "":
		w.initErr = errors.New("worker: taskQueue is empty")
	default:
		w.initErr = options.Validate()
	}
	if ok {
		w.backend, w.e = backend, backend.Service()
		if dcs, ok := backend.(dataConverterSource); ok {
			w.e = withDataConverter(w.e, dcs.DataConverter(), dcs.FailureConverter())
		}
		identity, logger := backend.WorkerDefaults()
		if options.Identity == "" {
			options.Identity = identity
		}
		if options.Logger == nil {
			options.Logger = logger
		}
	}
	if ics, ok := c.(interface{ Interceptors() []any }); ok {
		options.Interceptors = withClientInterceptors(ics.Interceptors(), options.Interceptors)
	}
	w.opts = options.withDefaults(taskQueue)
	w.cache = replay.NewCache(max(w.opts.CacheSize, 0))
	w.obs = newObserver(taskQueue, w.opts)
	return w
}

// InterruptCh returns a channel that delivers a value when the process
// receives SIGINT or SIGTERM, for Run.
func InterruptCh() <-chan any {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	out := make(chan any, 1)
	go func() {
		s := <-sig
		signal.Stop(sig)
		out <- s
		close(out)
	}()
	return out
}

// typesChanged restarts a claim in flight, so that a type registered after
// Start is claimed from now on rather than passed over by a claim that
// names the old types. Register before Start all the same: a job of the
// new type that a claim passed over just before waits out its deferral.
// w.mu is held.
func (w *queueWorker) typesChanged() {
	for _, cancel := range w.claimCancels {
		if cancel != nil {
			cancel()
		}
	}
}

// claimTailEvents is how many of a claimed job's newest events a claim
// brings along: enough for a cached workflow woken by a timer, a signal or
// a child's result to go on without reading its history first.
const claimTailEvents = 8

// claimContext returns the context of poller's next claim, which a
// registration cancels, and the types it claims.
func (w *queueWorker) claimContext(poller int) (context.Context, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cancel := w.claimCancels[poller]; cancel != nil {
		cancel()
	}
	var ctx context.Context
	ctx, w.claimCancels[poller] = context.WithCancel(w.pollCtx)
	return ctx, w.types()
}

// types lists the job types this worker runs, for Claim.Types: the engine
// passes over (and defers, with the reason on the job) a job of any other
// type instead of handing it to a worker that cannot run it. A worker with
// a dynamic workflow or activity runs types it cannot name: it claims
// every type (nil), and gives back what it has no code for. w.mu is held.
func (w *queueWorker) types() []string {
	if w.dynWorkflow != nil || w.dynActivity != nil {
		return nil
	}
	out := make([]string, 0, len(w.workflows)+len(w.activities))
	for name := range w.workflows {
		out = append(out, name)
	}
	for name := range w.activities {
		out = append(out, engine.ActivityTypePrefix+name)
	}
	slices.Sort(out) // stable across claims: the command is data
	return out
}

// workflowFn returns the code of a workflow type: its registered function,
// or the dynamic workflow.
func (w *queueWorker) workflowFn(name string) any {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fn := w.workflows[name]; fn != nil {
		return fn
	}
	return w.dynWorkflow
}

// registeredActivity returns the function registered under name, if any.
func (w *queueWorker) registeredActivity(name string) any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.activities[name]
}

// activityFn returns the code of an activity type: its registered
// function, or the dynamic activity.
func (w *queueWorker) activityFn(name string) any {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fn := w.activities[name]; fn != nil {
		return fn
	}
	return w.dynActivity
}

// Start begins claiming jobs.
func (w *queueWorker) Start() error {
	if w.initErr != nil {
		return w.initErr
	}
	if w.stop != nil {
		return errors.New("worker: already started")
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.stop = make(chan struct{})
	w.pollCtx, w.pollCancel = context.WithCancel(w.ctx)
	w.slots = make(chan struct{}, w.opts.MaxConcurrentJobs)
	if n := w.opts.MaxConcurrentActivityExecutionSize; n > 0 {
		w.activitySlots = make(chan struct{}, n)
	}
	w.unregister = w.backend.AddQuerier(w.queue, w)
	w.stopServing = w.serveQueries()
	pollers := w.opts.pollers()
	w.mu.Lock()
	w.claimCancels = make([]context.CancelFunc, pollers)
	w.mu.Unlock()
	share := max(w.opts.MaxConcurrentJobs/pollers, 1)
	for i := range pollers {
		w.wg.Add(1)
		w.pollersWG.Add(1)
		go w.poll(i, share)
	}
	w.startReviewPollers()
	return w.startSessions()
}

// serveQueries answers, for a worker whose service brokers queries to
// worker processes (engine.QueryServer: a node reached over HTTP), the
// queries the service's clients ask of this queue's runs, until the
// returned function is called.
func (w *queueWorker) serveQueries() func() {
	qs, ok := rawService(w.e).(engine.QueryServer)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := qs.ServeQueries(ctx, w.queue, w.answerQuery); err != nil && ctx.Err() == nil && w.opts.OnError != nil {
			w.opts.OnError(0, fmt.Errorf("worker: serving queries: %w", err))
		}
	}()
	return func() { cancel(); <-done }
}

// Run starts the worker and stops it when interruptCh delivers.
func (w *queueWorker) Run(interruptCh <-chan any) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-interruptCh
	w.Stop()
	return nil
}

// defaultWorkerStopTimeout is the drain of Stop when
// Options.WorkerStopTimeout is 0.
const defaultWorkerStopTimeout = 10 * time.Second

// defaultPollers is how many pollers a worker runs when its options ask
// for none. One: a heddle claim takes a batch of jobs, up to every free
// slot, where a Temporal poll takes one task. Measured with seq3 (bench),
// a second poller cost a cluster of one Raft group about 5% more CPU a
// workflow, and gained a sharded one nothing beyond a run's noise.
const defaultPollers = 1

// pollers is how many pollers the worker runs: the larger of the two
// poller counts, and never more than MaxConcurrentJobs, since a poller
// claims for one free slot at least.
func (o Options) pollers() int {
	n := max(o.MaxConcurrentWorkflowTaskPollers, o.MaxConcurrentActivityTaskPollers, 1)
	return min(n, max(o.MaxConcurrentJobs, 1))
}

// Stop drains the worker, up to Options.WorkerStopTimeout.
func (w *queueWorker) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.WorkerStopTimeout)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		w.obs.log.Warn("worker stopped before its jobs reached a commit point; they are left to their leases",
			"queue", w.queue, "error", err)
	}
}

// Shutdown stops claiming and waits for the jobs in hand to reach their
// next commit point (a wait, a completion or a failure) — a graceful
// drain. If ctx ends first, the jobs in hand are abandoned to their leases.
func (w *queueWorker) Shutdown(ctx context.Context) error {
	if w.stop == nil || w.stopped.Swap(true) {
		return nil // never started, or already stopped
	}
	close(w.stop)
	w.pollCancel()
	w.releaseKept(ctx)
	w.unregister()
	sessionsDone := w.shutdownSessions(ctx)
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		w.cancel()
		<-done
		err = ctx.Err()
	}
	w.stopServing()
	w.cancel()
	if serr := sessionsDone(); err == nil {
		err = serr
	}
	return err
}

// releaseKept waits for the pollers to end, then has the service give back
// what it holds for this worker's next claims (engine.KeptClaimReleaser):
// with no claim to come, those jobs would wait out their leases.
func (w *queueWorker) releaseKept(ctx context.Context) {
	r, ok := rawService(w.e).(engine.KeptClaimReleaser)
	if !ok {
		return
	}
	ended := make(chan struct{})
	go func() { w.pollersWG.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseLostTimeout)
	defer cancel()
	r.ReleaseKept(rctx, w.queue, w.opts.Identity)
}

// poll is one of the worker's pollers: it claims jobs while there are free
// slots, at most share of them a claim, and sleeps until the next commit
// when the queue is empty: it never spins.
func (w *queueWorker) poll(poller, share int) {
	defer w.wg.Done()
	defer w.pollersWG.Done()
	defer w.pollCancel()
	// The jittered backoff keeps many workers that lost the service
	// together from retrying together against it when it comes back.
	var bo backoff.Backoff
	for {
		free := 0
		for free < share {
			select {
			case w.slots <- struct{}{}:
				free++
				continue
			default:
			}
			break
		}
		if free == 0 {
			select { // every slot is busy: wait for one
			case w.slots <- struct{}{}:
				free = 1
			case <-w.stop:
				return
			}
		}
		claimCtx, types := w.claimContext(poller)
		claim := engine.Claim{Queue: w.queue, Owner: w.opts.Identity, Max: free,
			LeaseMS: w.opts.LeaseTTL.Milliseconds(), Types: types, TailEvents: claimTailEvents, BuildID: w.opts.BuildID}
		lossy := w.claimsMayBeLost()
		if lossy {
			claim.RequestID = claimRequestID()
		}
		jobs, err := w.e.ClaimWait(claimCtx, claim)
		if err != nil && claimCtx.Err() != nil && lossy {
			w.releaseLostClaim(claim)
		}
		for i := len(jobs); i < free; i++ {
			<-w.slots
		}
		if err != nil {
			if w.pollCtx.Err() != nil {
				return
			}
			if claimCtx.Err() != nil {
				continue // a type was registered: claim again with it
			}
			if w.opts.OnError != nil {
				w.opts.OnError(0, err)
			}
			if fatal(err) {
				if w.opts.OnFatalError != nil {
					w.opts.OnFatalError(err)
				}
				return
			}
			// The service is unreachable or refused: back off instead of
			// spinning, and give up at once when stopped (Stop cancels
			// pollCtx).
			if backoff.Sleep(w.pollCtx, bo.Next()) != nil {
				return
			}
			continue
		}
		bo.Reset()
		for _, j := range jobs {
			w.wg.Add(1)
			go func(j engine.ClaimedJob) {
				defer w.wg.Done()
				defer func() { <-w.slots }()
				w.handle(j)
			}(j)
		}
	}
}

// claimsMayBeLost reports whether a claim cut short by its context may
// still be applied by the service, its answer lost: over HTTP (a node
// applies a claim whose request was cut while it was being applied) and
// through any service that does not say otherwise. An embedded engine
// never loses one (engine.CancelSafeClaimer): its ClaimWait returns what
// it claimed even when its context ends meanwhile.
func (w *queueWorker) claimsMayBeLost() bool {
	cs, ok := rawService(w.e).(engine.CancelSafeClaimer)
	return !ok || !cs.CancelSafeClaims()
}

// claimRequestID is a fresh request id for one ClaimWait: a retry of the
// claim under it gets what the claim took.
func claimRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail
	return "claim-" + hex.EncodeToString(b[:])
}

// releaseLostTimeout bounds how long a worker tries to give back what a
// cut-short claim took; past it, the jobs wait for their leases to run out.
const releaseLostTimeout = 10 * time.Second

// releaseLostClaim gives back what claim took after the worker stopped
// waiting for it (Stop, or a registration that restarts the claim): the
// service may have applied it all the same, its answer lost with the
// request, leaving jobs leased to a worker that will never drive them.
// Asking again under the claim's request id returns what it took (when it
// took nothing, it claims afresh, which is given back as well), and each
// job is requeued at once, fenced by its lease (engine.ReasonReleased),
// instead of sitting Running until its lease runs out.
func (w *queueWorker) releaseLostClaim(claim engine.Claim) {
	ctx, cancel := context.WithTimeout(w.ctx, releaseLostTimeout)
	defer cancel()
	jobs, err := w.e.Claim(ctx, claim)
	if err != nil {
		w.obs.log.Warn("worker: could not learn what a cut-short claim took; its jobs, if any, are left to their leases",
			"queue", w.queue, "error", err)
		return
	}
	for _, j := range jobs {
		_, err := w.e.Requeue(ctx, engine.Requeue{LeaseRef: j.Lease(), Reason: engine.ReasonReleased})
		if err != nil && !errors.Is(err, engine.ErrStaleAttempt) {
			w.obs.log.Warn("worker: could not give back a job a cut-short claim took; it is left to its lease",
				"queue", w.queue, "job", j.Job, "error", err)
		}
	}
}

// handle drives one claimed job through one turn.
func (w *queueWorker) handle(j engine.ClaimedJob) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	ref := j.Lease()
	name, isTask := strings.CutPrefix(j.Type, engine.ActivityTypePrefix)
	ctx, t := w.obs.startTurn(ctx, j, isTask, isTask || w.workflowFn(j.Type) != nil)
	// An activity task runs under its own context, cancelled when the
	// heartbeats learn that its workflow asked to cancel it; the turn's
	// writes go on under ctx, so the cancellation's outcome is still
	// committed. A workflow learns of a cancel request from its history.
	actCtx, cancelAct := context.WithCancel(ctx)
	defer cancelAct()
	var onCancelRequested context.CancelFunc
	if isTask {
		onCancelRequested = cancelAct
	}
	hbDone := make(chan struct{})
	l := w.newLease(ref)
	go w.heartbeat(ctx, cancel, onCancelRequested, l, hbDone)
	defer func() { cancel(); <-hbDone }()

	var err error
	if isTask {
		err = w.runActivityTask(ctx, actCtx, cancelAct, j, l, name)
	} else {
		err = w.runWorkflow(ctx, j, l)
	}
	t.end(err)
	if err != nil && w.opts.OnError != nil && !errors.Is(err, context.Canceled) {
		w.opts.OnError(j.Job, err)
	}
}
