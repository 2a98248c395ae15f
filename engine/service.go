package engine

import (
	"context"
	"fmt"
)

// Service is everything a client or worker asks of heddle: the typed
// commands and the reads. *embedded.Engine implements it in-process; package
// engine/httpapi implements it over HTTP against one node or a cluster, so
// the SDK runs unchanged on either.
//
// Every method is safe for concurrent use. A method returns an error that
// matches one of this package's sentinels with errors.Is (ErrStaleAttempt,
// ErrUnknownJob, ...); a remote implementation maps the wire error back to
// the same sentinel. When a remote call's outcome is unknown (the node died
// mid-request) the implementation retries it with the same request id, so a
// command carrying one is applied at most once.
type Service interface {
	Create(ctx context.Context, c CreateJob) (*CreateResult, error)
	Claim(ctx context.Context, c Claim) ([]ClaimedJob, error)
	// ClaimWait is Claim that, when the queue is empty, waits until work
	// may have arrived and tries again; it returns with at least one job,
	// or with ctx's error. It never polls on a fixed tick.
	ClaimWait(ctx context.Context, c Claim) ([]ClaimedJob, error)
	Heartbeat(ctx context.Context, c Heartbeat) (*HeartbeatResult, error)
	Append(ctx context.Context, c AppendEvents) (*AppendResult, error)
	CommitStep(ctx context.Context, c CommitStep) (*AppendResult, error)
	Wait(ctx context.Context, c Wait) (*WaitResult, error)
	Signal(ctx context.Context, c Signal) (*SignalResult, error)
	Cancel(ctx context.Context, c Cancel) (*StatusResult, error)
	Activate(ctx context.Context, c Activate) (*StatusResult, error)
	Suspend(ctx context.Context, c Suspend) (*StatusResult, error)
	Resume(ctx context.Context, c Resume) (*StatusResult, error)
	Complete(ctx context.Context, c Complete) (*StatusResult, error)
	Fail(ctx context.Context, c Fail) (*StatusResult, error)
	Requeue(ctx context.Context, c Requeue) (*StatusResult, error)
	RequestCancel(ctx context.Context, c RequestCancel) (*StatusResult, error)
	// Terminate ends a run at once as Terminated (an operator's terminate).
	Terminate(ctx context.Context, c Terminate) (*StatusResult, error)
	ContinueAsNew(ctx context.Context, c ContinueAsNew) (*CreateResult, error)
	// Reset starts a new run of a run's workflow id from a turn boundary of
	// its history and ends the runs it replaces (Temporal's
	// ResetWorkflowExecution; see ResetJob).
	Reset(ctx context.Context, c ResetJob) (*ResetResult, error)

	// Pause holds a run and Unpause lets it go on; the activity commands
	// pause, unpause, reset and change the options of a run's pending
	// activities (docs/state-machines.md §6). People's commands, like
	// Suspend.
	Pause(ctx context.Context, c Pause) (*StatusResult, error)
	Unpause(ctx context.Context, c Unpause) (*StatusResult, error)
	PauseActivity(ctx context.Context, c PauseActivity) (*ActivityResult, error)
	UnpauseActivity(ctx context.Context, c UnpauseActivity) (*ActivityResult, error)
	ResetActivity(ctx context.Context, c ResetActivity) (*ActivityResult, error)
	UpdateActivityOptions(ctx context.Context, c UpdateActivityOptions) (*ActivityResult, error)

	// The step commands (see LeaseStep and the commands after it) and the
	// resource pool's.
	LeaseStep(ctx context.Context, c LeaseStep) (*StepResult, error)
	StepHeartbeat(ctx context.Context, c StepHeartbeat) (*StepResult, error)
	EndStepAttempt(ctx context.Context, c EndStepAttempt) (*StepResult, error)
	AnswerStep(ctx context.Context, c AnswerStep) (*StepResult, error)
	AddResource(ctx context.Context, c AddResource) (*ResourceResult, error)
	DrainResource(ctx context.Context, c DrainResource) (*ResourceResult, error)
	RemoveResource(ctx context.Context, c RemoveResource) (*ResourceResult, error)

	Describe(ctx context.Context, t Target) (*Job, error)
	History(ctx context.Context, id JobID, afterSeq uint64, limit int) (*HistoryPage, error)
	// WatchHistory is History that, while the job has no events after
	// afterSeq, waits until it has (or ctx ends). A worker driving a job
	// watches it to learn, while its activities run, of what others write:
	// signals, fired timers, cancel requests, recorded effects, and a status
	// change that ends its attempt. The events may come from a replica that
	// lags the leader: they are committed, but a caller that needs every
	// event up to now reads History.
	WatchHistory(ctx context.Context, id JobID, afterSeq uint64, limit int) (*HistoryPage, error)
	Effect(ctx context.Context, id JobID, step string) (*Effect, error)
	List(ctx context.Context, q ListQuery) (*ListPage, error)
	// Steps lists the activity steps of the job t names with their
	// states, tries, resources, workers, heartbeats and avoid-lists.
	Steps(ctx context.Context, t Target) ([]StepInfo, error)
	// Resources lists the resource pool.
	Resources(ctx context.Context) ([]*Resource, error)
	// WaitClosed blocks until the job t names is terminal and returns its
	// record, or until ctx ends.
	WaitClosed(ctx context.Context, t Target) (*Job, error)
}

// HeartbeatOne renews one lease through s and returns ErrStaleAttempt (or
// ErrUnknownJob) when it is refused, else the new expiry (Unix ms).
func HeartbeatOne(ctx context.Context, s Service, ref LeaseRef, leaseMS int64) (int64, error) {
	r, err := s.Heartbeat(ctx, Heartbeat{Leases: []LeaseRef{ref}, LeaseMS: leaseMS})
	if err != nil {
		return 0, err
	}
	if len(r.Refused) > 0 {
		if r.Refused[0].Code == StaleAttemptCode {
			return 0, fmt.Errorf("%w: heartbeat of job %d attempt %d", ErrStaleAttempt, ref.Job, ref.Attempt)
		}
		return 0, unknownJob(ref.Job)
	}
	return r.LeaseExpiryMS, nil
}

type staleReadKey struct{}

// WithStaleRead marks ctx so that reads through it skip the backend's read
// barrier: a cluster follower answers from its own state at once, which may
// lag the leader's by the replication delay. Without it every read is
// linearizable.
func WithStaleRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, staleReadKey{}, true)
}

// IsStaleRead reports whether ctx was marked by WithStaleRead.
func IsStaleRead(ctx context.Context) bool {
	v, _ := ctx.Value(staleReadKey{}).(bool)
	return v
}
