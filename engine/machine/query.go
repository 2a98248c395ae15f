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
func ReadHistory(r *storage.Reader, id engine.JobID, afterSeq uint64, limit int) (_ []engine.Event, _ bool, err error) {
	defer markStorage(&err)
	if afterSeq == math.MaxUint64 {
		return nil, false, nil // no seq follows; afterSeq+1 would wrap to the start
	}
	var evs []engine.Event
	more := false
	start := storage.EventKey(uint64(id), afterSeq+1)
	err = r.Scan(storage.EventPrefix(uint64(id)), start, true, func(k, v []byte) (bool, error) {
		if limit > 0 && len(evs) == limit {
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

// ListJobs reads the page of jobs q asks for (its Limit set, 1 to
// MaxPage). It walks the most selective index the query names (paused,
// status, then type, then queue) and filters the rest from the records. The page
// is not nil even with an error: it holds the jobs read before it.
func ListJobs(r *storage.Reader, q engine.ListQuery) (_ *engine.ListPage, err error) {
	defer markStorage(&err)
	var prefix []byte
	switch {
	case q.Paused:
		prefix = storage.PausedPrefix
	case q.Status != engine.StatusNone:
		prefix = storage.StatusPrefix(byte(q.Status))
	case q.Type != "":
		prefix = storage.TypePrefix(q.Type)
	case q.Queue != "":
		prefix = storage.QueuePrefix(q.Queue)
	default:
		prefix = storage.JobPrefix
	}
	page := &engine.ListPage{}
	if q.After == math.MaxUint64 {
		// No id is larger, and After+1 would wrap around to the first page.
		return page, nil
	}
	start := append(append([]byte(nil), prefix...), storage.U64(uint64(q.After)+1)...)
	err = r.Scan(prefix, start, false, func(k, _ []byte) (bool, error) {
		id, err := storage.TrailingJob(k)
		if err != nil {
			return false, err
		}
		j, err := ReadJob(r, engine.JobID(id))
		if err != nil {
			return false, err
		}
		if (q.Status != engine.StatusNone && j.Status != q.Status) || (q.Type != "" && j.Type != q.Type) ||
			(q.Queue != "" && j.Queue != q.Queue) || !createdIn(&q, j) || (q.Paused && (!j.Paused() || j.Status.Terminal())) {
			return true, nil
		}
		if len(page.Jobs) == q.Limit {
			page.Next = page.Jobs[len(page.Jobs)-1].ID
			return false, nil
		}
		page.Jobs = append(page.Jobs, j)
		return true, nil
	})
	return page, err
}

// createdIn reports whether j was created in q's time range.
func createdIn(q *engine.ListQuery, j *engine.Job) bool {
	return (q.CreatedFromMS == 0 || j.CreatedMS >= q.CreatedFromMS) &&
		(q.CreatedBeforeMS == 0 || j.CreatedMS < q.CreatedBeforeMS)
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
