package testsuite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// liveRun is the engine and the workers of an ExecuteWorkflow in progress.
// Only the driver's goroutine (and the delayed callbacks it runs) uses it.
type liveRun struct {
	eng     *embedded.Engine
	cl      client.Client
	workers map[string]worker.Worker
	queue   string // the root's task queue
	rootID  string // the root's workflow id
	root    engine.JobID
	// closing is closed when the run is over, ending mocked waits.
	closing chan struct{}
}

// ExecuteWorkflow starts workflowFn (a function, registered if it is not
// yet, or a registered name) with args, and drives it until the run ends:
// completes, fails, is cancelled, times out or continues as new. A run
// retried by its retry policy (SetStartWorkflowOptions) is followed to its
// last retry; a continued one is not (GetWorkflowError then returns the
// workflow.ContinueAsNewError), as in Temporal.
//
// It panics when the environment already ran a workflow, when the
// arguments do not encode, when a run needs a workflow or activity type
// that is not registered, and when nothing happens for the test timeout
// (SetTestTimeout): the message says what every run was doing.
func (env *TestWorkflowEnvironment) ExecuteWorkflow(workflowFn any, args ...any) {
	if env.started {
		panic("testsuite: this TestWorkflowEnvironment has run a workflow already; make a new one for each run")
	}
	var name string
	if s, ok := workflowFn.(string); ok {
		name = registeredOrDynamic(env.workflows, env.dynWorkflow, "workflow", s)
	} else {
		name = env.registerQuietly(env.workflows, "workflow", workflowFn, env.wrapWorkflow)
	}
	env.started = true
	opts := env.startOpts
	if opts.ID == "" {
		opts.ID = DefaultWorkflowID
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	if opts.WorkflowRunTimeout == 0 {
		// As in Temporal's test environment: a run that waits for what
		// never comes times out when the clock, skipping ahead, reaches
		// this, rather than hanging the test.
		opts.WorkflowRunTimeout = DefaultWorkflowRunTimeout
	}
	env.tl = newTimeline(env.startTime)
	lr, err := env.open(opts.TaskQueue)
	if err != nil {
		panic(fmt.Sprintf("testsuite: opening the in-memory engine: %v", err))
	}
	env.mu.Lock()
	env.run = lr
	env.mu.Unlock()
	defer env.close()
	run, err := lr.cl.ExecuteWorkflow(context.Background(), opts, name, args...)
	if err != nil {
		panic(fmt.Sprintf("testsuite: ExecuteWorkflow %s: %v", name, err))
	}
	id, _ := strconv.ParseUint(run.GetRunID(), 10, 64)
	lr.rootID, lr.root = run.GetID(), engine.JobID(id)
	env.pinCallbacks()
	// Callbacks due at once (a signal standing in for SignalWithStart) run
	// before any worker can claim the run, so its first turn sees them.
	env.runDueCallbacks()
	env.ensureWorker(opts.TaskQueue)
	env.drive()
}

// open opens the in-memory engine on the environment's timeline.
func (env *TestWorkflowEnvironment) open(queue string) (*liveRun, error) {
	e, err := embedded.Open(embedded.Config{InMemory: true, Clock: env.tl, SchedulerClock: env.tl.firedView(), Logger: env.logger,
		Limits: engine.Limits{MaxLeaseMS: leaseTTL.Milliseconds()}})
	if err != nil {
		return nil, err
	}
	return &liveRun{eng: e, cl: client.New(e),
		workers: map[string]worker.Worker{}, queue: queue, closing: make(chan struct{})}, nil
}

// ensureWorker starts a worker for queue unless one runs: every queue a
// run puts work on gets one, with every registered type, as Temporal's test
// environment runs activities and children of any task queue.
func (env *TestWorkflowEnvironment) ensureWorker(queue string) {
	lr := env.run
	if lr.workers[queue] != nil {
		return
	}
	w, err := env.newWorker(lr.cl, queue)
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		panic(fmt.Sprintf("testsuite: starting a worker on queue %q: %v", queue, err))
	}
	lr.workers[queue] = w
	for _, q := range sessionQueues(w) {
		lr.workers[q] = w
	}
}

