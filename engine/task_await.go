package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/heddlewf/heddle/storage"
)

// AwaitingQuery selects tasks awaiting a person (TaskState.AwaitsPerson)
// across every job. The zero value lists the first 100 of them.
type AwaitingQuery struct {
	// State keeps the tasks in that state only; TaskNone keeps every state
	// that awaits a person. Any other state is refused.
	State TaskState
	// Queue keeps the tasks whose work queue or review queue is Queue; ""
	// keeps all.
	Queue string
	// Type keeps the tasks whose work type or reviewer type is Type; ""
	// keeps all.
	Type string
	// After is the cursor: only tasks with a larger id are listed.
	After TaskID
	// Limit bounds the page (0 means 100; at most MaxPage).
	Limit int
}

// Validate reports what is wrong with q, naming the field.
func (q AwaitingQuery) Validate() error {
	if q.State != TaskNone && !q.State.AwaitsPerson() {
		return fmt.Errorf("%w: state %s does not await a person (REVIEW_REQUIRED, APPROVAL_REQUIRED or INTERVENTION_REQUIRED)", ErrInvalidCommand, q.State)
	}
	if q.Limit < 0 || q.Limit > MaxPage {
		return fmt.Errorf("%w: task list limit %d is not in [0, %d]", ErrInvalidCommand, q.Limit, MaxPage)
	}
	return nil
}

// awaitingKeeps reports whether t passes q's filters.
func awaitingKeeps(q AwaitingQuery, t *Task) bool {
	return (q.State == TaskNone || t.State == q.State) &&
		(q.Queue == "" || t.Queue == q.Queue || reviewQueueOf(t) == q.Queue) &&
		(q.Type == "" || t.Type == q.Type || t.ReviewType == q.Type)
}

// AwaitingPage is one page of ListAwaitingTasks, in task-id (creation)
// order.
type AwaitingPage struct {
	Tasks []Task `json:"tasks" msgpack:"tasks"`
	// Next is the cursor of the following page; 0 at the end.
	Next TaskID `json:"next" msgpack:"next"`
}

// ListAwaitingTasks lists the tasks of every job that await a person, in
// creation order. It walks the index of such tasks, which Apply keeps in
// the transaction of each state change, and filters state, queue and type
// from the records; so a filtered page reads at most every awaiting task,
// never the tasks that await nobody.
func (e *Engine) ListAwaitingTasks(ctx context.Context, q AwaitingQuery) (*AwaitingPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	var page *AwaitingPage
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		page, err = ReadAwaitingTasks(r, q)
		return err
	})
	return page, err
}

// ReadAwaitingTasks reads one page of the tasks awaiting a person; q must
// be valid, with its Limit set.
func ReadAwaitingTasks(r *storage.Reader, q AwaitingQuery) (*AwaitingPage, error) {
	page := &AwaitingPage{Tasks: []Task{}}
	if q.After == math.MaxUint64 {
		return page, nil // no id is larger, and After+1 would wrap around
	}
	start := storage.TaskAwaitKey(uint64(q.After) + 1)
	err := r.Scan(storage.TaskAwaitPrefix, start, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		if err != nil {
			return false, err
		}
		t, err := ReadTask(r, TaskID(id))
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
