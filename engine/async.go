package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Asynchronous activity completion, as Temporal's: an activity task (an
// activity run as a job of its own, on another task queue than its
// workflow's) whose code returns the SDK's ErrResultPending is parked by
// its worker, waiting on AsyncCompletionSignal, and someone else ends it
// later with CompleteAsync, naming the attempt that parked it (the task
// token); the token may also come while that attempt still runs. The job's end becomes its workflow's step effect as any activity
// task's does. A token of another attempt, or of a task that already ended,
// is refused with ErrStaleAttempt.

// AsyncCompletionSignal is the signal a parked activity task waits on. It
// is never delivered: CompleteAsync ends the wait.
const AsyncCompletionSignal = "heddle.async_completion"

// ReasonAsyncCompletion marks the wait_completed and job_leased events of
// an activity task completed asynchronously.
const ReasonAsyncCompletion = "async_completion"

// KindCompleteAsync is CompleteAsync's kind.
const KindCompleteAsync CommandKind = 28

func init() { commandNames[KindCompleteAsync] = "CompleteAsync" }

// CompleteAsync ends a parked activity task by its token: Completed with
// Result, or Failed with Error (a failure payload) when Error is set. In
// the job's history it reads as the wait ending, a lease taken by
// "async-completion", and the end.
type CompleteAsync struct {
	Header
	LeaseRef
	Result []byte `json:"result,omitempty" msgpack:"r,omitempty"`
	Error  []byte `json:"error,omitempty" msgpack:"e,omitempty"`
}

func (*CompleteAsync) Kind() CommandKind { return KindCompleteAsync }

func (c *CompleteAsync) check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.payload("Result", c.Result)
	ch.payload("Error", c.Error)
	if c.Result != nil && c.Error != nil {
		ch.fail("Error", "is set with Result: give one")
	}
	return ch.err
}

func (a *applier) completeAsync(c *CompleteAsync) (Result, error) {
	l, err := a.load(c.Job)
	if err != nil {
		return nil, err
	}
	j := l.job
	if !strings.HasPrefix(j.Type, ActivityTypePrefix) {
		return nil, invalid("CompleteAsync", "Job", fmt.Sprintf("job %d is not an activity task (type %q)", j.ID, j.Type))
	}
	parked := (j.Status == StatusParked || j.Status == StatusWaiting) && j.Wait != nil && slices.Contains(j.Wait.Signals, AsyncCompletionSignal)
	if (!parked && j.Status != StatusRunning) || j.Attempt != c.Attempt {
		return nil, &StaleAttemptError{Job: j.ID, Attempt: c.Attempt, Current: j.Attempt, Status: j.Status, Command: "CompleteAsync"}
	}
	// A token may arrive before its activity has returned ErrResultPending
	// (the code handed it over first): the attempt is still Running, and
	// ends here; its worker's own writes are then refused as stale.
	if parked {
		if _, err := a.appendEvent(l, Event{Type: EventWaitCompleted, Reason: ReasonAsyncCompletion}); err != nil {
			return nil, err
		}
		j.Attempt++
		if _, err := a.appendEvent(l, Event{Type: EventJobLeased, Attempt: j.Attempt, Name: ReasonAsyncCompletion, LeaseExpiryMS: a.now}); err != nil {
			return nil, err
		}
	}
	end := Event{Type: EventJobCompleted, Attempt: j.Attempt, Payload: c.Result}
	if c.Error != nil {
		end = Event{Type: EventJobFailed, Attempt: j.Attempt, Payload: c.Error}
	}
	seq, err := a.appendEvent(l, end)
	if err != nil {
		return nil, err
	}
	if err := a.closed(l, &end); err != nil {
		return nil, err
	}
	a.save(l)
	return &StatusResult{Job: j.ID, Status: j.Status, Seq: seq}, nil
}

// AsyncService completes parked activity tasks; *Engine implements it, and
// engine/httpapi's client over HTTP. Safe for concurrent use.
type AsyncService interface {
	CompleteAsync(ctx context.Context, c CompleteAsync) (*StatusResult, error)
}

var _ AsyncService = (*Engine)(nil)

// CompleteAsync ends a parked activity task.
func (e *Engine) CompleteAsync(ctx context.Context, c CompleteAsync) (*StatusResult, error) {
	return propose[*StatusResult](ctx, e, &c)
}
