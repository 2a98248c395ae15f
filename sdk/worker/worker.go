// Package worker runs the workflows and activities of one task queue against
// an embedded engine: it claims jobs, replays or resumes their workflow
// code, executes activities inline under their timeouts and retry policies,
// and commits every finished step as one fenced command.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/internal/backoff"
	"github.com/heddlewf/heddle/internal/replay"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Options configure a Worker. The zero value is valid: every zero field
// takes its documented default.
type Options struct {
	// Identity names the worker in leases; "" means "worker-<queue>".
	Identity string
	// MaxConcurrentJobs bounds the jobs (workflow runs and remote activity
	// tasks) driven at once; 0 means 64.
	MaxConcurrentJobs int
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
	// Replaying history makes none. Nil makes no spans.
	TracerProvider trace.TracerProvider
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	switch {
	case o.MaxConcurrentJobs < 0:
		return fmt.Errorf("worker: Options.MaxConcurrentJobs %d is negative", o.MaxConcurrentJobs)
	case o.LeaseTTL < 0 || (o.LeaseTTL > 0 && o.LeaseTTL < 100*time.Millisecond):
		return fmt.Errorf("worker: Options.LeaseTTL %v must be 0 or at least 100ms", o.LeaseTTL)
	case o.RetryInlineThreshold < 0:
		return fmt.Errorf("worker: Options.RetryInlineThreshold %v is negative", o.RetryInlineThreshold)
	}
	return nil
}

func (o Options) withDefaults(queue string) Options {
	if o.Identity == "" {
		o.Identity = "worker-" + queue
	}
	if o.MaxConcurrentJobs == 0 {
		o.MaxConcurrentJobs = 64
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
	if o.Clock == nil {
		o.Clock = clock.Wall()
	}
	return o
}

// Worker claims and drives the jobs of one task queue. Register workflows
// and activities before Start. Start may be called once; Stop any number of
// times (the calls after the first return nil at once).
type Worker struct {
	e     engine.Service
	queue string
	opts  Options
	cache *replay.Cache
	obs   observer

	mu         sync.Mutex
	workflows  map[string]any
	activities map[string]any
	// claimCancel ends the claim in flight (a registration restarts it).
	claimCancel context.CancelFunc
	// tasks holds the reviewers of review tasks (task.go).
	tasks taskSide

	ctx    context.Context
	cancel context.CancelFunc
	// pollCtx ends the claim in flight when Stop is called, while ctx
	// lets the jobs in hand drain.
	pollCtx    context.Context
	pollCancel context.CancelFunc
	stop       chan struct{}
	stopped    atomic.Bool
	wg         sync.WaitGroup
	slots      chan struct{}
}

// New returns a worker for taskQueue on e: an *engine.Engine in-process, or
// a remote service (engine/httpapi) for a node or a cluster.
func New(e engine.Service, taskQueue string, opts Options) (*Worker, error) {
	if taskQueue == "" {
		return nil, errors.New("worker: taskQueue is empty")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults(taskQueue)
	return &Worker{e: e, queue: taskQueue, opts: opts, cache: replay.NewCache(max(opts.CacheSize, 0)),
		workflows: map[string]any{}, activities: map[string]any{}, obs: newObserver(taskQueue, opts)}, nil
}

// RegisterWorkflow registers a workflow function under its name (as
// workflow.ActivityName derives names from functions).
func (w *Worker) RegisterWorkflow(fn any) { w.RegisterWorkflowWithName(fn, workflow.ActivityName(fn)) }

// RegisterWorkflowWithName registers a workflow function under name.
func (w *Worker) RegisterWorkflowWithName(fn any, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.workflows[name] = fn
	w.typesChanged()
}

// RegisterActivity registers an activity function under its name.
func (w *Worker) RegisterActivity(fn any) { w.RegisterActivityWithName(fn, workflow.ActivityName(fn)) }

// RegisterActivityWithName registers an activity function under name.
func (w *Worker) RegisterActivityWithName(fn any, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.activities[name] = fn
	w.typesChanged()
}

// typesChanged restarts a claim in flight, so that a type registered after
// Start is claimed from now on rather than passed over by a claim that
// names the old types. Register before Start all the same: a job of the
// new type that a claim passed over just before waits out its deferral.
// w.mu is held.
func (w *Worker) typesChanged() {
	if w.claimCancel != nil {
		w.claimCancel()
	}
}

// claimTailEvents is how many of a claimed job's newest events a claim
// brings along: enough for a cached workflow woken by a timer, a signal or
// a child's result to go on without reading its history first.
const claimTailEvents = 8

// claimContext returns the context of the next claim, which a
// registration cancels, and the types it claims.
func (w *Worker) claimContext() (context.Context, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.claimCancel != nil {
		w.claimCancel()
	}
	var ctx context.Context
	ctx, w.claimCancel = context.WithCancel(w.pollCtx)
	return ctx, w.types()
}

// types lists the job types this worker runs, for Claim.Types: the engine
// passes over (and defers, with the reason on the job) a job of any other
// type instead of handing it to a worker that cannot run it. w.mu is held.
func (w *Worker) types() []string {
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

func (w *Worker) workflowFn(name string) any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.workflows[name]
}

func (w *Worker) activityFn(name string) any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.activities[name]
}

// Start begins claiming jobs.
func (w *Worker) Start() error {
	if w.stop != nil {
		return errors.New("worker: already started")
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.stop = make(chan struct{})
	w.pollCtx, w.pollCancel = context.WithCancel(w.ctx)
	w.slots = make(chan struct{}, w.opts.MaxConcurrentJobs)
	w.wg.Add(1)
	go w.poll()
	w.startTaskPollers()
	return nil
}

// Stop stops claiming and waits for the jobs in hand to reach their next
// commit point (a wait, a completion or a failure) — a graceful drain. If
// ctx ends first, the jobs in hand are abandoned to their leases.
func (w *Worker) Stop(ctx context.Context) error {
	if w.stop == nil || w.stopped.Swap(true) {
		return nil // never started, or already stopped
	}
	close(w.stop)
	w.pollCancel()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		w.cancel()
		return nil
	case <-ctx.Done():
		w.cancel()
		<-done
		return ctx.Err()
	}
}

// poll claims jobs while there are free slots, and sleeps until the next
// commit when the queue is empty: it never spins.
func (w *Worker) poll() {
	defer w.wg.Done()
	defer w.pollCancel()
	// The jittered backoff keeps many workers that lost the service
	// together from retrying together against it when it comes back.
	var bo backoff.Backoff
	for {
		free := 0
		for free < cap(w.slots) {
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
		claimCtx, types := w.claimContext()
		jobs, err := w.e.ClaimWait(claimCtx, engine.Claim{Queue: w.queue, Owner: w.opts.Identity, Max: free,
			LeaseMS: w.opts.LeaseTTL.Milliseconds(), Types: types, TailEvents: claimTailEvents})
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

// handle drives one claimed job through one turn.
func (w *Worker) handle(j engine.ClaimedJob) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	ref := engine.LeaseRef{Job: j.Job, Attempt: j.Attempt}
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
