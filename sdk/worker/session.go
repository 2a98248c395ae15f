package worker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// Worker sessions (workflow.CreateSession), built as Temporal builds them:
// a worker with Options.EnableSessionWorker also claims from two more
// queues. On its queue's creation queue it claims, while it has a free
// session slot, the creation activity of a session: a long-running activity
// task that tells the workflow, by a signal, the name of a queue that only
// this worker claims from, and then heartbeats until the session ends. The
// workflow sends the session's activities to that queue. The creation
// task's job is created with engine.CreateJob.TimeoutOnLeaseExpiry, so a
// worker that dies (its lease runs out) ends it with a heartbeat timeout
// rather than handing it to another worker, and the workflow marks the
// session failed; a worker that stops ends its sessions' creation tasks
// with a SessionWorkerShutdown failure, which does the same.

// defaultMaxConcurrentSessions is Options.MaxConcurrentSessionExecutionSize
// when 0, Temporal's default.
const defaultMaxConcurrentSessions = 1000

// maxSessionHeartbeatInterval bounds the pause between two heartbeats of a
// creation task, as in Temporal.
const maxSessionHeartbeatInterval = 10 * time.Second

// sessionHost is the session side of one worker: the two queues it claims
// from and the sessions open on it.
type sessionHost struct {
	parent   *queueWorker
	hostName string
	// queue is the queue only this worker claims from: the session
	// activities' queue.
	queue string
	// creation claims creation tasks, one job slot per session; run claims
	// the session activities.
	creation, run *queueWorker

	// slots holds a token per open session, up to
	// Options.MaxConcurrentSessionExecutionSize.
	slots chan struct{}

	mu sync.Mutex
	// done holds, per open session id, what the completion activity ends.
	done map[string]openSession
}

// afterSessionDone, set only by tests, runs in a creation activity that saw
// its session completed, before the activity returns: it lets a test hold
// the activity there while the workflow goes on.
var afterSessionDone atomic.Pointer[func()]

// openSession is one session held by its creation activity: done is closed
// to end the activity, and release gives back the session's slot (once,
// whichever of the completion and the activity's return comes first).
type openSession struct {
	done    chan struct{}
	release func()
}

