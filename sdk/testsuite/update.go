package testsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// UpdateCallbacks receives the outcome of an update sent with
// UpdateWorkflow: Accept or Reject once the workflow's validator decided,
// then, for an accepted update, Complete with the handler's result or
// error. The environment calls them on a goroutine of its own while the
// run goes on, and before ExecuteWorkflow returns.
type UpdateCallbacks interface {
	Accept()
	Reject(err error)
	Complete(success any, err error)
}

// TestUpdateCallback is an UpdateCallbacks of three functions; a nil one
// does nothing.
type TestUpdateCallback struct {
	OnAccept   func()
	OnReject   func(error)
	OnComplete func(any, error)
}

// Accept calls OnAccept.
func (uc *TestUpdateCallback) Accept() {
	if uc.OnAccept != nil {
		uc.OnAccept()
	}
}

// Reject calls OnReject.
func (uc *TestUpdateCallback) Reject(err error) {
	if uc.OnReject != nil {
		uc.OnReject(err)
	}
}

// Complete calls OnComplete.
func (uc *TestUpdateCallback) Complete(success any, err error) {
	if uc.OnComplete != nil {
		uc.OnComplete(success, err)
	}
}

// updates tracks the goroutines that wait for updates' outcomes, so that
// ExecuteWorkflow returns only after their callbacks ran.
type updates struct {
	wg sync.WaitGroup
	mu sync.Mutex
	// results holds the Go values update handlers returned, by run id and
	// update id (updateKey), for Complete.
	results map[string]any
}

func updateKey(runID, updateID string) string { return runID + "\x00" + updateID }

// UpdateCompleted implements sdkhook.TestEnv: it keeps the value an update
// handler returned until the update's callbacks are called.
func (h envHooks) UpdateCompleted(runID, updateID string, result any) {
	u := &h.env.updates
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.results == nil {
		u.results = map[string]any{}
	}
	u.results[updateKey(runID, updateID)] = result
}

// takeResult returns, and forgets, the value the handler of update
// updateID of run runID returned; ok is false when it did not hand one.
func (u *updates) takeResult(runID, updateID string) (result any, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := updateKey(runID, updateID)
	result, ok = u.results[k]
	delete(u.results, k)
	return result, ok
}

// UpdateWorkflow sends the update updateName with args to the workflow
// ExecuteWorkflow runs (usually from a delayed callback; before
// ExecuteWorkflow it is kept for the run's start, as SignalWorkflow is).
// updateID "" gets a generated id. The outcome reaches uc: Accept or
// Reject, then Complete. Complete gets the value the handler returned (a
// Response, say, not its JSON encoding), as in Temporal. An update the run
// cannot take (the run has ended) is rejected.
func (env *TestWorkflowEnvironment) UpdateWorkflow(updateName, updateID string, uc UpdateCallbacks, args ...any) {
	if !env.started {
		env.RegisterDelayedCallback(func() { env.UpdateWorkflow(updateName, updateID, uc, args...) }, 0)
		return
	}
	lr := env.run
	if lr == nil {
		uc.Reject(fmt.Errorf("testsuite: UpdateWorkflow %q: %w", updateName, errNotRunning(env)))
		return
	}
	if err := env.sendUpdate(lr.rootID, runID(lr.root), updateName, updateID, uc, args); err != nil {
		uc.Reject(err)
	}
}

// UpdateWorkflowByID is UpdateWorkflow for the latest run of any workflow
// id in the environment (a child's, say). It returns an error when the
// update cannot be sent (the environment is not running, the id is
// unknown); the outcome goes to uc.
func (env *TestWorkflowEnvironment) UpdateWorkflowByID(workflowID, updateName, updateID string, uc UpdateCallbacks, args ...any) error {
	if env.run == nil {
		return fmt.Errorf("testsuite: UpdateWorkflowByID %q: %w", workflowID, errNotRunning(env))
	}
	return env.sendUpdate(workflowID, "", updateName, updateID, uc, args)
}

// UpdateWorkflowNoRejection is UpdateWorkflow with callbacks that fail t
// when the update is rejected.
func (env *TestWorkflowEnvironment) UpdateWorkflowNoRejection(updateName, updateID string, t mock.TestingT, args ...any) {
	env.UpdateWorkflow(updateName, updateID, &TestUpdateCallback{
		OnReject: func(err error) { t.Errorf("update %s should not be rejected: %v", updateName, err) },
	}, args...)
}

