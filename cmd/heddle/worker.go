package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

const (
	// pollInterval is how long an idle worker waits before claiming again:
	// the engine has no blocking claim yet, so workers poll.
	pollInterval = 20 * time.Millisecond
	// stepTries bounds the tries of one step before the worker gives up.
	stepTries = 3
	// retryBackoff is the pause between two tries of a failed step.
	retryBackoff = 50 * time.Millisecond
)

// worker is the demo's stand-in for the SDK worker: it claims order jobs,
// reads their history, skips the steps already committed, runs the others
// and commits each one with a fenced CommitStep.
type worker struct {
	name    string
	e       *engine.Engine
	clock   clock.Clock
	leaseMS int64
	acts    *activities
	orders  map[string]order
	rep     *reporter
	// crash, if set, makes the worker crash just before it commits a step,
	// as a process killed between doing the work and recording it would.
	crash func(wf, step string, attempt uint64) bool
	// onClaim, if set, runs right after a claim is reported, before any step.
	onClaim func(ctx context.Context, cj engine.ClaimedJob) error
}

// crashError is what a crashed worker leaves behind: the write it was about
// to make, which the demo replays later as the "zombie" attempt's late write.
type crashError struct {
	wf      string
	ref     engine.LeaseRef
	step    string
	payload []byte
}

func (c *crashError) Error() string {
	return fmt.Sprintf("worker crashed before committing %s of %s (attempt %d)", c.step, c.wf, c.ref.Attempt)
}

