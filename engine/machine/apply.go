package machine

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// Machine applies commands. It holds only the limits and the shard its
// store holds, so one Machine may be shared by the stores of one shard;
// Apply itself is a pure step function over its transaction.
type Machine struct {
	limits engine.Limits
	// shard is the shard of a sharded cluster whose store this machine
	// applies to (zero: unsharded). It decides the high bits of the job
	// and review ids it assigns and refuses what would cross shards
	// (shard.go).
	shard engine.ShardLayout
}

// NewMachine returns a Machine enforcing l (zero fields take their defaults).
func NewMachine(l engine.Limits) (*Machine, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &Machine{limits: l.WithDefaults()}, nil
}

// NewShardMachine returns a Machine enforcing l for the store of shard s of
// a sharded cluster (docs/sharding.md). Every replica of a shard must use
// the same s, since what Apply writes depends on it. The zero s is
// NewMachine's.
func NewShardMachine(l engine.Limits, s engine.ShardLayout) (*Machine, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	m, err := NewMachine(l)
	if err != nil {
		return nil, err
	}
	m.shard = s
	return m, nil
}

// Shard returns the shard the machine applies to (zero: unsharded).
func (m *Machine) Shard() engine.ShardLayout { return m.shard }

var defaultMachine = &Machine{limits: engine.Limits{}.WithDefaults()}

// Apply applies cmd with the default limits; see Machine.Apply.
func Apply(tx *storage.Tx, cmd engine.Command) (engine.Result, error) {
	return defaultMachine.Apply(tx, cmd)
}

// Apply validates cmd against the job state machine and the current attempt,
// and records it in tx: events with the next seqs, the job record, the status
// projection and every index. It reads no clock (time is cmd's NowMS, kept
// monotonic), starts no goroutine and does no I/O besides tx. On error tx
// holds no write of this command, so the caller can drop it and go on with
// the next command in the same batch.
func (m *Machine) Apply(tx *storage.Tx, cmd engine.Command) (res engine.Result, err error) {
	return m.ApplyNoting(tx, cmd, nil)
}

// ApplyNoting is Apply that also writes down in n (when not nil) what the
// command changed that the metrics count (see Notes), for a Meter to read.
// n is emptied first; it describes the command only when Apply succeeds.
func (m *Machine) ApplyNoting(tx *storage.Tx, cmd engine.Command, n *Notes) (res engine.Result, err error) {
	defer markStorage(&err)
	if n != nil {
		n.reset()
	}
	if cmd == nil {
		return nil, fmt.Errorf("%w: nil command", engine.ErrUnknownCommand)
	}
	if _, ok := engine.NewCommand(cmd.Kind()); !ok {
		return nil, fmt.Errorf("%w: kind %d", engine.ErrUnknownCommand, cmd.Kind())
	}
	if err := cmd.Check(&m.limits); err != nil {
		return nil, err
	}
	if tx.Len() != 0 {
		return nil, errors.New("engine: Apply needs a fresh Tx")
	}
	a := &applier{tx: tx, lim: &m.limits, notes: n, shard: m.shard}
	h := cmd.Head()
	if h.RequestID != "" {
		if res, found, err := a.recordedResult(cmd); found || err != nil {
			return res, err
		}
	}
	last, err := a.u64(storage.KeyLastNow)
	if err != nil {
		return nil, err
	}
	a.now = max(h.NowMS, int64(last))
	res, err = a.dispatch(cmd)
	if err == nil {
		err = a.sendScheduleEnds()
	}
	if err != nil {
		return nil, err
	}
	// A command that wrote nothing had no effect to duplicate, so its
	// request id is not used up: a retry runs afresh. This keeps an idle
	// claim's retry (or the next turn of a long poll with the same id) from
	// being answered "nothing" forever, and keeps idle polls free of writes.
	// A claim that took no job but deferred some wrote, yet has nothing a
	// retry must be given back either: its id stays unused too.
	if h.RequestID != "" && tx.Len() > 0 && !claimedNothing(res) {
		if err := a.recordResult(cmd, res); err != nil {
			return nil, err
		}
	}
	// Time is kept monotonic by remembering the latest Now that wrote
	// something; a command that wrote nothing (an empty claim or sweep)
	// leaves the store untouched, so idle polling costs no sync.
	if tx.Len() > 0 && a.now > int64(last) {
		tx.Set(storage.KeyLastNow, storage.U64(uint64(a.now)))
	}
	a.finishNotes(cmd)
	return res, nil
}

// dispatch applies cmd by its kind's entry in applyTable.
func (a *applier) dispatch(cmd engine.Command) (engine.Result, error) {
	if k := cmd.Kind(); int(k) < len(applyTable) && applyTable[k] != nil {
		return applyTable[k](a, cmd)
	}
	return nil, fmt.Errorf("%w: %T", engine.ErrUnknownCommand, cmd)
}

// claimedNothing reports whether res is a claim's result with no job.
func claimedNothing(res engine.Result) bool {
	r, ok := res.(*engine.ClaimResult)
	return ok && len(r.Jobs) == 0
}

// applier carries one command's state through Apply.
type applier struct {
	tx  *storage.Tx
	lim *engine.Limits
	now int64
	// jobs are the jobs this command loaded, by id (see load).
	jobs map[engine.JobID]*loaded
	// notes, when not nil, gets what the metrics count (notes.go).
	notes *Notes
	// shard is the Machine's (shard.go).
	shard engine.ShardLayout
	// delivery, while a Deliver applies the command its entry carries,
	// names that entry (outbox.go): the command came from another shard.
	delivery *engine.DeliveryRef
	// scheduleEnds are the runs this command closed that a schedule on
	// another shard started: their ends are sent once the command is done,
	// when the run turned out to be its chain's last (schedule_shards.go).
	scheduleEnds []engine.JobID
}