// newWorker returns a worker of c for queue with every registration.
func (env *TestWorkflowEnvironment) newWorker(c client.Client, queue string) (worker.Worker, error) {
	clk := workerClock{tl: env.tl, probe: env.turnWaiting}
	opts := workerOptions(env.workerOpts, clk, env.reportError)
	if opts.Logger == nil {
		// SetLogger's logger, as its comment promises, unless the worker
		// options name their own: the worker's own messages and what
		// workflow and activity loggers write through.
		opts.Logger = env.logger
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	w := worker.New(c, queue, opts)
	for name, r := range env.workflows {
		w.RegisterWorkflowWithName(r.wrapped, name)
	}
	for name, r := range env.activities {
		w.RegisterActivityWithName(r.wrapped, name)
	}
	if env.dynWorkflow != nil {
		w.RegisterDynamicWorkflow(env.dynWorkflow.wrapped, workflow.DynamicRegisterOptions{})
	}
	if env.dynActivity != nil {
		w.RegisterDynamicActivity(env.dynActivity.wrapped, activity.DynamicRegisterOptions{})
	}
	return w, nil
}

// stopTimeout bounds how long close waits for the workers' goroutines to
// end; an activity that ignores its cancelled context can hold them.
const stopTimeout = 10 * time.Second

// close ends the run: mocked waits return, the workers stop at once (the
// jobs they hold are abandoned: the run that matters has ended), the
// records the test may still read are kept, and the engine closes.
func (env *TestWorkflowEnvironment) close() {
	lr := env.run
	env.settleUpdates(func() { close(lr.closing) })
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // drain nothing
		for _, w := range lr.workers {
			_ = w.Shutdown(ctx) // returns ctx's error: the jobs in hand were abandoned
		}
	}()
	select {
	case <-stopped:
	case <-time.After(stopTimeout):
		// Leave the engine open under the goroutines still running.
		env.after = &recorded{err: errors.New("testsuite: the workers did not stop; the run's records were not kept")}
		return
	}
	rec, err := record(lr.eng)
	if err != nil {
		rec = &recorded{err: fmt.Errorf("testsuite: reading the run's records: %w", err)}
	}
	rec.rootID, rec.root = lr.rootID, lr.root
	env.after = rec
	_ = lr.eng.Close() // in memory: nothing to lose
	env.mu.Lock()
	env.run = nil
	env.mu.Unlock()
}

// outcomeOf reads how run id ended: its result, or its error shaped as
// client.WorkflowRun.Get shapes it (a *temporal.WorkflowExecutionError
// wrapping the cause; a continued run's wraps the
// workflow.ContinueAsNewError). ok is false while it is open, and for a
// run that was retried as a newer run (next names it).
func outcomeOf(ctx context.Context, svc engine.Service, id engine.JobID) (done bool, next engine.JobID, result []byte, err error) {
	j, err := svc.Describe(ctx, engine.Target{Job: id})
	if err != nil {
		return false, 0, nil, err
	}
	if !j.Status.Terminal() {
		return false, 0, nil, nil
	}
	page, err := svc.History(ctx, j.ID, j.LastSeq-1, 1)
	if err != nil {
		return false, 0, nil, err
	}
	if len(page.Events) != 1 {
		return false, 0, nil, fmt.Errorf("testsuite: run %d has no closing event", j.ID)
	}
	last := page.Events[0]
	wrap := func(cause error) error {
		return temporal.NewWorkflowExecutionError(j.WorkflowID, runID(j.ID), j.Type, cause)
	}
	if last.Reason == engine.ReasonRetried || last.Reason == engine.ReasonContinuedAsNew {
		nj, err := svc.Describe(ctx, engine.Target{WorkflowID: j.WorkflowID})
		if err != nil {
			return false, 0, nil, err
		}
		if nj.ID <= j.ID {
			return false, 0, nil, fmt.Errorf("testsuite: run %d of %q went on, but no newer run exists", j.ID, j.WorkflowID)
		}
		if last.Reason == engine.ReasonRetried {
			return false, nj.ID, nil, nil
		}
		first, err := svc.History(ctx, nj.ID, 0, 1)
		if err != nil {
			return false, 0, nil, err
		}
		var input []byte
		if len(first.Events) == 1 {
			input = first.Events[0].Payload
		}
		return true, 0, nil, wrap(&workflow.ContinueAsNewError{WorkflowType: &workflow.Type{Name: nj.Type}, Input: input})
	}
	var cause error
	switch j.Status {
	case engine.StatusCompleted:
		return true, 0, last.Payload, nil
	case engine.StatusCancelled:
		cause = temporal.NewCanceledError()
		if len(last.Payload) > 0 {
			cause = sdkhook.DecodeFailure(last.Payload)
		}
	case engine.StatusTerminated:
		cause = sdkhook.NewTerminatedError(fmt.Sprintf("terminated (run %d)", j.ID))
		if len(last.Payload) > 0 {
			cause = sdkhook.DecodeFailure(last.Payload)
		}
	default: // Failed, TimedOut
		cause = sdkhook.DecodeFailure(last.Payload)
	}
	return true, 0, nil, wrap(cause)
}