// run claims and processes jobs until ctx ends. It returns nil when ctx ends
// and the first error otherwise.
func (w *worker) run(ctx context.Context) error {
	for {
		cj, ok, err := w.claim(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if !ok {
			if sleep(ctx, w.clock, pollInterval) != nil {
				return nil
			}
			continue
		}
		if err := w.process(ctx, cj); err != nil {
			return err
		}
	}
}

// claim takes at most one ready order.
func (w *worker) claim(ctx context.Context) (engine.ClaimedJob, bool, error) {
	jobs, err := w.e.Claim(ctx, engine.Claim{Queue: orderQueue, Owner: w.name, Max: 1, LeaseMS: w.leaseMS})
	if err != nil || len(jobs) == 0 {
		return engine.ClaimedJob{}, false, err
	}
	return jobs[0], true, nil
}

// process drives one claimed job while a heartbeat keeps its lease alive.
// If the heartbeat is refused, the job is no longer ours: the job context is
// cancelled with the refusal as its cause, and that cause is returned.
func (w *worker) process(ctx context.Context, cj engine.ClaimedJob) error {
	ref := engine.LeaseRef{Job: cj.Job, Attempt: cj.Attempt}
	jobCtx, cancel := context.WithCancelCause(ctx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(jobCtx, cancel, ref)
	}()
	err := w.drive(jobCtx, cj, ref)
	if cause := context.Cause(jobCtx); err != nil && cause != nil && ctx.Err() == nil {
		err = cause
	}
	// Stopping the heartbeat is also how a crash looks from the engine's
	// side: nobody renews the lease any more.
	cancel(nil)
	<-hbDone
	return err
}

// heartbeat renews the lease five times per lease period until ctx ends, so
// that one slow commit never lets a live worker's lease lapse.
func (w *worker) heartbeat(ctx context.Context, stop context.CancelCauseFunc, ref engine.LeaseRef) {
	every := time.Duration(w.leaseMS/5) * time.Millisecond
	for sleep(ctx, w.clock, every) == nil {
		if _, err := w.e.HeartbeatOne(ctx, ref, w.leaseMS); err != nil {
			if ctx.Err() == nil {
				stop(fmt.Errorf("heartbeat of job %d attempt %d: %w", ref.Job, ref.Attempt, err))
			}
			return
		}
	}
}

// drive runs the order's remaining steps, waiting at its gate if it has one,
// and completes the job. A history read at claim time is the worker's whole
// knowledge of what happened before: that is what makes recovery work.
func (w *worker) drive(ctx context.Context, cj engine.ClaimedJob, ref engine.LeaseRef) error {
	o, ok := w.orders[cj.WorkflowID]
	if !ok {
		return fmt.Errorf("job %d: workflow id %q is not a demo order", cj.Job, cj.WorkflowID)
	}
	hist, err := readHistory(ctx, w.e, cj.Job)
	if err != nil {
		return err
	}
	w.reportClaim(cj, hist)
	if w.onClaim != nil {
		if err := w.onClaim(ctx, cj); err != nil {
			return err
		}
	}
	committed := committedSteps(hist)
	for _, step := range orderSteps {
		if ev, ok := committed[step]; ok {
			w.rep.order(cj.WorkflowID, "step %s already committed at seq %d by attempt %d: skipped", step, ev.Seq, ev.Attempt)
			continue
		}
		if g := o.gate; g != nil && g.before == step && !g.passed(hist) {
			// The wait's SeenSeq is the last event this attempt read, not
			// the last it wrote: a signal that arrived after the read must
			// still count as "already happened".
			released, err := w.wait(ctx, cj, ref, g, hist[len(hist)-1].Seq)
			if err != nil || released {
				return err
			}
		}
		if err := w.runStep(ctx, cj, ref, step, startedBefore(hist, step, cj.Attempt)); err != nil {
			return err
		}
	}
	return w.complete(ctx, cj, ref)
}

// reportClaim prints the claim, and for a later attempt why the job became
// claimable again (the engine records it on the status event before the claim).
func (w *worker) reportClaim(cj engine.ClaimedJob, hist []engine.Event) {
	if cj.Attempt == 1 {
		w.rep.order(cj.WorkflowID, "claimed by %s (job %d, attempt 1, lease %d ms)", w.name, cj.Job, w.leaseMS)
		return
	}
	w.rep.order(cj.WorkflowID, "claimed by %s (job %d, attempt %d, after %s); history has %d events",
		w.name, cj.Job, cj.Attempt, resumeReason(hist), len(hist))
}

// resumeReason describes the status event that made the job claimable again.
func resumeReason(hist []engine.Event) string {
	for i := len(hist) - 2; i >= 0; i-- { // the last event is the new claim
		switch ev := hist[i]; ev.Type {
		case engine.EventJobRequeued:
			return "job_requeued: " + ev.Reason
		case engine.EventWaitCompleted:
			return fmt.Sprintf("wait_completed: %s %s", ev.Reason, ev.Name)
		}
	}
	return "an unknown event"
}

// runStep runs one step, retrying a failed try after a pause, and commits
// its result. Each try is announced with activity_started; a failed try is
// recorded with activity_failed so the history tells the whole story.
func (w *worker) runStep(ctx context.Context, cj engine.ClaimedJob, ref engine.LeaseRef, step string, earlier *engine.Event) error {
	wf := cj.WorkflowID
	if earlier != nil {
		w.rep.order(wf, "step %s was started by attempt %d (seq %d) but never committed: running it again",
			step, earlier.Attempt, earlier.Seq)
	}
	for try := 1; ; try++ {
		if err := w.append(ctx, ref, engine.NewEvent{Type: evActivityStarted, Step: step,
			Payload: fmt.Appendf(nil, `{"try":%d}`, try)}); err != nil {
			return err
		}
		result, err := w.acts.run(ctx, wf, step)
		if err != nil {
			if ctx.Err() != nil || try == stepTries {
				return fmt.Errorf("%s step %s: %w", wf, step, err)
			}
			if err := w.recordFailure(ctx, ref, wf, step, try, err); err != nil {
				return err
			}
			if err := sleep(ctx, w.clock, retryBackoff); err != nil {
				return err
			}
			continue
		}
		if w.crash != nil && w.crash(wf, step, ref.Attempt) {
			return &crashError{wf: wf, ref: ref, step: step, payload: result}
		}
		return w.commit(ctx, wf, ref, step, result)
	}
}

// recordFailure appends activity_failed for a try that failed and will be retried.
func (w *worker) recordFailure(ctx context.Context, ref engine.LeaseRef, wf, step string, try int, cause error) error {
	payload := fmt.Appendf(nil, `{"try":%d,"error":%q}`, try, cause.Error())
	if err := w.append(ctx, ref, engine.NewEvent{Type: evActivityFailed, Step: step, Payload: payload}); err != nil {
		return err
	}
	w.rep.order(wf, "step %s failed (try %d): %v; activity_failed recorded, retrying in %d ms",
		step, try, cause, retryBackoff.Milliseconds())
	return nil
}

// commit records the step's effect and completion event in one fenced command.
func (w *worker) commit(ctx context.Context, wf string, ref engine.LeaseRef, step string, result []byte) error {
	res, err := w.e.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: step,
		Type: evActivityCompleted, Payload: result})
	if err != nil {
		return fmt.Errorf("%s commit %s: %w", wf, step, err)
	}
	w.rep.order(wf, "step %s committed at seq %d (attempt %d)", step, res.LastSeq, ref.Attempt)
	return nil
}

