package engine

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/heddlewf/heddle/storage"
)

// Describe returns the record of the job t names.
func (e *Engine) Describe(ctx context.Context, t Target) (*Job, error) {
	var j *Job
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		j, err = ReadTarget(r, t)
		return err
	})
	return j, err
}

// ReadJob reads one job record.
func ReadJob(r *storage.Reader, id JobID) (*Job, error) {
	key := storage.JobKey(uint64(id))
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownJob(id)
	}
	if err != nil {
		return nil, err
	}
	j := new(Job)
	if _, err := storage.DecodeAt(key, b, storage.KindJob, jobVersion, j); err != nil {
		return nil, err
	}
	return j, nil
}

// ReadTarget reads the record of the job t names: by id, or the current
// run of its workflow id.
func ReadTarget(r *storage.Reader, t Target) (*Job, error) {
	if t.Job != 0 {
		return ReadJob(r, t.Job)
	}
	if t.WorkflowID == "" {
		return nil, fmt.Errorf("%w: a target needs a Job or a WorkflowID", ErrInvalidCommand)
	}
	b, err := r.Get(storage.WorkflowKey(t.WorkflowID))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: workflow id %q", ErrUnknownJob, t.WorkflowID)
	}
	if err != nil {
		return nil, err
	}
	id, err := storage.ParseU64(b)
	if err != nil {
		return nil, err
	}
	return ReadJob(r, JobID(id))
}

// HistoryPage is one page of a job's history.
type HistoryPage struct {
	Events []Event `json:"events"`
	// Next is the seq to pass as afterSeq for the following page; 0 when
	// this page reached the end of the history.
	Next uint64 `json:"next"`
}

// MaxPage bounds the size of one History or List page.
const MaxPage = 1000

// History returns up to limit events of job id with seq > afterSeq (limit 0
// means 100; at most MaxPage). No seq is larger than the largest uint64, so
// that cursor gives an empty page.
func (e *Engine) History(ctx context.Context, id JobID, afterSeq uint64, limit int) (*HistoryPage, error) {
	if limit < 0 || limit > MaxPage {
		return nil, fmt.Errorf("%w: history limit %d is not in [0, %d]", ErrInvalidCommand, limit, MaxPage)
	}
	if limit == 0 {
		limit = 100
	}
	page := &HistoryPage{}
	err := e.view(ctx, func(r *storage.Reader) error {
		if _, err := ReadJob(r, id); err != nil {
			return err
		}
		evs, more, err := ReadHistory(r, id, afterSeq, limit)
		page.Events = evs
		if more && len(evs) > 0 {
			page.Next = evs[len(evs)-1].Seq
		}
		return err
	})
	return page, err
}

// ReadHistory reads up to limit events (limit 0: all) of job id after afterSeq,
// and whether more follow.
func ReadHistory(r *storage.Reader, id JobID, afterSeq uint64, limit int) ([]Event, bool, error) {
	if afterSeq == math.MaxUint64 {
		return nil, false, nil // no seq follows; afterSeq+1 would wrap to the start
	}
	var evs []Event
	more := false
	start := storage.EventKey(uint64(id), afterSeq+1)
	err := r.Scan(storage.EventPrefix(uint64(id)), start, true, func(k, v []byte) (bool, error) {
		if limit > 0 && len(evs) == limit {
			more = true
			return false, nil
		}
		ev := Event{}
		if _, err := storage.DecodeAt(k, v, storage.KindEvent, eventVersion, &ev); err != nil {
			return false, err
		}
		evs = append(evs, ev)
		return true, nil
	})
	return evs, more, err
}

// Effect returns the recorded effect of a step, or nil when there is none.
func (e *Engine) Effect(ctx context.Context, id JobID, step string) (*Effect, error) {
	var eff *Effect
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		eff, err = ReadEffect(r, id, step)
		return err
	})
	return eff, err
}

// ReadEffect reads the recorded effect of a step, or nil when there is none.
func ReadEffect(r *storage.Reader, id JobID, step string) (*Effect, error) {
	key := storage.EffectKey(uint64(id), step)
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	eff := new(Effect)
	if _, err := storage.DecodeAt(key, b, storage.KindEffect, effectVersion, eff); err != nil {
		return eff, err
	}
	return eff, nil
}

// ListQuery filters and pages List. Zero fields do not filter.
type ListQuery struct {
	Status Status
	Type   string
	Queue  string
	// CreatedFromMS and CreatedBeforeMS keep the jobs created in
	// [CreatedFromMS, CreatedBeforeMS), in Unix ms; 0 leaves that side open.
	CreatedFromMS   int64
	CreatedBeforeMS int64
	// After is the cursor: only jobs with a larger id are listed (none
	// when it is the largest JobID).
	After JobID
	// Limit bounds the page (0 means 100; at most MaxPage).
	Limit int
}

// ListPage is one page of List, in job-id (creation) order.
type ListPage struct {
	Jobs []*Job `json:"jobs"`
	// Next is the cursor for the following page; 0 at the end.
	Next JobID `json:"next"`
}

// List returns jobs matching q. It walks the most selective index the query
// names (status, then type, then queue) and filters the rest from the records.
func (e *Engine) List(ctx context.Context, q ListQuery) (*ListPage, error) {
	if q.Limit < 0 || q.Limit > MaxPage {
		return nil, fmt.Errorf("%w: list limit %d is not in [0, %d]", ErrInvalidCommand, q.Limit, MaxPage)
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	if q.After == math.MaxUint64 {
		// No id is larger, and After+1 would wrap around to the first page.
		return &ListPage{}, nil
	}
	page := &ListPage{}
	err := e.view(ctx, func(r *storage.Reader) error {
		p, err := ListJobs(r, q)
		*page = *p
		return err
	})
	return page, err
}

// ListJobs reads the page of jobs q asks for (its Limit set, 1 to
// MaxPage). It walks the most selective index the query names (status,
// then type, then queue) and filters the rest from the records. The page
// is not nil even with an error: it holds the jobs read before it.
func ListJobs(r *storage.Reader, q ListQuery) (*ListPage, error) {
	var prefix []byte
	switch {
	case q.Status != StatusNone:
		prefix = storage.StatusPrefix(byte(q.Status))
	case q.Type != "":
		prefix = storage.TypePrefix(q.Type)
	case q.Queue != "":
		prefix = storage.QueuePrefix(q.Queue)
	default:
		prefix = storage.JobPrefix
	}
	page := &ListPage{}
	if q.After == math.MaxUint64 {
		// No id is larger, and After+1 would wrap around to the first page.
		return page, nil
	}
	start := append(append([]byte(nil), prefix...), storage.U64(uint64(q.After)+1)...)
	err := r.Scan(prefix, start, false, func(k, _ []byte) (bool, error) {
		id, err := storage.TrailingJob(k)
		if err != nil {
			return false, err
		}
		j, err := ReadJob(r, JobID(id))
		if err != nil {
			return false, err
		}
		if (q.Status != StatusNone && j.Status != q.Status) || (q.Type != "" && j.Type != q.Type) ||
			(q.Queue != "" && j.Queue != q.Queue) || !createdIn(&q, j) {
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
func createdIn(q *ListQuery, j *Job) bool {
	return (q.CreatedFromMS == 0 || j.CreatedMS >= q.CreatedFromMS) &&
		(q.CreatedBeforeMS == 0 || j.CreatedMS < q.CreatedBeforeMS)
}
