package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// Outcomes of a recorded operation, as the caller saw it.
const (
	OutOK        = "ok"        // applied
	OutStale     = "stale"     // refused: the attempt was not the current running one
	OutCommitted = "committed" // refused: the step already had a commit
	OutRefused   = "refused"   // refused for another definite reason (closed, unknown job, ...)
	OutUnknown   = "unknown"   // no answer: it may or may not have been applied
)

// OpRecord is one line of an operation log: a call, or the return of the
// call with the same ID. A call without a return (the process died) has an
// unknown outcome.
type OpRecord struct {
	ID   uint64 `json:"i"`
	Ret  bool   `json:"r,omitempty"`
	Op   string `json:"op,omitempty"`
	Job  uint64 `json:"j,omitempty"`
	Att  uint64 `json:"a,omitempty"`
	Step string `json:"s,omitempty"`
	T    int64  `json:"t"` // Unix ns
	Out  string `json:"o,omitempty"`
	// Woken: a Wait that found its wait already over (the job still runs).
	Woken bool `json:"w,omitempty"`
	// Claimed lists the jobs a claim returned; Refused the jobs a
	// heartbeat's answer refused as stale.
	Claimed []engine.LeaseRef `json:"c,omitempty"`
	Refused []uint64          `json:"rf,omitempty"`
}

// Recorder is an engine.Service that logs the call and the return of
// every claim and fenced write to a file before and after passing it on.
// Each line is one write(2) to an O_APPEND file, so a SIGKILL never loses a
// line already written: the page cache outlives the process.
type Recorder struct {
	engine.Service
	mu   sync.Mutex
	f    *os.File
	next uint64
	werr error // the first failed write, for Close
}

// NewRecorder wraps svc, logging to path.
func NewRecorder(svc engine.Service, path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Recorder{Service: svc, f: f}, nil
}

// Close closes the log. It returns the first failure to write a record,
// too: a log with a hole in it would mislead the checkers.
func (r *Recorder) Close() error {
	r.mu.Lock()
	werr := r.werr
	r.mu.Unlock()
	return errors.Join(werr, r.f.Close())
}

func (r *Recorder) write(rec OpRecord) {
	b, err := json.Marshal(rec)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		_, err = r.f.Write(append(b, '\n'))
	}
	if err != nil && r.werr == nil {
		r.werr = fmt.Errorf("chaos: writing the op log: %w", err)
	}
}

func (r *Recorder) call(op string, ref engine.LeaseRef, step string) uint64 {
	r.mu.Lock()
	r.next++
	id := r.next
	r.mu.Unlock()
	r.write(OpRecord{ID: id, Op: op, Job: uint64(ref.Job), Att: ref.Attempt, Step: step, T: time.Now().UnixNano()})
	return id
}

func (r *Recorder) ret(id uint64, err error, rec OpRecord) {
	rec.ID, rec.Ret, rec.T, rec.Out = id, true, time.Now().UnixNano(), Classify(err)
	r.write(rec)
}

// Classify maps a call's error to its outcome. Anything but a definite
// refusal from the engine (a timeout, a lost connection, a 503, a closed
// client) leaves the outcome unknown.
func Classify(err error) string {
	switch {
	case err == nil:
		return OutOK
	case isStaleStep(err):
		// A try of a step that no longer holds it: the job's attempt was
		// live, the step refused.
		return OutRefused
	case errors.Is(err, engine.ErrStaleAttempt):
		return OutStale
	case errors.Is(err, engine.ErrStepCommitted):
		return OutCommitted
	case errors.Is(err, engine.ErrJobClosed), errors.Is(err, engine.ErrUnknownJob),
		errors.Is(err, engine.ErrIllegalTransition), errors.Is(err, engine.ErrInvalidCommand),
		errors.Is(err, engine.ErrStepState), errors.Is(err, engine.ErrNoResource), errors.Is(err, engine.ErrDependencyFailed):
		return OutRefused
	}
	return OutUnknown
}

// isStaleStep reports a refusal of a step's try (a *engine.StaleStepError,
// in-process or over the wire).
func isStaleStep(err error) bool {
	var se *engine.StaleStepError
	if errors.As(err, &se) {
		return true
	}
	var coded interface{ Code() string }
	return errors.As(err, &coded) && coded.Code() == engine.StaleStepCode
}

