package machine

import (
	"math"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// awaitingKeeps reports whether t passes q's filters.
func awaitingKeeps(q engine.AwaitingQuery, t *engine.Task) bool {
	return (q.State == engine.TaskNone || t.State == q.State) &&
		(q.Queue == "" || t.Queue == q.Queue || reviewQueueOf(t) == q.Queue) &&
		(q.Type == "" || t.Type == q.Type || t.ReviewType == q.Type)
}

// ReadAwaitingTasks reads one page of the tasks awaiting a person; q must
// be valid, with its Limit set.
func ReadAwaitingTasks(r *storage.Reader, q engine.AwaitingQuery) (_ *engine.AwaitingPage, err error) {
	defer markStorage(&err)
	page := &engine.AwaitingPage{Tasks: []engine.Task{}}
	if q.After == math.MaxUint64 {
		return page, nil // no id is larger, and After+1 would wrap around
	}
	start := storage.TaskAwaitKey(uint64(q.After) + 1)
	err = r.Scan(storage.TaskAwaitPrefix, start, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		if err != nil {
			return false, err
		}
		t, err := ReadTask(r, engine.TaskID(id))
		if err != nil {
			return false, err
		}
		if !awaitingKeeps(q, t) {
			return true, nil
		}
		if len(page.Tasks) == q.Limit {
			page.Next = page.Tasks[len(page.Tasks)-1].ID
			return false, nil
		}
		page.Tasks = append(page.Tasks, *t)
		return true, nil
	})
	return page, err
}