func (w *worker) append(ctx context.Context, ref engine.LeaseRef, ev engine.NewEvent) error {
	_, err := w.e.Append(ctx, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{ev}})
	if err != nil {
		return fmt.Errorf("append %s of step %s to job %d: %w", ev.Type, ev.Step, ref.Job, err)
	}
	return nil
}

// wait blocks the job at its gate. It reports released=true when the job
// now waits and its lease is gone (the worker must let it go), and false
// when the engine found the wait already over and the job stays ours.
func (w *worker) wait(ctx context.Context, cj engine.ClaimedJob, ref engine.LeaseRef, g *gate, seenSeq uint64) (bool, error) {
	res, err := w.e.Wait(ctx, engine.Wait{LeaseRef: ref, Spec: g.spec(w.clock.Now().UnixMilli()), SeenSeq: seenSeq})
	if err != nil {
		return false, fmt.Errorf("%s wait for %s: %w", cj.WorkflowID, g.what, err)
	}
	if res.Woken {
		w.rep.order(cj.WorkflowID, "%s already happened: no wait, continuing", g.what)
		return false, nil
	}
	w.rep.order(cj.WorkflowID, "waits for %s before %s: job is %s, lease released", g.what, g.before, res.Status)
	return true, nil
}

// complete ends the job successfully.
func (w *worker) complete(ctx context.Context, cj engine.ClaimedJob, ref engine.LeaseRef) error {
	res, err := w.e.Complete(ctx, engine.Complete{LeaseRef: ref, Result: []byte(`{"status":"shipped"}`)})
	if err != nil {
		return fmt.Errorf("%s complete: %w", cj.WorkflowID, err)
	}
	w.rep.order(cj.WorkflowID, "completed (attempt %d, %s at seq %d)", ref.Attempt, res.Status, res.Seq)
	return nil
}

// readHistory reads a job's whole history, page by page.
func readHistory(ctx context.Context, e *engine.Engine, id engine.JobID) ([]engine.Event, error) {
	var all []engine.Event
	var after uint64
	for {
		page, err := e.History(ctx, id, after, engine.MaxPage)
		if err != nil {
			return nil, fmt.Errorf("history of job %d: %w", id, err)
		}
		all = append(all, page.Events...)
		if page.Next == 0 {
			return all, nil
		}
		after = page.Next
	}
}

// committedSteps maps each committed step to the event that committed it:
// CommitStep marks that event with Commit, and a step commits at most once.
func committedSteps(hist []engine.Event) map[string]engine.Event {
	out := map[string]engine.Event{}
	for _, ev := range hist {
		if ev.Commit {
			out[ev.Step] = ev
		}
	}
	return out
}

// startedBefore returns the last activity_started of step written by an
// earlier attempt than attempt, or nil: a step started but never committed
// is one a crashed worker may have half done.
func startedBefore(hist []engine.Event, step string, attempt uint64) *engine.Event {
	var last *engine.Event
	for i := range hist {
		if ev := &hist[i]; ev.Type == evActivityStarted && ev.Step == step && ev.Attempt < attempt {
			last = ev
		}
	}
	return last
}

// isStale reports whether err is the engine's fencing refusal.
func isStale(err error) bool { return errors.Is(err, engine.ErrStaleAttempt) }
