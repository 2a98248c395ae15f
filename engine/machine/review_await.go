package machine

import (
	"math"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// awaitingKeeps reports whether t passes q's filters.
func awaitingKeeps(q engine.AwaitingQuery, t *engine.Review) bool {
	return (q.State == engine.ReviewNone || t.State == q.State) &&
		(q.Queue == "" || t.Queue == q.Queue || reviewQueueOf(t) == q.Queue) &&
		(q.Type == "" || t.Type == q.Type || t.ReviewType == q.Type)
}

// ReadAwaitingReviews reads one page of the tasks awaiting a person; q must
// be valid, with its Limit set.
func ReadAwaitingReviews(r *storage.Reader, q engine.AwaitingQuery) (_ *engine.AwaitingPage, err error) {
	defer markStorage(&err)
	page := &engine.AwaitingPage{Reviews: []engine.Review{}}
	if q.After == math.MaxUint64 {
		return page, nil // no id is larger, and After+1 would wrap around
	}
	start := storage.ReviewAwaitKey(uint64(q.After) + 1)
	err = r.Scan(storage.ReviewAwaitPrefix, start, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		if err != nil {
			return false, err
		}
		t, err := ReadReview(r, engine.ReviewID(id))
		if err != nil {
			return false, err
		}
		if !awaitingKeeps(q, t) {
			return true, nil
		}
		if len(page.Reviews) == q.Limit {
			page.Next = page.Reviews[len(page.Reviews)-1].ID
			return false, nil
		}
		page.Reviews = append(page.Reviews, *t)
		return true, nil
	})
	return page, err
}