// IsWorkflowCompleted reports whether ExecuteWorkflow saw the run end.
func (env *TestWorkflowEnvironment) IsWorkflowCompleted() bool { return env.completed }

// GetWorkflowResult decodes the run's result into valuePtr (nil to ignore
// it) and returns the run's error, if it failed. It panics when the run
// has not completed.
func (env *TestWorkflowEnvironment) GetWorkflowResult(valuePtr any) error {
	if !env.completed {
		panic("testsuite: GetWorkflowResult: the workflow is not completed")
	}
	if env.err != nil || valuePtr == nil || len(env.result) == 0 {
		return env.err
	}
	return converter.Decode(env.result, valuePtr)
}

// GetWorkflowError returns the run's error: nil when it completed, else a
// *temporal.WorkflowExecutionError wrapping why, as in Temporal: the
// workflow's error when it failed (errors.As finds the
// workflow.ApplicationError), a *temporal.CanceledError when it was
// cancelled (errors.Is(err, workflow.ErrCanceled) holds), a
// *temporal.TimeoutError when it timed out, the
// *workflow.ContinueAsNewError when it continued as new. It is nil too
// while the run has not completed.
func (env *TestWorkflowEnvironment) GetWorkflowError() error { return env.err }

// GetWorkflowResultByID is GetWorkflowResult for the latest run of any
// workflow id the environment ran (a child's, say).
func (env *TestWorkflowEnvironment) GetWorkflowResultByID(workflowID string, valuePtr any) error {
	result, err := env.outcomeByID(workflowID)
	if err != nil || valuePtr == nil || len(result) == 0 {
		return err
	}
	return converter.Decode(result, valuePtr)
}

// GetWorkflowErrorByID is GetWorkflowError for the latest run of any
// workflow id the environment ran.
func (env *TestWorkflowEnvironment) GetWorkflowErrorByID(workflowID string) error {
	_, err := env.outcomeByID(workflowID)
	return err
}

func (env *TestWorkflowEnvironment) outcomeByID(workflowID string) ([]byte, error) {
	svc, err := env.service()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	j, err := svc.Describe(ctx, engine.Target{WorkflowID: workflowID})
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrUnknownWorkflow, workflowID, err)
	}
	done, _, result, err := outcomeOf(ctx, svc, j.ID)
	if !done && err == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotCompleted, workflowID)
	}
	return result, err
}

// service is what the test's reads go to: the engine while the run goes
// on, the records once it is over.
func (env *TestWorkflowEnvironment) service() (engine.Service, error) {
	switch {
	case env.run != nil:
		return env.run.eng, nil
	case env.after != nil && env.after.err != nil:
		return nil, env.after.err
	case env.after != nil:
		return recordedService{r: env.after}, nil
	}
	return nil, ErrNotCompleted
}