func (r *Recorder) Claim(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	id := r.call("claim", engine.LeaseRef{}, "")
	jobs, err := r.Service.Claim(ctx, c)
	r.ret(id, err, OpRecord{Claimed: refs(jobs)})
	return jobs, err
}

func (r *Recorder) ClaimWait(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	id := r.call("claim", engine.LeaseRef{}, "")
	jobs, err := r.Service.ClaimWait(ctx, c)
	r.ret(id, err, OpRecord{Claimed: refs(jobs)})
	return jobs, err
}

func refs(jobs []engine.ClaimedJob) []engine.LeaseRef {
	out := make([]engine.LeaseRef, len(jobs))
	for i, j := range jobs {
		out[i] = engine.LeaseRef{Job: j.Job, Attempt: j.Attempt} // the op log keys leases by job and attempt, never by token
	}
	return out
}

// Heartbeat logs one operation per lease, since each is fenced on its own.
func (r *Recorder) Heartbeat(ctx context.Context, c engine.Heartbeat) (*engine.HeartbeatResult, error) {
	ids := make([]uint64, len(c.Leases))
	for i, l := range c.Leases {
		ids[i] = r.call("heartbeat", l, "")
	}
	res, err := r.Service.Heartbeat(ctx, c)
	for i, l := range c.Leases {
		e := err
		if err == nil {
			for _, rf := range res.Refused {
				if rf.Job == l.Job && rf.Attempt == l.Attempt {
					e = engine.ErrUnknownJob
					if rf.Code == engine.StaleAttemptCode {
						e = engine.ErrStaleAttempt
					}
				}
			}
		}
		r.ret(ids[i], e, OpRecord{})
	}
	return res, err
}

func (r *Recorder) Append(ctx context.Context, c engine.AppendEvents) (*engine.AppendResult, error) {
	id := r.call("append", c.LeaseRef, "")
	res, err := r.Service.Append(ctx, c)
	r.ret(id, err, OpRecord{})
	return res, err
}

func (r *Recorder) CommitStep(ctx context.Context, c engine.CommitStep) (*engine.AppendResult, error) {
	id := r.call("commit", c.LeaseRef, c.Step)
	res, err := r.Service.CommitStep(ctx, c)
	r.ret(id, err, OpRecord{})
	return res, err
}

func (r *Recorder) Wait(ctx context.Context, c engine.Wait) (*engine.WaitResult, error) {
	id := r.call("wait", c.LeaseRef, "")
	res, err := r.Service.Wait(ctx, c)
	rec := OpRecord{}
	if err == nil {
		rec.Woken = res.Woken
	}
	r.ret(id, err, rec)
	return res, err
}

func (r *Recorder) Complete(ctx context.Context, c engine.Complete) (*engine.StatusResult, error) {
	id := r.call("close", c.LeaseRef, "")
	res, err := r.Service.Complete(ctx, c)
	r.ret(id, err, OpRecord{})
	return res, err
}

func (r *Recorder) Fail(ctx context.Context, c engine.Fail) (*engine.StatusResult, error) {
	id := r.call("close", c.LeaseRef, "")
	res, err := r.Service.Fail(ctx, c)
	r.ret(id, err, OpRecord{})
	return res, err
}

func (r *Recorder) ContinueAsNew(ctx context.Context, c engine.ContinueAsNew) (*engine.CreateResult, error) {
	id := r.call("close", c.LeaseRef, "")
	res, err := r.Service.ContinueAsNew(ctx, c)
	r.ret(id, err, OpRecord{})
	return res, err
}

// Requeue by the running attempt releases the lease like a close; with
// attempt 0 (a retry of a failed job) it is not fenced and not logged.
func (r *Recorder) Requeue(ctx context.Context, c engine.Requeue) (*engine.StatusResult, error) {
	if c.Attempt == 0 {
		return r.Service.Requeue(ctx, c)
	}
	id := r.call("release", c.LeaseRef, "")
	res, err := r.Service.Requeue(ctx, c)
	r.ret(id, err, OpRecord{})
	return res, err
}
