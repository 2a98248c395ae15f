package machine

import (
	"errors"
	"fmt"
	"math"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// ReadJob reads one job record.
func ReadJob(r *storage.Reader, id engine.JobID) (_ *engine.Job, err error) {
	defer markStorage(&err)
	key := storage.JobKey(uint64(id))
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownJob(id)
	}
	if err != nil {
		return nil, err
	}
	j := new(engine.Job)
	if _, err := storage.DecodeAt(key, b, storage.KindJob, jobVersion, j); err != nil {
		return nil, err
	}
	return j, nil
}

// ReadTarget reads the record of the job t names: by id, or the current
// run of its workflow id.
func ReadTarget(r *storage.Reader, t engine.Target) (_ *engine.Job, err error) {
	defer markStorage(&err)
	if t.Job != 0 {
		return ReadJob(r, t.Job)
	}
	if t.WorkflowID == "" {
		return nil, fmt.Errorf("%w: a target needs a Job or a WorkflowID", engine.ErrInvalidCommand)
	}
	b, err := r.Get(storage.WorkflowKey(t.WorkflowID))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: workflow id %q", engine.ErrUnknownJob, t.WorkflowID)
	}
	if err != nil {
		return nil, err
	}
	id, err := storage.ParseU64(b)
	if err != nil {
		return nil, err
	}
	return ReadJob(r, engine.JobID(id))
}

// ReadHistory reads up to limit events (limit 0: all) of job id after afterSeq,
// and whether more follow.
func ReadHistory(r *storage.Reader, id engine.JobID, afterSeq uint64, limit int) ([]engine.Event, bool, error) {
	return ReadHistoryPage(r, id, afterSeq, limit, 0)
}

// ReadHistoryPage is ReadHistory ending, too, before the event that would
// take the events' stored bytes past maxBytes (0: no bound); the first
// event is read whatever its size.
func ReadHistoryPage(r *storage.Reader, id engine.JobID, afterSeq uint64, limit, maxBytes int) (_ []engine.Event, _ bool, err error) {
	defer markStorage(&err)
	if afterSeq == math.MaxUint64 {
		return nil, false, nil // no seq follows; afterSeq+1 would wrap to the start
	}
	var evs []engine.Event
	more := false
	bytes := 0
	start := storage.EventKey(uint64(id), afterSeq+1)
	err = r.Scan(storage.EventPrefix(uint64(id)), start, true, func(k, v []byte) (bool, error) {
		bytes += len(v)
		if limit > 0 && len(evs) == limit || maxBytes > 0 && bytes > maxBytes && len(evs) > 0 {
			more = true
			return false, nil
		}
		ev := engine.Event{}
		if _, err := storage.DecodeAt(k, v, storage.KindEvent, eventVersion, &ev); err != nil {
			return false, err
		}
		evs = append(evs, ev)
		return true, nil
	})
	return evs, more, err
}

// ReadEffect reads the recorded effect of a step, or nil when there is none.
func ReadEffect(r *storage.Reader, id engine.JobID, step string) (_ *engine.Effect, err error) {
	defer markStorage(&err)
	key := storage.EffectKey(uint64(id), step)
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	eff := new(engine.Effect)
	if _, err := storage.DecodeAt(key, b, storage.KindEffect, effectVersion, eff); err != nil {
		return eff, err
	}
	return eff, nil
}

// HasReady reports whether queue holds a job ready to claim.
func HasReady(r *storage.Reader, queue string) (_ bool, err error) {
	defer markStorage(&err)
	low, err := storage.ReadU64(r, storage.LowReadyKey(queue))
	if err != nil {
		return false, err
	}
	found := false
	prefix := storage.ReadyPrefix(queue)
	err = r.Scan(prefix, append(append([]byte(nil), prefix...), storage.U64(low)...), false,
		func([]byte, []byte) (bool, error) { found = true; return false, nil })
	return found, err
}

// RecordedClaim returns the jobs a Claim under requestID took, as its
// request record keeps them, and whether there is such a record (of a
// Claim). A sharded cluster's client uses it to find what a long poll it
// cut took anyway (docs/sharding.md, "Claims"); it reads, never writes.
func RecordedClaim(r *storage.Reader, requestID string) ([]engine.ClaimedJob, bool, error) {
	if requestID == "" {
		return nil, false, nil
	}
	b, err := r.Get(storage.RequestKey(requestID))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	kind, res, _, err := decodeRecord(b)
	if err != nil {
		return nil, false, err
	}
	cr, ok := res.(*engine.ClaimResult)
	if kind != engine.KindClaim || !ok {
		return nil, false, nil
	}
	return cr.Jobs, true, nil
}