// startSessions starts the session side of a worker with sessions enabled.
func (w *queueWorker) startSessions() error {
	if !w.opts.EnableSessionWorker {
		return nil
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	var id [6]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read does not fail
	h := &sessionHost{parent: w, hostName: host, done: map[string]openSession{}}
	// The resource id part makes the queue unique to this worker even
	// when several workers of one queue share a host (and a process).
	h.queue = fmt.Sprintf("%s@%s@%x", w.queue, host, id)

	slots := w.opts.MaxConcurrentSessionExecutionSize
	if slots == 0 {
		slots = defaultMaxConcurrentSessions
	}
	h.slots = make(chan struct{}, slots)
	h.creation = w.subWorker(w.queue+sdkhook.SessionCreationQueueSuffix, slots,
		map[string]any{sdkhook.SessionCreationActivity: h.createActivity}, nil)
	w.mu.Lock()
	acts, dyn := maps.Clone(w.activities), w.dynActivity
	w.mu.Unlock()
	acts[sdkhook.SessionCompletionActivity] = h.completeActivity
	// RecreateSession sends its creation activity to the session queue
	// itself, so that the new session opens on this worker.
	acts[sdkhook.SessionCreationActivity] = h.createActivity
	h.run = w.subWorker(h.queue, w.opts.MaxConcurrentJobs, acts, dyn)
	// The session's activities count against the worker's activity slots,
	// as its other activities do.
	h.run.activitySlots = w.activitySlots
	if err := h.run.Start(); err != nil {
		return err
	}
	if err := h.creation.Start(); err != nil {
		h.run.Stop()
		return err
	}
	w.sessions = h
	return nil
}

// subWorker returns a worker of queue that shares w's service, client and
// options, runs only the given activities, and drives at most maxJobs jobs.
func (w *queueWorker) subWorker(queue string, maxJobs int, acts map[string]any, dyn any) *queueWorker {
	opts := w.opts
	opts.MaxConcurrentJobs = maxJobs
	opts.MaxConcurrentActivityExecutionSize = 0 // the caller shares w's slots where it wants them
	opts.EnableSessionWorker = false
	sub := &queueWorker{e: w.e, queue: queue, opts: opts, backend: w.backend,
		workflows: map[string]any{}, activities: acts, dynActivity: dyn, cache: replay.NewCache(0)}
	sub.obs = newObserver(queue, opts)
	return sub
}

// shutdownSessions stops the session side, at the same time as the worker
// itself, and returns a function that waits for it.
func (w *queueWorker) shutdownSessions(ctx context.Context) func() error {
	h := w.sessions
	if h == nil {
		return func() error { return nil }
	}
	errs := make(chan error, 2)
	for _, sub := range []*queueWorker{h.creation, h.run} {
		go func() { errs <- sub.Shutdown(ctx) }()
	}
	return func() error { return errors.Join(<-errs, <-errs) }
}

// createActivity is the creation activity of session sessionID on this
// worker: it tells the workflow where the session lives, then holds the
// session (and its job slot on the creation queue) until the workflow
// completes it, cancels it, or the worker stops.
func (h *sessionHost) createActivity(ctx context.Context, sessionID string) error {
	info := activity.GetInfo(ctx)
	run, err := strconv.ParseUint(info.WorkflowExecution.RunID, 10, 64)
	if err != nil || run == 0 {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s: the run id %q of its workflow is not a job id", sessionID, info.WorkflowExecution.RunID), "BadSession", err)
	}
	// Every open session holds a slot. One claimed from the creation queue
	// finds one free (that queue's claims are bounded by the slots) unless
	// recreated sessions hold them, and then waits; a recreated session,
	// claimed from the session queue, fails at once when none is free.
	select {
	case h.slots <- struct{}{}:
	default:
		if info.TaskQueue == h.queue {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s: too many outstanding sessions", sessionID), "TooManySessions", nil)
		}
		select {
		case h.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The completion activity gives the slot back before it returns, so that
	// a session recreated right after CompleteSession (which waits for that
	// activity) finds it free; the creation activity returns later, when it
	// sees done closed.
	release := sync.OnceFunc(func() { <-h.slots })
	defer release()
	done := make(chan struct{})
	h.mu.Lock()
	h.done[sessionID] = openSession{done: done, release: release}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.done, sessionID)
		h.mu.Unlock()
	}()

	payload, err := converter.Encode(sdkhook.SessionCreated{TaskQueue: h.queue, HostName: h.hostName})
	if err != nil {
		return err
	}
	if _, err := h.parent.e.Signal(ctx, engine.Signal{Target: engine.Target{Job: engine.JobID(run)},
		Name: sessionID, Payload: payload}); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s: telling the workflow: %v", sessionID, err), "SessionSignalFailed", err)
	}

	if _, short := h.parent.opts.Clock.(sdkhook.ShortSessions); short {
		// The test environment: the session stays open in the workflow,
		// and no running activity holds the environment's clock.
		return nil
	}
	interval := maxSessionHeartbeatInterval
	if hb := info.HeartbeatTimeout / 3; hb > 0 && hb < interval {
		interval = hb
	}
	stop := activity.GetWorkerStopChannel(ctx)
	for {
		t := h.parent.opts.Clock.NewTimer(interval)
		select {
		case <-done:
			t.Stop()
			if hook := afterSessionDone.Load(); hook != nil {
				(*hook)()
			}
			return nil
		case <-stop:
			t.Stop()
			return temporal.NewNonRetryableApplicationError("session failed due to worker shutdown", "SessionWorkerShutdown", nil)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
			// Each heartbeat renews the task's lease and brings back the
			// workflow's cancellation (CompleteSession's, when the
			// completion activity could not reach this worker).
			activity.RecordHeartbeat(ctx)
		}
	}
}

// completeActivity ends session sessionID on this worker at once: its
// creation activity returns and frees its session slot.
func (h *sessionHost) completeActivity(_ context.Context, sessionID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.done[sessionID]; ok {
		close(s.done)
		s.release()
		delete(h.done, sessionID)
	}
	return nil
}

// SessionQueues lists the queues the worker's session side claims from
// (none without Options.EnableSessionWorker, or before Start), for the test
// environment, which must not start workers of its own on them.
func (w *queueWorker) SessionQueues() []string {
	if w.sessions == nil {
		return nil
	}
	return []string{w.sessions.creation.queue, w.sessions.run.queue}
}
