package machine

import (
	"errors"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// HasReviews reports whether queue holds a task ready for role.
func HasReviews(r *storage.Reader, role engine.ReviewRole, queue string) (_ bool, err error) {
	defer markStorage(&err)
	prefix := storage.ReviewWorkQueuePrefix(queue)
	if role == engine.ReviewRoleReview {
		prefix = storage.ReviewReviewQueuePrefix(queue)
	}
	found := false
	err = r.Scan(prefix, nil, false, func([]byte, []byte) (bool, error) { found = true; return false, nil })
	return found, err
}

// ReadReview reads one task record.
func ReadReview(r *storage.Reader, id engine.ReviewID) (_ *engine.Review, err error) {
	defer markStorage(&err)
	key := storage.ReviewKey(uint64(id))
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownReview(engine.ReviewTarget{ID: id})
	}
	if err != nil {
		return nil, err
	}
	t := new(engine.Review)
	if _, err := storage.DecodeAt(key, b, storage.KindReview, reviewVersion, t); err != nil {
		return nil, err
	}
	return t, nil
}

// ReadReviewTarget reads the task t names.
func ReadReviewTarget(r *storage.Reader, t engine.ReviewTarget) (_ *engine.Review, err error) {
	defer markStorage(&err)
	if t.ID != 0 {
		return ReadReview(r, t.ID)
	}
	b, err := r.Get(storage.ReviewPhaseKey(t.Job, t.Phase))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownReview(t)
	}
	if err != nil {
		return nil, err
	}
	id, err := storage.ParseU64(b)
	if err != nil {
		return nil, err
	}
	return ReadReview(r, engine.ReviewID(id))
}

// ReadReviewHistory reads the whole history of task id.
func ReadReviewHistory(r *storage.Reader, id engine.ReviewID) (_ []engine.ReviewEvent, err error) {
	defer markStorage(&err)
	var out []engine.ReviewEvent
	err = r.Scan(storage.ReviewEventPrefix(uint64(id)), nil, true, func(k, b []byte) (bool, error) {
		e := new(engine.ReviewEvent)
		if _, err := storage.DecodeAt(k, b, storage.KindReviewEvent, reviewEventVersion, e); err != nil {
			return false, err
		}
		out = append(out, *e)
		return true, nil
	})
	return out, err
}

// ReadJobReviews reads the tasks of job in creation order.
func ReadJobReviews(r *storage.Reader, job string) (_ []engine.Review, err error) {
	defer markStorage(&err)
	var ids []engine.ReviewID
	err = r.Scan(storage.ReviewJobPrefix(job), nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		ids = append(ids, engine.ReviewID(id))
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]engine.Review, 0, len(ids))
	for _, id := range ids {
		t, err := ReadReview(r, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// ReadManifest reads the manifest of job, its running spans counted up to
// the latest command time applied.
func ReadManifest(r *storage.Reader, job string) (_ *engine.Manifest, err error) {
	defer markStorage(&err)
	ts, err := ReadJobReviews(r, job)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, unknownReview(engine.ReviewTarget{Job: job})
	}
	now, err := storage.ReadU64(r, storage.KeyLastNow)
	if err != nil {
		return nil, err
	}
	return engine.BuildManifest(job, ts, int64(now)), nil
}
