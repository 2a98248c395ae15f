package testsuite

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
)

// delayedCallback is a function to run when the clock reaches due.
type delayedCallback struct {
	delay time.Duration // from the start, until pinned
	due   time.Time
	seq   int
	fn    func()
}

// RegisterDelayedCallback runs callback once the environment's clock has
// moved delayDuration: from the workflow's start when registered before
// ExecuteWorkflow, from now when registered while it runs. The clock skips
// to it like to a timer. Callbacks run on ExecuteWorkflow's goroutine, one
// at a time, before the engine's timers due at the same instant fire; they
// may signal, cancel or query the workflow. A delay of 0 before
// ExecuteWorkflow runs the callback before the run's first turn, which
// with a signal stands in for SignalWithStart (a query then finds no
// handler yet).
func (env *TestWorkflowEnvironment) RegisterDelayedCallback(callback func(), delayDuration time.Duration) {
	env.mu.Lock()
	env.cbSeq++
	cb := &delayedCallback{delay: delayDuration, seq: env.cbSeq, fn: callback}
	if env.run != nil {
		cb.due = env.tl.Now().Add(delayDuration)
	}
	env.callbacks = append(env.callbacks, cb)
	env.mu.Unlock()
	env.poke()
}

// pinCallbacks dates the callbacks registered before the start.
func (env *TestWorkflowEnvironment) pinCallbacks() {
	env.mu.Lock()
	defer env.mu.Unlock()
	for _, cb := range env.callbacks {
		if cb.due.IsZero() {
			cb.due = env.startTime.Add(cb.delay)
		}
	}
}

// runDueCallbacks runs, in order, the callbacks due by now, including
// those the callbacks register for now.
func (env *TestWorkflowEnvironment) runDueCallbacks() {
	for {
		now := env.tl.Now()
		env.mu.Lock()
		sort.SliceStable(env.callbacks, func(i, j int) bool {
			a, b := env.callbacks[i], env.callbacks[j]
			return a.due.Before(b.due) || a.due.Equal(b.due) && a.seq < b.seq
		})
		var cb *delayedCallback
		if len(env.callbacks) > 0 && !env.callbacks[0].due.After(now) {
			cb = env.callbacks[0]
			env.callbacks = env.callbacks[1:]
		}
		env.mu.Unlock()
		if cb == nil {
			return
		}
		cb.fn()
	}
}

// SignalWorkflow sends a signal to the workflow. Before ExecuteWorkflow it
// is kept and delivered before the run's first turn; after the run ended
// it is dropped, as a signal to a closed workflow is. It panics when input
// does not encode.
func (env *TestWorkflowEnvironment) SignalWorkflow(name string, input any) {
	if !env.started {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(name, input) }, 0)
		return
	}
	lr := env.run
	if lr == nil {
		return
	}
	err := lr.cl.SignalWorkflow(context.Background(), lr.rootID, runID(lr.root), name, input)
	if err != nil && !errors.Is(err, engine.ErrJobClosed) {
		panic(fmt.Sprintf("testsuite: SignalWorkflow %q: %v", name, err))
	}
}

// SignalWorkflowByID sends a signal to the latest run of any workflow id
// in the environment (a child's, say) while ExecuteWorkflow runs.
func (env *TestWorkflowEnvironment) SignalWorkflowByID(workflowID, signalName string, input any) error {
	lr := env.run
	if lr == nil {
		return fmt.Errorf("testsuite: SignalWorkflowByID %q: %w", workflowID, errNotRunning(env))
	}
	return lr.cl.SignalWorkflow(context.Background(), workflowID, "", signalName, input)
}

// CancelWorkflow asks the workflow to cancel itself: its context is
// cancelled and its code decides how to end (a workflow that returns the
// context's error ends as cancelled). Before ExecuteWorkflow the request is
// kept for the run's start; after the run ended it is dropped.
func (env *TestWorkflowEnvironment) CancelWorkflow() {
	if !env.started {
		env.RegisterDelayedCallback(env.CancelWorkflow, 0)
		return
	}
	lr := env.run
	if lr == nil {
		return
	}
	if err := lr.cl.CancelWorkflow(context.Background(), lr.rootID, runID(lr.root)); err != nil &&
		!errors.Is(err, engine.ErrJobClosed) && !errors.Is(err, engine.ErrIllegalTransition) {
		panic(fmt.Sprintf("testsuite: CancelWorkflow: %v", err))
	}
}

// CancelWorkflowByID asks a run of any workflow id in the environment to
// cancel itself (runID "" means its latest run) while ExecuteWorkflow runs.
func (env *TestWorkflowEnvironment) CancelWorkflowByID(workflowID, runID string) {
	lr := env.run
	if lr == nil {
		return
	}
	_ = lr.cl.CancelWorkflow(context.Background(), workflowID, runID)
}

// QueryWorkflow calls the workflow's query handler queryType with args.
// It works while ExecuteWorkflow runs (from a delayed callback) and after
// it returned, on the state of the run's recorded history.
func (env *TestWorkflowEnvironment) QueryWorkflow(queryType string, args ...any) (converter.EncodedValue, error) {
	switch {
	case env.run != nil:
		return env.query(env.run.rootID, runID(env.run.root), queryType, args...)
	case env.after != nil && env.after.err == nil:
		return env.query(env.after.rootID, runID(env.after.root), queryType, args...)
	}
	return nil, fmt.Errorf("testsuite: QueryWorkflow: %w", errNotRunning(env))
}

// QueryWorkflowByID is QueryWorkflow for the latest run of any workflow id
// in the environment.
func (env *TestWorkflowEnvironment) QueryWorkflowByID(workflowID, queryType string, args ...any) (converter.EncodedValue, error) {
	return env.query(workflowID, "", queryType, args...)
}

func (env *TestWorkflowEnvironment) query(workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	svc, err := env.service()
	if err != nil {
		return nil, err
	}
	// A worker that is not started answers queries by replaying the
	// history with the registered code; it claims nothing.
	w, err := env.newWorker(client.New(svc), DefaultTaskQueue)
	if err != nil {
		return nil, err
	}
	return w.QueryWorkflow(context.Background(), workflowID, runID, queryType, args...)
}

func runID(id engine.JobID) string { return strconv.FormatUint(uint64(id), 10) }

func errNotRunning(env *TestWorkflowEnvironment) error {
	if env.after != nil && env.after.err != nil {
		return env.after.err
	}
	if env.started {
		return errors.New("the workflow's run is over")
	}
	return errors.New("ExecuteWorkflow has not started the workflow")
}
