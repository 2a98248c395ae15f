package engine

import "context"

// Asynchronous activity completion, as Temporal's: an activity task (an
// activity run as a job of its own, on another task queue than its
// workflow's) whose code returns the SDK's ErrResultPending is parked by
// its worker, waiting on AsyncCompletionSignal, and someone else ends it
// later with CompleteAsync, naming the attempt that parked it and carrying
// that attempt's lease token (both are in the SDK's task token, which is
// therefore as hard to forge as the lease); the token may also come while
// that attempt still runs. The job's end becomes its workflow's step
// effect as any activity task's does. A token of another attempt, one
// without the attempt's lease token, or one of a task that already ended,
// is refused with ErrStaleAttempt.
//
// CompleteAsync with ByID is Temporal's CompleteActivityByID: it names the
// task by ids anyone who may read the run can learn, and carries no lease
// token. It completes only a parked task (one whose code returned
// ErrResultPending, handing its completion over), never a running attempt,
// which only its task token may end: a client's documented capability
// (docs/security.md), as cancelling the task is.

// AsyncCompletionSignal is the signal a parked activity task waits on. It
// is never delivered: CompleteAsync ends the wait.
const AsyncCompletionSignal = "heddle.async_completion"

// ReasonAsyncCompletion marks the wait_completed and job_leased events of
// an activity task completed asynchronously.
const ReasonAsyncCompletion = "async_completion"

// CompleteAsync ends a parked activity task by its token: Completed with
// Result, or Failed with Error (a failure payload) when Error is set. In
// the job's history it reads as the wait ending, a lease taken by
// "async-completion", and the end.
type CompleteAsync struct {
	Header
	LeaseRef
	Result []byte `json:"result,omitempty" msgpack:"r,omitempty"`
	Error  []byte `json:"error,omitempty" msgpack:"e,omitempty"`
	// ByID completes the task's current attempt without its lease token
	// (Temporal's CompleteActivityByID), while it is parked for
	// asynchronous completion: the caller read the attempt from the task's
	// record. False: LeaseRef.Token must be the attempt's.
	ByID bool `json:"by_id,omitempty" msgpack:"bid,omitempty"`
}

func (*CompleteAsync) Kind() CommandKind { return KindCompleteAsync }

func (c *CompleteAsync) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	if c.ByID && c.Token != "" && ch.err == nil {
		ch.fail("Token", "is set with ByID: a completion by id carries no lease token")
	}
	ch.payload("Result", c.Result)
	ch.payload("Error", c.Error)
	if c.Result != nil && c.Error != nil {
		ch.fail("Error", "is set with Result: give one")
	}
	return ch.err
}

// AsyncService completes parked activity tasks; *embedded.Engine implements it, and
// engine/httpapi's client over HTTP. Safe for concurrent use.
type AsyncService interface {
	CompleteAsync(ctx context.Context, c CompleteAsync) (*StatusResult, error)
}