func (a *applier) u64(key []byte) (uint64, error) {
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return storage.ParseU64(b)
}

// recordedResult returns the stored result of cmd's request id, if any. A
// record of another command (another kind, or the same kind with another
// digest) refuses cmd with a RequestConflictError: answering it with the
// first command's result would tell its caller that something happened
// that did not.
func (a *applier) recordedResult(cmd engine.Command) (engine.Result, bool, error) {
	key := storage.RequestKey(cmd.Head().RequestID)
	b, err := a.tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	kind, res, digest, err := decodeRecord(b)
	if err != nil {
		return nil, false, err
	}
	conflict := &engine.RequestConflictError{RequestID: cmd.Head().RequestID, Command: cmd.Kind(), First: kind}
	if kind != cmd.Kind() {
		return nil, false, conflict
	}
	if len(digest) > 0 { // records older than the digest have none
		mine, err := requestDigest(cmd)
		if err != nil {
			return nil, false, err
		}
		if !bytes.Equal(mine, digest) {
			return nil, false, conflict
		}
	}
	return res, true, nil
}

// Request records are pruned by a sample of the commands that record one,
// not by each: a prune opens an iterator over the index by age, which
// costs more than the rest of the bookkeeping of a command, and after a
// steady hour it also steps over the tombstones of the records the last
// prunes removed. One command in requestPruneEvery prunes, up to
// requestPruneBatch records, so the prunes remove up to eight times as
// many records as the commands write, and a backlog (after a restart, or
// a burst) drains; no prune makes its command expensive.
const (
	requestPruneShift = 3 // requestPruneEvery is 1<<requestPruneShift
	requestPruneEvery = 1 << requestPruneShift
	requestPruneBatch = requestPruneEvery * 8
)

// pruneTurn reports whether the command recording requestID at nowMS
// prunes. It must be deterministic, since every replica applies the same
// commands and must keep the same records, so it draws on the command
// alone: an FNV-1a hash of its request id, mixed with its time so that a
// client choosing its ids cannot keep every command off the sample.
func pruneTurn(requestID string, nowMS int64) bool {
	h := uint64(14695981039346656037)
	for i := 0; i < len(requestID); i++ {
		h ^= uint64(requestID[i])
		h *= 1099511628211
	}
	for i := 0; i < 8; i++ {
		h ^= uint64(nowMS >> (8 * i) & 0xff)
		h *= 1099511628211
	}
	// The high bits, because FNV's low bits depend only on the low bits of
	// each byte hashed.
	return h>>(64-requestPruneShift) == 0
}

// recordResult keeps res for retries of cmd's request id and, on its
// prune turn, removes a few records older than the retention.
func (a *applier) recordResult(cmd engine.Command, res engine.Result) error {
	id := cmd.Head().RequestID
	digest, err := requestDigest(cmd)
	if err != nil {
		return err
	}
	b, err := encodeRecord(cmd.Kind(), res, digest)
	if err != nil {
		return err
	}
	a.tx.Set(storage.RequestKey(id), b)
	a.tx.Set(storage.RequestAgeKey(a.now, id), nil)
	if !pruneTurn(id, a.now) {
		return nil
	}
	cutoff := a.now - a.lim.RequestRetentionMS
	var expired [][]byte
	err = a.tx.Scan(storage.ReqAgePrefix, nil, false, func(k, _ []byte) (bool, error) {
		tk, err := storage.ParseTimeKey(k)
		if err != nil {
			return false, err
		}
		if tk.AtMS >= cutoff {
			return false, nil
		}
		expired = append(expired, k)
		return len(expired) < requestPruneBatch, nil
	})
	if err != nil {
		return err
	}
	for _, k := range expired {
		tk, _ := storage.ParseTimeKey(k)
		a.tx.Delete(k)
		a.tx.Delete(storage.RequestKey(tk.Rest))
	}
	return nil
}

// Outcome names the outcome of a command for the metrics: "ok", or the
// name of the sentinel its error matches (the HTTP API's names).
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	for _, o := range outcomeNames {
		if errors.Is(err, o.err) {
			return o.name
		}
	}
	return "other"
}

var outcomeNames = []struct {
	name string
	err  error
}{
	{"stale_attempt", engine.ErrStaleAttempt},
	// Before invalid_command, which a reused id of another kind matches
	// as well.
	{"request_conflict", engine.ErrRequestConflict},
	{"unknown_job", engine.ErrUnknownJob},
	{"illegal_transition", engine.ErrIllegalTransition},
	{"unknown_command", engine.ErrUnknownCommand},
	{"payload_too_large", engine.ErrPayloadTooLarge},
	{"invalid_command", engine.ErrInvalidCommand},
	{"workflow_exists", engine.ErrWorkflowExists},
	{"job_closed", engine.ErrJobClosed},
	{"step_committed", engine.ErrStepCommitted},
	{"step_state", engine.ErrStepState},
	{"no_resource", engine.ErrNoResource},
	{"dependency_failed", engine.ErrDependencyFailed},
	{"unknown_resource", engine.ErrUnknownResource},
	{"resource_exists", engine.ErrResourceExists},
	{"resource_busy", engine.ErrResourceBusy},
	{"unknown_activity", engine.ErrUnknownActivity},
	{"invariant", engine.ErrInvariant},
	{"corrupt", engine.ErrCorrupt},
	{"storage_read", engine.ErrStorageRead},
	// The review tasks' refusals, by the HTTP API's names: a task's create
	// delivered to another shard is refused for good with them
	// (raftfsm's deliverer takes an "other" outcome for a failure to retry).
	{"unknown_task", engine.ErrUnknownReview},
	{"task_exists", engine.ErrReviewExists},
}