// sendUpdate validates the update and writes the request (a signal, durable
// at once, so the driver sees the run has work), then waits for its
// outcome on a goroutine; an update its validation rejects is rejected at
// once.
func (env *TestWorkflowEnvironment) sendUpdate(workflowID, run, updateName, updateID string, uc UpdateCallbacks, args []any) error {
	lr := env.run
	h, err := lr.cl.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
		WorkflowID: workflowID, RunID: run, UpdateName: updateName, UpdateID: updateID, Args: args,
		WaitForStage: client.WorkflowUpdateStageAdmitted,
	})
	var rej *client.UpdateRejectedError
	if errors.As(err, &rej) {
		// Rejected before it was admitted: the callback gets the
		// validator's error, as Temporal's does.
		uc.Reject(rej.Cause)
		return nil
	}
	if err != nil {
		return fmt.Errorf("testsuite: update %s of %s: %w", updateName, workflowID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	env.updates.wg.Add(1)
	go func() {
		defer env.updates.wg.Done()
		defer cancel()
		go func() {
			// The run's end stops a wait for an update it never took.
			select {
			case <-lr.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		job, _ := strconv.ParseUint(h.RunID(), 10, 64)
		decision, err := waitUpdateMarker(ctx, lr.eng, engine.JobID(job), h.UpdateID(), "decision")
		switch {
		case err != nil:
			uc.Reject(fmt.Errorf("testsuite: update %s: %w", updateName, err))
			return
		case decision.Failure != nil:
			uc.Reject(sdkhook.DecodeFailure(decision.Failure))
			return
		}
		uc.Accept()
		done, err := waitUpdateMarker(ctx, lr.eng, engine.JobID(job), h.UpdateID(), "completed")
		switch {
		case err != nil:
			uc.Complete(nil, fmt.Errorf("testsuite: update %s: %w", updateName, err))
			return
		case done.Failure != nil:
			uc.Complete(nil, sdkhook.DecodeFailure(done.Failure))
			return
		}
		// Complete gets the value the handler returned, as in Temporal;
		// the JSON decoding of the recorded result is the fallback.
		if result, ok := env.updates.takeResult(h.RunID(), h.UpdateID()); ok {
			uc.Complete(result, nil)
			return
		}
		var result any
		if len(done.Result) > 0 {
			if derr := converter.Decode(done.Result, &result); derr != nil {
				uc.Complete(nil, derr)
				return
			}
		}
		uc.Complete(result, nil)
	}()
	return nil
}

// waitUpdateMarker reads job's history until the marker of the update's
// stage ("decision", "completed") is there, or the run has ended without
// it.
func waitUpdateMarker(ctx context.Context, svc engine.Service, job engine.JobID, id, stage string) (*workflow.UpdateOutcome, error) {
	step := "k:" + workflow.UpdateMarkerKey(id, stage)
	for after := uint64(0); ; {
		page, err := svc.WatchHistory(ctx, job, after, engine.MaxPage)
		if err != nil {
			return nil, err
		}
		for _, ev := range page.Events {
			after = ev.Seq
			if ev.Type == engine.EventMarkerRecorded && ev.Step == step {
				var o workflow.UpdateOutcome
				if err := json.Unmarshal(ev.Payload, &o); err != nil {
					return nil, fmt.Errorf("the %s marker of update %s: %w", stage, id, err)
				}
				return &o, nil
			}
			switch ev.Type {
			case engine.EventJobCompleted, engine.EventJobFailed, engine.EventJobCancelled, engine.EventJobTerminated, engine.EventJobTimedOut:
				return nil, fmt.Errorf("the run ended (%s) before the update's %s", ev.Type, stage)
			}
		}
	}
}

// updateSettleTimeout bounds how long the end of a run waits for the
// outcome of updates to runs still open (a child's, abandoned); updates of
// runs that ended know their outcome at once.
const updateSettleTimeout = time.Second

// settleUpdates lets every update's callbacks run before ExecuteWorkflow
// returns: first with the engine open, then, for the updates that wait on
// abandoned runs, by ending their waits.
func (env *TestWorkflowEnvironment) settleUpdates(closing func()) {
	done := make(chan struct{})
	go func() {
		env.updates.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		closing()
	case <-time.After(updateSettleTimeout):
		closing()
		<-done
	}
}

// CompleteActivity completes an activity that returned
// activity.ErrResultPending, with result or err, given the task token the
// activity read from activity.GetInfo(ctx).TaskToken; call it from a
// delayed callback. As in Temporal's test environment any activity may do
// so: one on its own task queue (ActivityOptions.TaskQueue) is completed
// through the engine, as heddle's client does, and one of its workflow's
// queue, which heddle runs inline, is held by the environment until this
// names its token (pending.go).
func (env *TestWorkflowEnvironment) CompleteActivity(taskToken []byte, result any, err error) error {
	if isInlineToken(taskToken) {
		return env.completeInline(taskToken, result, err)
	}
	lr := env.run
	if lr == nil {
		return fmt.Errorf("testsuite: CompleteActivity: %w", errNotRunning(env))
	}
	return lr.cl.CompleteActivity(context.Background(), taskToken, result, err)
}
