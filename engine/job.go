package engine

import "github.com/heddlewf/heddle/storage"

// JobID identifies one job (one workflow run). IDs are assigned by Apply from
// a counter, in creation order.
type JobID uint64

// Job is the stored record of a job: identity, the status projection and the
// bookkeeping the indexes are derived from. The history is the truth; every
// field here is kept equal to what the history implies.
type Job struct {
	ID         JobID  `msgpack:"id"`
	WorkflowID string `msgpack:"wf"`
	Type       string `msgpack:"ty"`
	Queue      string `msgpack:"qu"`
	Status     Status `msgpack:"st"`
	// Attempt is the current (latest) attempt; 0 until the first claim.
	Attempt uint64 `msgpack:"at,omitempty"`
	// LeaseOwner and LeaseExpiryMS describe the lease while Running.
	LeaseOwner    string `msgpack:"lo,omitempty"`
	LeaseExpiryMS int64  `msgpack:"le,omitempty"`
	// LastSeq is the seq of the newest event.
	LastSeq uint64 `msgpack:"ls"`
	// ReadyAtMS orders a Queued job in its ready index.
	ReadyAtMS int64 `msgpack:"ra,omitempty"`
	// ReleaseAtMS is when a Retrying job's delay ends.
	ReleaseAtMS int64 `msgpack:"rl,omitempty"`
	// Wait is what a Waiting or Parked job waits for.
	Wait *WaitSpec `msgpack:"wa,omitempty"`
	// Timers are the job's pending durable timers.
	Timers []Timer `msgpack:"tm,omitempty"`
	// Retries counts requeues after a failure or a retry request.
	Retries uint32 `msgpack:"rt,omitempty"`
	// StartDigest fingerprints type, queue and input, to recognise an
	// identical start under IDReuseReturnExisting.
	StartDigest uint64 `msgpack:"sd,omitempty"`
	// ParentID and ParentStep link a child job to the step of its parent
	// whose effect its result becomes.
	ParentID   JobID  `msgpack:"pi,omitempty"`
	ParentStep string `msgpack:"ps,omitempty"`
	// DeadlineMS ends the chain of runs (its execution timeout); 0: none.
	DeadlineMS int64 `msgpack:"dl,omitempty"`
	// RunDeadlineMS ends this run (its run timeout); 0: none. RunTimeoutMS
	// is that timeout, which every later run of the chain (ContinueAsNew,
	// a retry) gets afresh from its own start.
	RunDeadlineMS int64 `msgpack:"rdl,omitempty"`
	RunTimeoutMS  int64 `msgpack:"rto,omitempty"`
	// StartDeadlineMS ends the job unless it is claimed by then (its
	// schedule-to-start timeout); the first claim clears it. 0: none.
	StartDeadlineMS int64 `msgpack:"sdl,omitempty"`
	// TimeoutAtMS is when the earliest of the three deadlines above falls
	// due, as placed in the deadline index: the deadline itself, or the
	// time the entry was made when that deadline had already passed. 0 for
	// a job with no deadline, and for a job that ended.
	TimeoutAtMS int64 `msgpack:"toa,omitempty"`
	// Deferrals counts the claims in a row that passed the job over
	// because the claimer does not run its type (Claim.Types); a claim of
	// the job resets it. DeferredReason says who passed it over, and
	// DeferredUntilMS, while set, is when the Queued job becomes claimable
	// again (until then it sits in the delayed index, not the ready one).
	Deferrals       uint32 `msgpack:"dfn,omitempty"`
	DeferredReason  string `msgpack:"dfr,omitempty"`
	DeferredUntilMS int64  `msgpack:"dfu,omitempty"`
	// Retry is the workflow retry policy; RunAttempt numbers the runs of a
	// retry chain from 1.
	Retry      *RetryPolicy `msgpack:"rp,omitempty"`
	RunAttempt int32        `msgpack:"ra2,omitempty"`
	// CancelRequested records a RequestCancel, so heartbeats can tell the
	// worker holding the job to cancel the activities it runs.
	CancelRequested bool  `msgpack:"cq,omitempty"`
	CreatedMS       int64 `msgpack:"cr"`
	UpdatedMS       int64 `msgpack:"up"`
	ClosedMS        int64 `msgpack:"cl,omitempty"`
}

// Timer is one pending durable timer of a job.
type Timer struct {
	ID     string `msgpack:"i"`
	FireMS int64  `msgpack:"f"`
}

// Effect is a step's recorded result (phase 1 of the two-phase commit).
// CommittedSeq is the seq of the history event that committed it (phase 2),
// or 0 while the effect still waits to be caught up into the history.
type Effect struct {
	Step         string `msgpack:"s"`
	Payload      []byte `msgpack:"p,omitempty"`
	Failed       bool   `msgpack:"f,omitempty"`
	Attempt      uint64 `msgpack:"a,omitempty"`
	CommittedSeq uint64 `msgpack:"c,omitempty"`
	AtMS         int64  `msgpack:"at"`
}

const (
	jobVersion    = 1
	effectVersion = 1
)

// EncodeJob returns the stored form of j.
func EncodeJob(j *Job) []byte { return storage.MustEncode(storage.KindJob, jobVersion, j) }

// DecodeJob decodes a stored job record.
func DecodeJob(b []byte) (*Job, error) {
	j := new(Job)
	if _, err := storage.Decode(b, storage.KindJob, jobVersion, j); err != nil {
		return nil, err
	}
	return j, nil
}

// EncodeEffect returns the stored form of e.
func EncodeEffect(e *Effect) []byte { return storage.MustEncode(storage.KindEffect, effectVersion, e) }

// DecodeEffect decodes a stored effect record.
func DecodeEffect(b []byte) (*Effect, error) {
	e := new(Effect)
	if _, err := storage.Decode(b, storage.KindEffect, effectVersion, e); err != nil {
		return nil, err
	}
	return e, nil
}
